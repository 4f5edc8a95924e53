"""pipeline.reading: series gathered across files and row groups, rows
that cannot make a series skipped with the reason, and the cap on a series'
rows."""
from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from pipeline import metrics
from pipeline.io import columns, conversion, inputs
from pipeline.io.inputs import Columns
from pipeline.reading import GatherChunks, ReadSeries
from pipeline.runtime import local_runner


def _run(build):
    """Runs a small pipeline on gpfit's local runner; returns its result."""
    options = PipelineOptions([])
    pipeline = beam.Pipeline(runner=local_runner(options), options=options)
    build(pipeline)
    result = pipeline.run()
    result.wait_until_finish()
    return result


def test_read_series_gathers_each_series_across_files(tmp_path):
    # Series "a" is split over two files and out of order; one id is null.
    pq.write_table(pa.table({"id": ["a", "b", None], "time": [3.0, 1.0, 1.0],
                             "v": [30.0, 10.0, 0.0]}), tmp_path / "1.parquet")
    pq.write_table(pa.table({"id": ["a", "a"], "time": [1.0, 2.0], "v": [np.nan, 20.0]}),
                   tmp_path / "2.parquet")
    spec = inputs.inspect(str(tmp_path), Columns("id", "time", "v"))

    def build(p):
        series = p | ReadSeries(spec, "rbf", max_rows=100)
        assert_that(series.series | beam.Map(lambda s: (s.series_id, s.t.tolist(),
                                                        np.nan_to_num(s.y, nan=-1).tolist())),
                    equal_to([("a", [1.0, 2.0, 3.0], [-1.0, 20.0, 30.0]),
                              ("b", [1.0], [10.0])]))
        assert_that(series.unfittable, equal_to([]), label="NoneUnfittable")

    result = _run(build)
    found = result.metrics().query(MetricsFilter().with_name(metrics.NULL_IDS))["counters"]
    assert sum(c.committed for c in found) == 1


def test_nested_row_with_mismatched_lists_is_skipped_with_reason(tmp_path):
    pq.write_table(pa.table({"id": ["ok", "bad"], "t": [[1.0, 2.0], [1.0, 2.0, 3.0]],
                             "y": [[1.0, 2.0], [1.0]]}), tmp_path / "n.parquet")

    def build(p):
        spec = inputs.inspect(str(tmp_path / "n.parquet"), Columns("id", "t", "y"))
        series = p | ReadSeries(spec, "rbf", max_rows=100)
        assert_that(series.series | beam.Map(lambda s: s.series_id), equal_to(["ok"]))
        assert_that(series.unfittable | beam.Map(lambda r: (r["series_id"], r["status"],
                                                             r["error"])),
                    equal_to([("bad", "skipped", "a row of this series has 3 times but 1 values; "
                                        "give its 't' and 'y' lists equal length")]),
                    label="Unfittable")

    _run(build)


def test_a_series_with_two_bad_rows_gives_one_reason_whatever_the_files_order(tmp_path):
    # "bad" has a row of unequal lists in each of two files. The files'
    # names set the order in which its rows arrive: its skipped row (reason,
    # and so fingerprint) was the reason of whichever came first.
    bad_rows = [([1.0, 2.0, 3.0], [1.0]), ([4.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0])]
    for first, second in (("a", "b"), ("b", "a")):
        folder = tmp_path / first
        folder.mkdir()
        for name, (t, y) in zip((first, second), bad_rows):
            pq.write_table(pa.table({"id": ["bad"], "t": [t], "y": [y]}),
                           folder / f"{name}.parquet")
        spec = inputs.inspect(str(folder), Columns("id", "t", "y"))

        def build(p, spec=spec):
            series = p | ReadSeries(spec, "rbf", max_rows=100)
            assert_that(series.unfittable | beam.Map(lambda r: r["error"]),
                        equal_to(["a row of this series has 2 times but 5 values; give its "
                                  "'t' and 'y' lists equal length"]))

        _run(build)


def test_a_nested_series_beyond_max_rows_counts_its_points(tmp_path):
    # One nested row of 12 points: the cap counts list elements, and the
    # reason says points, not rows.
    pq.write_table(pa.table({"id": ["big", "small"], "t": [list(np.arange(12.0)), [1.0, 2.0]],
                             "y": [list(np.ones(12)), [1.0, 2.0]]}), tmp_path / "n.parquet")

    def build(p):
        spec = inputs.inspect(str(tmp_path / "n.parquet"), Columns("id", "t", "y"))
        series = p | ReadSeries(spec, "rbf", max_rows=10)
        assert_that(series.series | beam.Map(lambda s: s.series_id), equal_to(["small"]))
        assert_that(series.unfittable | beam.Map(lambda r: r["error"].split(";")[0]),
                    equal_to(["12 input points (missing ones included) is more than "
                              "--max_rows=10"]), label="Skipped")

    _run(build)


def test_a_series_beyond_max_rows_is_skipped_unassembled(tmp_path):
    # "big" spans three row groups and two files; its rows pass the cap of 10
    # (NaN rows count: the cap is on rows, before cleaning).
    pq.write_table(pa.table({"series_id": ["big"] * 8 + ["small"] * 3,
                             "t": np.arange(11.0), "y": np.r_[np.full(8, np.nan), 1, 2, 3]}),
                   tmp_path / "a.parquet", row_group_size=4)
    pq.write_table(pa.table({"series_id": ["big"] * 4, "t": np.arange(4.0), "y": np.ones(4)}),
                   tmp_path / "b.parquet")
    spec = inputs.inspect(str(tmp_path), Columns())

    def build(p):
        series = p | ReadSeries(spec, "rbf", max_rows=10)
        assert_that(series.series | beam.Map(lambda s: (s.series_id, len(s.y))),
                    equal_to([("small", 3)]))
        assert_that(series.unfittable | beam.Map(lambda r: (r["series_id"], r["status"],
                                                             r["n_points"], r["error"])),
                    equal_to([("big", "skipped", 0, "12 input points (missing ones included) is "
                               "more than --max_rows=10; "
                               "the series was not assembled: aggregate or split it, or raise "
                               "--max_rows")]), label="Skipped")

    _run(build)


def test_a_time_column_of_nulls_alone_agrees_with_any_kind_of_time(tmp_path):
    # A file whose t is all null has Arrow's null type (pandas writes an
    # all-None column so): it holds no kind of time, so it agrees with the
    # dates of the others, whichever file is first; its series has no points.
    pq.write_table(pa.table({"series_id": ["empty"] * 2, "t": pa.nulls(2), "y": [1.0, 2.0]}),
                   tmp_path / "0.parquet")
    days = pa.array([19_000, 19_001, 19_003], pa.int32()).cast(pa.date32())
    pq.write_table(pa.table({"series_id": ["a"] * 3, "t": days, "y": [1.0, 2.0, 4.0]}),
                   tmp_path / "1.parquet")
    spec = inputs.inspect(str(tmp_path), Columns())
    assert (spec.layout, spec.time_units) == (inputs.LONG, inputs.DAYS)

    def build(p):
        series = p | ReadSeries(spec, "rbf", max_rows=100)
        assert_that(series.series | beam.Map(lambda s: (s.series_id,
                                                         np.nan_to_num(s.t, nan=-1).tolist())),
                    equal_to([("a", [19_000.0, 19_001.0, 19_003.0]), ("empty", [-1.0, -1.0])]))
        assert_that(series.unreadable, equal_to([]), label="NoneUnreadable")

    _run(build)


def test_legacy_int96_timestamps_outside_nanoseconds_range_keep_their_dates(tmp_path):
    # Spark writes timestamps as INT96 by default; Arrow reads them as
    # nanoseconds, which hold only 1677-2262, and wrapped the rest silently
    # (1610 read as 2194). A yearly series from 1600, in the long layout and
    # in the nested one: its days are those of the dates written (numpy, by
    # hand). A series inside the range reads as it did, as nanoseconds.
    years = (np.arange(1600, 1760) - 1970).astype("datetime64[Y]").astype("datetime64[us]")
    hours = np.datetime64("2024-03-30T12:00:00.123456") + np.arange(6) * np.timedelta64(1, "h")
    int96 = {"use_deprecated_int96_timestamps": True}
    pq.write_table(pa.table({"series_id": ["old"] * years.size + ["now"] * hours.size,
                             "t": pa.array(np.concatenate([years, hours]), pa.timestamp("us")),
                             "y": np.arange(years.size + hours.size, dtype=np.float64)}),
                   tmp_path / "long.parquet", **int96)
    pq.write_table(pa.table({"series_id": ["nested"], "t": pa.array([years[::10]]),
                             "y": [np.arange(16.0)]}), tmp_path / "nested.parquet", **int96)
    assert pq.ParquetFile(tmp_path / "long.parquet").schema.column(1).physical_type == "INT96"
    now_as_ns = pq.read_table(tmp_path / "long.parquet").column("t").slice(years.size)
    assert now_as_ns.type == pa.timestamp("ns")
    want = {"long": [("old", (years.astype(np.int64) / 86_400e6).tolist()),
                     ("now", columns.as_float(now_as_ns).tolist())],
            "nested": [("nested", (years[::10].astype(np.int64) / 86_400e6).tolist())]}
    for name, expected in want.items():
        spec = inputs.inspect(str(tmp_path / f"{name}.parquet"), Columns())

        def build(p, spec=spec, expected=expected):
            series = p | ReadSeries(spec, "rbf", max_rows=1000)
            assert_that(series.series | beam.Map(lambda s: (s.series_id, s.t.tolist())),
                        equal_to(expected))

        _run(build)


def test_an_id_column_of_nulls_alone_is_rows_with_a_null_id(tmp_path):
    # pandas writes an all-None id column as Arrow's null type: its rows
    # have a null id, counted and not fitted, as in any other file; the
    # run was refused (exit 2), or, outside the launcher's sample of
    # footers, the file was "unreadable" (exit 3).
    pq.write_table(pa.table({"series_id": pa.nulls(4), "t": np.arange(4.0), "y": np.ones(4)}),
                   tmp_path / "0.parquet")
    pq.write_table(pa.table({"series_id": ["a"] * 3, "t": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 4.0]}),
                   tmp_path / "1.parquet")
    spec = inputs.inspect(str(tmp_path), Columns())

    def build(p):
        series = p | ReadSeries(spec, "rbf", max_rows=100)
        assert_that(series.series | beam.Map(lambda s: (s.series_id, s.t.tolist())),
                    equal_to([("a", [1.0, 2.0, 3.0])]))
        assert_that(series.null_ids | beam.CombineGlobally(sum), equal_to([4]), label="NullIds")
        assert_that(series.unreadable, equal_to([]), label="NoneUnreadable")

    _run(build)


@pytest.mark.parametrize("id_type, layout", [(pa.string_view(), "long"),
                                              (pa.binary_view(), "long"),
                                              (pa.string_view(), "nested")])
def test_view_ids_with_a_null_read_as_plain_ids_do(tmp_path, id_type, layout):
    # Arrow keeps string_view (polars' to_arrow(compat_level=newest), written
    # with pyarrow) through Parquet, and has no kernel to filter it: a null
    # id failed the whole job ("Function 'array_take' has no kernel
    # matching input types (string_view, uint16)", exit 3).
    ids = ["b", None, "a", "b", "a", None]
    t, y = [3.0, 9.0, 1.0, 1.0, 2.0, 9.0], [30.0, 0.0, 10.0, 10.0, 20.0, 0.0]
    if layout == "nested":
        ids, t, y = ids[:3], [t[:2], t[2:4], t[4:]], [y[:2], y[2:4], y[4:]]
    values = [None if i is None else (i.encode() if id_type == pa.binary_view() else i)
              for i in ids]
    found = {}
    for name, type_ in (("plain", pa.string()), ("view", id_type)):
        folder = tmp_path / name
        folder.mkdir()
        pq.write_table(pa.table({"series_id": pa.array(values, type_), "t": t, "y": y}),
                       folder / "p.parquet")
        assert pq.read_schema(folder / "p.parquet").field("series_id").type == type_
        spec = inputs.inspect(str(folder), Columns())
        table = pa.concat_tables(inputs.read_row_groups(str(folder / "p.parquet"), range(1),
                                                        Columns())[0])
        null_ids, chunks = conversion.split(table, Columns())
        found[name] = (spec.layout, null_ids,
                       [(i, c[0].tolist(), c[1].tolist()) for i, c in chunks])
    assert found["view"] == found["plain"]
    assert found["view"][1] == ids.count(None) and len(found["view"][2]) >= 2


@pytest.mark.parametrize("layout", ["long", "nested"])
def test_nan_float_ids_are_counted_with_the_null_ids(tmp_path, layout):
    # Polars and Spark write a missing float id as NaN, not null: its rows
    # were one series "nan", where pandas' writer makes them null ids.
    ids = [1.0, float("nan"), 2.0, None, float("nan"), 1.0]
    t, y = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0], [10.0, 0.0, 20.0, 0.0, 0.0, 11.0]
    if layout == "nested":
        ids, t, y = ids[:3], [t[:2], t[2:4], t[4:]], [y[:2], y[2:4], y[4:]]
    pq.write_table(pa.table({"series_id": pa.array(ids, pa.float64(), from_pandas=False),
                             "t": t, "y": y}), tmp_path / "p.parquet")
    table = pa.concat_tables(inputs.read_row_groups(str(tmp_path / "p.parquet"), range(1),
                                                    Columns())[0])
    assert pc.is_nan(table.column("series_id")).to_pylist().count(True) >= 1
    null_ids, chunks = conversion.split(table, Columns())
    found = {i: c[0].tolist() for i, c in chunks}
    if layout == "long":
        assert (null_ids, found) == (3, {"1": [1.0, 2.0], "2": [1.0]})
    else:
        assert (null_ids, found) == (1, {"1": [1.0, 1.0], "2": [2.0, 2.0]})


def test_a_file_of_no_rows_agrees_with_any_kind_of_time_and_layout(tmp_path):
    # An export's empty part written with another schema (pandas' empty
    # frame of datetime64 t, a nested empty file) beside files of numbers:
    # it holds no time, yet the run was refused ("holds plain numbers in
    # ... but dates or timestamps in ...; give one kind of time"). Named
    # first or last, the run fits the others as they fit alone.
    from pipeline_data import RUN_OPTIONS, gpfit

    t = np.arange(30.0)
    good = pa.table({"series_id": ["a"] * 30 + ["b"] * 30, "t": np.tile(t, 2),
                     "y": np.concatenate([np.sin(t / 4), np.cos(t / 5)])})
    (tmp_path / "alone").mkdir()
    pq.write_table(good, tmp_path / "alone" / "m.parquet")
    alone = gpfit(str(tmp_path / "alone"), str(tmp_path / "out_alone"), *RUN_OPTIONS)
    assert alone.code == 0, alone.stderr
    empties = {"dates": pa.table({"series_id": pa.array([], pa.large_string()),
                                  "t": pa.array([], pa.timestamp("ns")),
                                  "y": pa.array([], pa.float64())}),
               "nested": pa.table({"series_id": pa.array([], pa.string()),
                                   "t": pa.array([], pa.list_(pa.float64())),
                                   "y": pa.array([], pa.list_(pa.float64()))})}
    for kind, empty in empties.items():
        for name in ("a_empty", "z_empty"):
            folder = tmp_path / f"{kind}_{name}"
            folder.mkdir()
            pq.write_table(good, folder / "m.parquet")
            pq.write_table(empty, folder / f"{name}.parquet")
            run = gpfit(str(folder), str(tmp_path / f"out_{kind}_{name}"), *RUN_OPTIONS)
            assert run.code == 0, (kind, name, run.stderr)
            assert run.rows() == alone.rows(), (kind, name)


def test_a_series_of_exactly_max_rows_rows_is_read(tmp_path):
    # The cap is "more than --max_rows": 10 rows in one row group, and 10
    # over two files (6 + 4), are series at max_rows=10.
    pq.write_table(pa.table({"series_id": ["whole"] * 10 + ["split"] * 6,
                             "t": np.r_[np.arange(10.0), np.arange(6.0)],
                             "y": np.r_[np.arange(10.0), np.arange(6.0)]}),
                   tmp_path / "a.parquet")
    pq.write_table(pa.table({"series_id": ["split"] * 4, "t": np.arange(6.0, 10.0),
                             "y": np.arange(6.0, 10.0)}), tmp_path / "b.parquet")
    spec = inputs.inspect(str(tmp_path), Columns())

    def build(p):
        series = p | ReadSeries(spec, "rbf", max_rows=10)
        assert_that(series.series | beam.Map(lambda s: (s.series_id, s.t.tolist(),
                                                        s.y.tolist())),
                    equal_to([(sid, list(np.arange(10.0)), list(np.arange(10.0)))
                              for sid in ("whole", "split")]))
        assert_that(series.unfittable, equal_to([]), label="NoneUnfittable")
        # (1, rows) per file read: the manifest's count of input rows.
        assert_that(series.files, equal_to([(1, 16), (1, 4)]), label="Files")

    _run(build)


def test_accumulators_merged_across_bundles_add_their_rows_against_the_cap():
    # Beam merges per-bundle accumulators (on Dataflow, across workers); a
    # small local run gathers one id in one bundle, so GatherChunks is
    # driven here as the runner drives it.
    gather = GatherChunks(max_rows=10)

    def acc(t):
        return gather.add_input(gather.create_accumulator(), (t, t * 10.0, None))

    six, four = acc(np.arange(6.0)), acc(np.arange(6.0, 10.0))
    rows, chunks, problem = gather.merge_accumulators([six, four])
    assert (rows, problem) == (10, None)
    np.testing.assert_array_equal(np.concatenate([c[0] for c in chunks]), np.arange(10.0))
    assert gather.merge_accumulators([six, acc(np.arange(6.0, 12.0))])[:2] == (12, None)
    assert gather.merge_accumulators([six, acc(np.arange(5.0))])[:2] == (11, None)


def test_merged_chunks_sort_repeated_times_by_value_in_any_order_of_arrival():
    # Chunks arrive in the order files, row groups and workers give them;
    # a series' points must not: repeated times are ordered by value.
    a = (np.array([1.0, 0.0]), np.array([5.0, 0.0]), None)
    b = (np.array([1.0, 2.0]), np.array([3.0, 2.0]), None)
    for chunks in ([a, b], [b, a]):
        series = conversion.merge("x", chunks)
        assert series.t.tolist() == [0.0, 1.0, 1.0, 2.0]
        assert series.y.tolist() == [0.0, 3.0, 5.0, 2.0]
