"""ReuseOrFit's comparison (pipeline.previous.Compare), one id at a time:
what it puts out for tonight's series against last night's row."""
from __future__ import annotations

import numpy as np
from apache_beam.pvalue import TaggedOutput

from gpcore import FitConfig, FitResult, Series
from gpcore.result import SKIPPED
from pipeline.io import fingerprint, rows
from pipeline.previous import KEPT, OFFERED, REUSED, Compare

CONFIG = FitConfig(kernel="rbf")
KEY = fingerprint.options_key(CONFIG)
SERIES = Series("a", np.arange(6.0), np.array([1.0, 2.0, 1.5, 3.0, 2.0, 2.5]))
OLD = FitResult("a", "ok", "rbf", 6, mean=2.0, amplitude=0.8, length_scale=1.5,
                noise_variance=0.1, components=[{"kernel": "rbf", "amplitude": 0.8,
                                                 "length_scale": 1.5, "period": None}])


def _compare(old_row, tonight=(SERIES,)):
    found = list(Compare(CONFIG, "rbf", KEY).process(
        ("a", {"series": list(tonight), "previous": [old_row] if old_row else []})))
    main = [x for x in found if not isinstance(x, TaggedOutput)]
    tagged = {}
    for x in found:
        if isinstance(x, TaggedOutput):
            tagged.setdefault(x.tag, []).append(x.value)
    return main, tagged


def test_an_unchanged_series_reuses_its_row():
    old = rows.of_fit(OLD, fingerprint.of_points(KEY, SERIES.t, SERIES.y))
    main, tagged = _compare(old)
    assert main == [] and tagged[REUSED] == [dict(old, reused=True)]
    (series, row), = tagged[KEPT]
    assert row["reused"] is True and np.array_equal(series.y, SERIES.y)


def test_a_changed_series_is_fitted_from_the_old_parameters_with_its_fingerprint():
    old = rows.of_fit(OLD, "0" * 64)
    (series,), tagged = _compare(old)
    # Hashed once, here: its row takes the fingerprint it carries.
    assert isinstance(series, fingerprint.Fingerprinted)
    assert series.fingerprint == fingerprint.of_points(KEY, SERIES.t, SERIES.y)
    assert series.warm_start == rows.parameters(old) and tagged[OFFERED] == [1]
    assert series.warm_start["components"][0]["length_scale"] == 1.5


def test_a_row_whose_parameters_give_no_model_is_fitted_cold():
    old = dict(rows.of_fit(OLD, "0" * 64), amplitude=float("nan"))
    (series,), tagged = _compare(old)
    assert series.warm_start is None and OFFERED not in tagged


def test_a_new_series_passes_as_it_is():
    (series,), tagged = _compare(None)
    assert series is SERIES and tagged == {}


def test_an_unchanged_row_without_a_value_the_output_requires_is_fitted_warm():
    old = dict(rows.of_fit(OLD, fingerprint.of_points(KEY, SERIES.t, SERIES.y)),
               iterations=None)
    (series,), tagged = _compare(old)
    assert REUSED not in tagged and series.warm_start == rows.parameters(old)


def test_an_unchanged_row_whose_parameters_give_no_model_is_fitted_cold():
    # Copied, it stayed "ok" night after night and was never forecast.
    old = dict(rows.of_fit(OLD, fingerprint.of_points(KEY, SERIES.t, SERIES.y)),
               amplitude=float("nan"))
    (series,), tagged = _compare(old)
    assert tagged == {} and series.warm_start is None


def test_an_unchanged_sum_without_its_components_is_fitted():
    # A shard rewritten by a tool that drops nested columns: a sum's
    # parameters are its components.
    config = FitConfig(kernel="rbf+periodic")
    key = fingerprint.options_key(config)
    old = {**rows.of_fit(OLD, fingerprint.of_points(key, SERIES.t, SERIES.y)),
           "kernel": "rbf+periodic", "amplitude": None, "length_scale": None,
           "components": None}
    found = list(Compare(config, "rbf+periodic", key).process(
        ("a", {"series": [SERIES], "previous": [old]})))
    assert [type(x).__name__ for x in found] == ["Fingerprinted"]


def test_an_unchanged_skipped_series_reuses_its_row_and_is_not_forecast():
    skipped = FitResult("a", SKIPPED, "rbf", 2, error="too few finite points: 2 (of 2)")
    old = rows.of_fit(skipped, fingerprint.of_points(KEY, SERIES.t, SERIES.y))
    main, tagged = _compare(old)
    assert main == [] and tagged[REUSED] == [dict(old, reused=True)] and KEPT not in tagged


def test_a_reused_row_says_it_was_not_warm_started_tonight():
    old = dict(rows.of_fit(OLD, fingerprint.of_points(KEY, SERIES.t, SERIES.y)),
               warm_started=True)
    _, tagged = _compare(old)
    assert tagged[REUSED][0]["reused"] is True and tagged[REUSED][0]["warm_started"] is False


def test_a_series_gone_from_tonights_input_gives_nothing():
    old = rows.of_fit(OLD, fingerprint.of_points(KEY, SERIES.t, SERIES.y))
    assert _compare(old, tonight=()) == ([], {})


def test_a_previous_shard_with_a_damaged_page_is_named_and_its_series_are_fitted(tmp_path):
    # The launcher read its footer; a data page is damaged: ReadShard says
    # which shard and why (UNREADABLE), and gives no row, so its series are
    # fitted, not reused.
    import pyarrow.parquet as pq
    from apache_beam.io.filesystem import FileMetadata

    from pipeline.io import conversion
    from pipeline.previous import UNREADABLE, ReadShard

    good, bad = str(tmp_path / "good.parquet"), str(tmp_path / "bad.parquet")
    for path in (good, bad):
        pq.write_table(conversion.output_table([rows.of_fit(OLD, "0" * 64)]), path)
    offset = pq.ParquetFile(bad).metadata.row_group(0).column(0).data_page_offset
    with open(bad, "r+b") as f:
        f.seek(offset)
        f.write(b"\xff" * 16)
    read = ReadShard()
    (found,) = list(read.process(FileMetadata(good, 0)))
    assert found[0] == "a" and found[1]["status"] == "ok" and found[1]["fingerprint"] == "0" * 64
    (said,) = list(read.process(FileMetadata(bad, 0)))
    assert isinstance(said, TaggedOutput) and said.tag == UNREADABLE
    assert said.value[0] == bad and said.value[1]
