"""Data for the DataFrame API's tests: the end-to-end tests' series as one
long table (timestamps in ms, a null id), and the Beam job's rows for it.

The job's rows are the reference: the same series fitted by the real
pipeline on the local runner from Parquet files.
"""
from __future__ import annotations

import glob
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline_data import gpfit, make_series, write_long

# Fits of the same series by the same compiled graph, batched differently
# (the job cuts calls by cost, fit_frame fits one call): a series' fit does
# not depend on its batch companions (docs/design.md, "Fitters side by
# side"), so only round-off differs. Newton's float32 Hessian products
# (6e-8 relative) scale its last step, at most 2 log units: 2.3e-8
# relative measured on a flat likelihood, 1e-6 leaves room.
RTOL = 1e-6
FLOATS = ("mean", "amplitude", "length_scale", "period", "noise_variance", "nll", "bic",
          "bic_margin")


def long_table(folder: str) -> pa.Table:
    """Writes the series as Parquet (timestamps, shuffled, a null id) into
    folder; returns the same rows as one table."""
    write_long(folder, make_series(n_series=10), time_type=pa.timestamp("ms"))
    return pa.concat_tables(pq.read_table(f) for f in sorted(glob.glob(f"{folder}/*.parquet")))


def job_rows(input_folder: str, output: str) -> list[dict]:
    """The Beam job's output rows for the input folder, sorted by id."""
    run = gpfit(input_folder, output, "--kernel", "rbf")
    assert run.code == 0, run.stderr
    return run.rows()


def assert_same_rows(got: list[dict], want: list[dict]) -> None:
    """Equal rows: strings, ints, bools and fingerprints exactly, floats (also
    inside components) to RTOL."""
    assert [r["series_id"] for r in got] == [r["series_id"] for r in want]
    for a, b in zip(got, want):
        assert set(a) == set(b)
        for name in a:
            if name in FLOATS:
                _close(a[name], b[name], (a["series_id"], name))
            elif name == "components":
                assert (a[name] is None) == (b[name] is None), a["series_id"]
                for ca, cb in zip(a[name] or [], b[name] or []):
                    assert ca["kernel"] == cb["kernel"]
                    for field in ("amplitude", "length_scale", "period"):
                        _close(ca[field], cb[field], (a["series_id"], field))
            else:
                assert a[name] == b[name], (a["series_id"], name, a[name], b[name])


def _close(a, b, where) -> None:
    if a is None or b is None:
        assert a is b, where
    elif math.isnan(a) or math.isnan(b):
        assert math.isnan(a) and math.isnan(b), where
    else:
        assert np.isclose(a, b, rtol=RTOL, atol=0.0), (where, a, b)


def rows_of(table_or_frame) -> list[dict]:
    """Rows of a fit_frame result (Arrow or pandas), as dicts."""
    table = (table_or_frame if isinstance(table_or_frame, pa.Table)
             else pa.Table.from_pandas(table_or_frame, preserve_index=False))
    return table.to_pylist()


def in_folder(tmp_path, name: str) -> str:
    return os.path.join(str(tmp_path), name)
