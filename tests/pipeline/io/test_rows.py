"""The output row (pipeline.io.rows): made from a fit, read back into the
parameters a warm start and a forecast use, through a real Parquet file."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from gpcore import FitResult
from gpcore.predict import checked_params
from pipeline.io import conversion, rows, shards
from pipeline.io.schema import HOLDOUT_COLUMNS, OUTPUT_COLUMNS

RBF = FitResult("a", "ok", "rbf", 30, mean=1.5, amplitude=2.0, length_scale=3.0,
                noise_variance=0.25, nll=12.0, bic=30.0, converged=True,
                stop_reason="converged", iterations=9,
                components=[{"kernel": "rbf", "amplitude": 2.0, "length_scale": 3.0,
                             "period": None}])
SUM = FitResult("b", "ok", "rbf+periodic", 40, mean=-1.0, noise_variance=0.5, nll=3.0,
                components=[{"kernel": "rbf", "amplitude": 1.0, "length_scale": 20.0,
                             "period": None},
                            {"kernel": "periodic", "amplitude": 0.5, "length_scale": 0.8,
                             "period": 7.0}])
SKIPPED = FitResult("c", "skipped", "rbf", 2, error="too few finite points: 2")


def _read_back(tmp_path, found):
    path = str(tmp_path / "part-00000-of-00001.parquet")
    pq.write_table(conversion.output_table(found), path)
    return {row["series_id"]: row for row in shards.read_rows(path)}


def test_a_fit_becomes_a_row_of_every_column_in_order():
    row = rows.of_fit(RBF, "f" * 64)
    assert list(row) == list(OUTPUT_COLUMNS)
    assert {k: row[k] for k in RBF.to_row()} == RBF.to_row()
    assert (row["reused"], row["fingerprint"]) == (False, "f" * 64)
    assert all(row[name] is None for name in HOLDOUT_COLUMNS)


def test_a_row_read_back_gives_the_fits_own_parameters(tmp_path):
    back = _read_back(tmp_path, [rows.of_fit(r, None) for r in (RBF, SUM, SKIPPED)])
    # The reference: gpcore's reading of the FitResult itself, not of a row.
    for result in (RBF, SUM):
        assert rows.parameters(back[result.series_id]) == checked_params(result)
    assert rows.parameters(back["a"])["components"][0]["length_scale"] == 3.0
    with pytest.raises(ValueError, match="status 'skipped'"):
        rows.parameters(back["c"])


def test_a_row_whose_parameters_give_no_model_is_refused(tmp_path):
    bad = rows.of_fit(RBF, None)
    bad.update(amplitude=-1.0, components=None)
    with pytest.raises(ValueError, match="amplitude"):
        rows.parameters(bad)
    nan = dict(rows.of_fit(SUM, None), noise_variance=float(np.nan))
    with pytest.raises(ValueError, match="noise_variance"):
        rows.parameters(nan)
