"""Reading only the sampled series from long and nested Parquet input."""
import datetime

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.inputs import Columns, inspect
from pipeline.report.data import id_filter, read_series


def test_long_format_across_files_sorted_with_missing_values(tmp_path):
    pq.write_table(pa.table({"id": ["a", "b", "a", "c"], "time": [3.0, 1.0, 1.0, 0.0],
                             "v": [30.0, 10.0, None, 0.0]}), tmp_path / "p0.parquet")
    pq.write_table(pa.table({"id": ["a", "c"], "time": [2.0, 5.0], "v": [20.0, 5.0]}),
                   tmp_path / "p1.parquet")
    spec = inspect(str(tmp_path), Columns("id", "time", "v"))
    found = read_series(spec, ["a", "zzz"])
    assert list(found) == ["a"]
    np.testing.assert_array_equal(found["a"].t, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(found["a"].y, [np.nan, 20.0, 30.0])
    assert read_series(spec, []) == {}


def test_integer_ids_match_as_gpfit_writes_them(tmp_path):
    pq.write_table(pa.table({"series_id": pa.array([7, 7, 8, 70], pa.int32()),
                             "t": [0.0, 1.0, 0.0, 0.0], "y": [1.0, 2.0, 3.0, 4.0]}),
                   tmp_path / "p.parquet")
    spec = inspect(str(tmp_path), Columns())
    assert set(read_series(spec, ["7", "007", "x", "70"])) == {"7", "70"}
    assert set(read_series(spec, ["99999999999", "8"])) == {"8"}  # beyond int32: as strings


def test_nested_dates_become_days_since_epoch(tmp_path):
    day = datetime.date(2024, 1, 1)
    epoch_days = (day - datetime.date(1970, 1, 1)).days
    pq.write_table(pa.table({
        "series_id": ["a", "b", "bad"],
        "t": pa.array([[day, day + datetime.timedelta(2)], [day], [day, day]],
                      pa.list_(pa.date32())),
        "y": pa.array([[1.0, None], [5.0], [1.0]], pa.list_(pa.float64())),
    }), tmp_path / "n.parquet")
    spec = inspect(str(tmp_path / "n.parquet"), Columns())
    assert spec.layout == "nested" and spec.time_units == "days"
    found = read_series(spec, ["a", "bad"])
    assert list(found) == ["a"]  # "bad" has 2 times but 1 value: no pairs to draw
    np.testing.assert_array_equal(found["a"].t, [epoch_days, epoch_days + 2])
    np.testing.assert_array_equal(found["a"].y, [1.0, np.nan])


def test_int96_timestamps_before_1677_keep_their_dates(tmp_path):
    # Spark's legacy INT96 timestamps, which Arrow reads as nanoseconds and
    # wrapped outside 1677-2262: the plotted times are the job's, the dates
    # written (days by hand).
    years = (np.arange(1600, 1700, 10) - 1970).astype("datetime64[Y]").astype("datetime64[us]")
    pq.write_table(pa.table({"series_id": ["old"] * years.size, "t": pa.array(years),
                             "y": np.arange(years.size, dtype=np.float64)}),
                   tmp_path / "p.parquet", use_deprecated_int96_timestamps=True)
    found = read_series(inspect(str(tmp_path), Columns()), ["old"])
    np.testing.assert_array_equal(found["old"].t, years.astype(np.int64) / 86_400e6)


def test_filter_uses_the_column_type_and_falls_back_to_strings():
    assert "cast" not in str(id_filter("id", pa.string(), ["a"]))
    assert "cast" not in str(id_filter("id", pa.int64(), ["1", "x"]))
    assert "cast" in str(id_filter("id", pa.float64(), ["1.5"]))
    table = pa.table({"id": [1.5, 2.0]})
    import pyarrow.dataset as ds
    kept = ds.dataset(table).to_table(filter=id_filter("id", pa.float64(), ["1.5"]))
    assert kept.column("id").to_pylist() == [1.5]


def test_bytes_ids_that_are_not_utf8_are_read_as_gpfit_names_them(tmp_path):
    """gpfit names a bytes id that is not UTF-8 with \\xNN escapes (README,
    Input formats); the report cast the whole id column to string to find
    it, and died on a traceback (ArrowInvalid: Invalid UTF8 payload) for
    any series of such a file."""
    ids = [b"a\xff", b"plain", "\u00e9".encode(), b"a\xff"]
    pq.write_table(pa.table({"series_id": pa.array(ids, pa.binary()),
                             "t": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0, 4.0]}),
                   tmp_path / "b.parquet")
    spec = inspect(str(tmp_path), Columns())
    found = read_series(spec, ["a\\xff", "plain", "\u00e9"])
    assert list(found) == ["a\\xff", "plain", "\u00e9"]
    np.testing.assert_array_equal(found["a\\xff"].t, [0.0, 3.0])
    for ids in (pa.array([b"ab\xffcd", b"plain"], pa.large_binary()),
                pa.array([b"ab\xffcd", b"plain"], pa.binary(5)),
                pa.array([b"ab\xffcd", b"plain"]).dictionary_encode()):
        pq.write_table(pa.table({"series_id": ids, "t": [0.0, 1.0], "y": [1.0, 2.0]}),
                       tmp_path / "b.parquet")
        assert list(read_series(inspect(str(tmp_path), Columns()), ["ab\\xffcd"])) == \
            ["ab\\xffcd"], ids.type


def test_uuid_ids_are_read_as_gpfit_names_them(tmp_path):
    """Arrow's UUID type, as DuckDB writes it, is named by its canonical
    text (columns.as_str); a cast of the column to string fails (Invalid
    UTF8 payload)."""
    import uuid
    ids = [uuid.UUID(int=7), uuid.UUID(int=8), None, uuid.UUID(int=7)]
    pq.write_table(pa.table({"series_id": pa.array([i and i.bytes for i in ids], pa.uuid()),
                             "t": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0, 4.0]}),
                   tmp_path / "u.parquet")
    found = read_series(inspect(str(tmp_path), Columns()), [str(ids[0]), "x"])
    assert list(found) == [str(ids[0])]
    np.testing.assert_array_equal(found[str(ids[0])].t, [0.0, 3.0])


def test_view_ids_are_read_as_plain_ids(tmp_path):
    """Arrow keeps string_view and binary_view through Parquet (polars'
    to_arrow(compat_level=newest), written with pyarrow), which gpfit fits;
    the report died on a traceback ("Function 'array_filter' has no kernel
    matching input types (string_view, bool)") for any series of such a
    file."""
    t, y = [0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]
    for ids in (pa.array(["a", "b", None, "a"], pa.string_view()),
                pa.array([b"a", b"b\xff", None, b"a"], pa.binary_view())):
        pq.write_table(pa.table({"series_id": ids, "t": t, "y": y}), tmp_path / "v.parquet")
        assert pq.read_schema(tmp_path / "v.parquet").field("series_id").type == ids.type
        found = read_series(inspect(str(tmp_path), Columns()), ["a", "b", "b\\xff"])
        assert sorted(found) == sorted({"a", "b"} if ids.type == pa.string_view()
                                       else {"a", "b\\xff"}), ids.type
        np.testing.assert_array_equal(found["a"].t, [0.0, 3.0])
        np.testing.assert_array_equal(found["a"].y, [1.0, 4.0])


def test_a_file_whose_id_column_is_encrypted_is_named_not_waited_on(tmp_path):
    """Parquet modular encryption with a plaintext footer: the footer reads,
    the encrypted columns do not. Arrow's filter on an encrypted id column
    (its statistics) waited forever: the report hung at 0% CPU (10 minutes
    seen) where gpfit names the file unreadable (exit 3). The file is now
    read unfiltered, and refused naming it. A child process, so that the
    old hang fails the test instead of stalling it."""
    import os
    import subprocess
    import sys
    import textwrap

    from gpfit_runs import write_encrypted

    table = pa.table({"series_id": ["a", "a"], "t": [0.0, 1.0], "y": [1.0, 2.0]})
    pq.write_table(table, tmp_path / "good.parquet")
    sealed = tmp_path / "sealed.parquet"
    write_encrypted(sealed, table.set_column(0, "series_id", pa.array(["b", "b"])),
                    ["series_id"], plaintext_footer=True)
    write_encrypted(tmp_path / "other.parquet",
                    table.set_column(0, "series_id", pa.array(["c", "c"])).append_column(
                        "customer", pa.array(["x", "x"])), ["customer"], plaintext_footer=True)
    script = textwrap.dedent(f"""
        from pipeline.io.errors import UsageError
        from pipeline.io.inputs import Columns, inspect
        from pipeline.report.data import read_series
        spec = inspect({str(tmp_path)!r}, Columns())
        try:
            read_series(spec, ["a", "b"])
        except UsageError as err:
            print(err)
        print(sorted(read_series(inspect({str(tmp_path / "good.parquet")!r}, Columns()),
                                 ["a"])))
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    said, found = done.stdout.strip().splitlines()
    assert said == (f"{sealed} holds columns encrypted with Parquet modular encryption (Cannot "
                    "decrypt ColumnMetadata. FileDecryption is not setup correctly), which the "
                    "report cannot decrypt: write it without encryption, or leave it out of "
                    "--input"), said
    assert found == "['a']"
