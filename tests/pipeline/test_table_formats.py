"""Table-format folders as input (docs/design.md, "Contracts"): Delta Lake,
Iceberg, Hudi and Spark's streaming sink keep replaced parts on disk and
say in their logs which are current. Read as a folder, every version's
rows were fitted at once; such input is refused (exit 2), naming the
format, and ordinary folders with Spark's and Dask's files are not."""
from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest
from apache_beam.io.filesystem import FileMetadata
from apache_beam.io.localfilesystem import LocalFileSystem

from pipeline.io import matching
from pipeline.io.errors import InputError
from pipeline_data import gpfit
from table_folders import N_POINTS, delta_table, hudi_table, iceberg_table, spark_stream_sink, \
    version
from test_pipeline_cli_errors import assert_usage_error

DELTA_ADVICE = ("which gpfit does not read: its Parquet files are every version's, the replaced "
                "ones beside the current")


def delta_folder(tmp):
    # Read as a folder: series 'a' of 60 points, the overwritten version's
    # 30 beside the current 30, fitted as one (mean 5.0 where it is 10).
    return str(delta_table(tmp / "sales")), (
        f"{tmp / 'sales'} is a Delta Lake table (_delta_log/), {DELTA_ADVICE}")


def delta_folder_with_slash(tmp):
    return str(delta_table(tmp / "sales")) + "/", f"{tmp / 'sales'} is a Delta Lake table"


def glob_into_delta(tmp):
    return str(delta_table(tmp / "sales") / "*.parquet"), \
        f"{tmp / 'sales'} is a Delta Lake table"


def glob_reaching_a_delta_table_in_a_folder(tmp):
    os.makedirs(tmp / "tables")
    delta_table(tmp / "tables" / "sales")
    return str(tmp / "tables" / "**" / "*.parquet"), \
        f"{tmp / 'tables' / 'sales'} is a Delta Lake table"


def delta_partition_folder(tmp):
    delta_table(tmp / "sales", under="region=eu")
    return str(tmp / "sales" / "region=eu"), f"{tmp / 'sales'} is a Delta Lake table"


def iceberg_data_folder(tmp):
    iceberg_table(tmp / "ice")
    return str(tmp / "ice" / "data"), f"{tmp / 'ice'} is an Apache Iceberg table (metadata/)"


def a_link_to_a_delta_partition(tmp):
    # The link's folders above are not the table's: read, 60 points.
    delta_table(tmp / "sales", under="region=eu")
    os.symlink(tmp / "sales" / "region=eu", tmp / "eu")
    return str(tmp / "eu"), f"{tmp / 'sales'} is a Delta Lake table"


def iceberg_root(tmp):
    # Its files are in data/: "holds no data files; ... give a glob such as
    # 'ice/**/*.parquet'", which read every snapshot's files.
    return str(iceberg_table(tmp / "ice")), f"{tmp / 'ice'} is an Apache Iceberg table"


def hudi_root(tmp):
    return str(hudi_table(tmp / "hudi")) + "/", f"{tmp / 'hudi'} is an Apache Hudi table"


def glob_into_iceberg(tmp):
    iceberg_table(tmp / "ice")
    return str(tmp / "ice" / "**" / "*.parquet"), f"{tmp / 'ice'} is an Apache Iceberg table"


def hudi_glob(tmp):
    hudi_table(tmp / "hudi")
    return str(tmp / "hudi" / "*" / "*.parquet"), f"{tmp / 'hudi'} is an Apache Hudi table (.hoodie/)"


def spark_stream(tmp):
    return str(spark_stream_sink(tmp / "stream")), \
        f"{tmp / 'stream'} is a Spark Structured Streaming output (_spark_metadata/)"


@pytest.mark.parametrize("make_input", [
    delta_folder, delta_folder_with_slash, glob_into_delta,
    glob_reaching_a_delta_table_in_a_folder, delta_partition_folder,
    a_link_to_a_delta_partition, iceberg_data_folder,
    iceberg_root, glob_into_iceberg, hudi_root, hudi_glob, spark_stream,
])
def test_a_table_format_folder_is_refused(tmp_path, make_input):
    input_, expected = make_input(tmp_path)
    run = gpfit(input_, str(tmp_path / "out"))
    assert_usage_error(run, expected)
    assert "write it as plain Parquet" in run.stderr


def test_a_delta_tables_current_file_named_alone_is_read(tmp_path):
    """A file named explicitly is the user's choice, read once."""
    from table_folders import NEW
    table = delta_table(tmp_path / "sales")
    run = gpfit(str(table / NEW), str(tmp_path / "out"), "--kernel", "rbf")
    assert run.code == 0, run.stderr
    assert [row["n_points"] for row in run.rows()] == [N_POINTS]


def test_an_ordinary_folder_with_spark_and_dask_files_is_read(tmp_path):
    """_SUCCESS, .crc files, a _metadata summary and Hive folders are no
    table format: each point is read once."""
    data = tmp_path / "data" / "region=eu"
    data.mkdir(parents=True)
    collector = []
    pq.write_table(version(0.0), data / "part-0.parquet", metadata_collector=collector)
    collector[-1].set_file_path("part-0.parquet")
    pq.write_metadata(version(0.0).schema, data / "_metadata", metadata_collector=collector)
    (data / "_SUCCESS").write_text("")
    (data / ".part-0.parquet.crc").write_bytes(b"crc")
    (tmp_path / "data" / "metadata").mkdir()  # a folder of that name alone is no Iceberg table
    for input_ in (str(data), str(tmp_path / "data" / "**" / "*.parquet")):
        run = gpfit(input_, str(tmp_path / "out"), "--kernel", "rbf")
        assert run.code == 0, run.stderr
        assert [row["n_points"] for row in run.rows()] == [N_POINTS]


class _ObjectStore(LocalFileSystem):
    """An object store as Beam's file systems see one ('teststore://'),
    its objects the files below ROOT: the launcher's listings of gs://."""

    ROOT = ""

    @classmethod
    def scheme(cls):
        return "teststore"

    def _local(self, path: str) -> str:
        return path.replace("teststore://", self.ROOT + "/", 1)

    def exists(self, path):
        return super().exists(self._local(path))

    def match(self, patterns, limits=None):
        results = super().match([self._local(p) for p in patterns], limits)
        for result in results:
            result.metadata_list = [
                FileMetadata(m.path.replace(self.ROOT + "/", "teststore://", 1), m.size_in_bytes)
                for m in result.metadata_list if os.path.isfile(m.path)]  # objects only
        return results


@pytest.mark.parametrize("pattern", ["teststore://bucket/sales/",
                                     "teststore://bucket/sales/region=eu/*.parquet",
                                     "teststore://bucket/**/*.parquet"])
def test_a_table_on_an_object_store_is_refused(tmp_path, monkeypatch, pattern):
    monkeypatch.setattr(_ObjectStore, "ROOT", str(tmp_path))
    delta_table(tmp_path / "bucket" / "sales", under="region=eu")
    with pytest.raises(InputError, match="teststore://bucket/sales is a Delta Lake table"):
        matching.resolve(pattern)
    plain = tmp_path / "bucket" / "plain"
    plain.mkdir()
    pq.write_table(version(0.0), plain / "part-0.parquet")
    assert matching.resolve("teststore://bucket/plain/") == [
        ("teststore://bucket/plain/part-0.parquet", os.path.getsize(plain / "part-0.parquet"))]
