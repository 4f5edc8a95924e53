"""Ids of Arrow's UUID type (Parquet's UUID, as DuckDB and pyarrow write
it) over two nights on the local runner: written as the canonical
36-character text, joined with the same ids given as text, and reused by
the next night's --previous_output (docs/design.md, "Contracts")."""
from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline_data import RUN_OPTIONS, gpfit, make_series

# One id per series, fixed: str(uuid.UUID) is the canonical lowercase text.
IDS = {f"s{i:02d}": uuid.UUID(int=(0x6F1C0A5E << 96) + 0xABCDEF * (i + 1)) for i in range(4)}


def _rows(series: dict) -> tuple[list[uuid.UUID], np.ndarray, np.ndarray]:
    ids = [IDS[sid] for sid, (t, _) in series.items() for _ in t]
    return (ids, np.concatenate([t for t, _ in series.values()]),
            np.concatenate([y for _, y in series.values()]))


def _write_with_duckdb(path, series: dict) -> None:
    """As DuckDB writes its UUID type: Parquet's UUID logical type."""
    import duckdb
    ids, t, y = _rows(series)
    rows = pa.table({"k": [str(i) for i in ids], "t": t, "y": y})  # noqa: F841 (DuckDB reads it)
    duckdb.connect().execute(
        f"COPY (SELECT k::UUID AS series_id, t, y FROM rows) TO '{path}' (FORMAT parquet)")


def _write_with_arrow(path, series: dict, as_text: bool = False) -> None:
    ids, t, y = _rows(series)
    column = (pa.array([str(i) for i in ids]) if as_text
              else pa.array([i.bytes for i in ids], pa.uuid()))
    pq.write_table(pa.table({"series_id": column, "t": t, "y": y}), path, row_group_size=40)


def test_two_nights_of_uuid_ids_are_written_as_text_and_reused(tmp_path):
    series = {sid: s for sid, s in make_series(seed=4, n_series=4).items() if sid in IDS}
    (tmp_path / "night1").mkdir()
    _write_with_duckdb(tmp_path / "night1" / "part-0.parquet", series)
    assert pq.read_schema(tmp_path / "night1" / "part-0.parquet").field(
        "series_id").type == pa.uuid()
    first = gpfit(str(tmp_path / "night1"), str(tmp_path / "out1"), *RUN_OPTIONS)
    assert first.code == 0, first.stderr
    text = sorted(str(i) for i in IDS.values())
    assert [r["series_id"] for r in first.rows()] == text
    assert all(len(r["series_id"]) == 36 and r["status"] == "ok" for r in first.rows())

    # Night 2: s02 changed; s01 and s03 read from a file of UUIDs, s00 and
    # s02 from one of their text, which names the same series.
    second = {k: (t.copy(), y.copy()) for k, (t, y) in series.items()}
    second["s02"][1][3] += 0.5
    (tmp_path / "night2").mkdir()
    _write_with_arrow(tmp_path / "night2" / "a.parquet",
                      {k: second[k] for k in ("s01", "s03")})
    _write_with_arrow(tmp_path / "night2" / "b.parquet",
                      {k: second[k] for k in ("s00", "s02")}, as_text=True)
    # One point of s03 in the text file: the two types join into one series.
    t, y = second["s03"]
    pq.write_table(pa.table({"series_id": [str(IDS["s03"])], "t": [t[-1] + 1.0], "y": [y[-1]]}),
                   tmp_path / "night2" / "c.parquet")
    second["s03"] = (np.append(t, t[-1] + 1.0), np.append(y, y[-1]))
    nightly = gpfit(str(tmp_path / "night2"), str(tmp_path / "out2"), *RUN_OPTIONS,
                    "--previous_output", first.output)
    assert nightly.code == 0, nightly.stderr
    rows = {r["series_id"]: r for r in nightly.rows()}
    assert [r["series_id"] for r in nightly.rows()] == text  # each once
    reused = {sid for sid in IDS if rows[str(IDS[sid])]["reused"]}
    assert reused == {"s00", "s01"}
    assert rows[str(IDS["s03"])]["n_points"] == np.isfinite(second["s03"][1]).sum()
    before = {r["series_id"]: r for r in first.rows()}
    for sid in ("s00", "s01"):
        key = str(IDS[sid])
        assert dict(rows[key], reused=None) == dict(before[key], reused=None), sid
    assert nightly.manifest["reuse"]["reused"] == 2


def test_fit_frame_takes_pandas_uuid_objects():
    """pandas' uuid.UUID objects become arrow.uuid in Arrow; fit_frame
    refused them as the command refused Parquet's UUID."""
    import pandas as pd

    from pipeline.frame import fit_frame
    series = {sid: s for sid, s in make_series(seed=4, n_series=2).items() if sid in IDS}
    ids, t, y = _rows(series)
    result = fit_frame(pd.DataFrame({"series_id": ids, "t": t, "y": y}), kernel="rbf")
    assert sorted(result["series_id"]) == sorted(str(IDS[sid]) for sid in series)
    assert set(result["status"]) == {"ok"}
