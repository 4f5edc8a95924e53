"""gpfit.fit_frame inside the engines users run it in, with their recipes
(docs/design.md, "DataFrame API"): a real dask.distributed LocalCluster of
2 worker processes, and pyspark's local mode with applyInPandas.

The task functions here are pickled by value, as Dask and Spark pickle a
function defined in a notebook or in `__main__`: the fitter cache must live
in an importable module (pipeline/fitters.py) to survive that.
"""
from __future__ import annotations

import os
import shutil
import sys

import cloudpickle
import pyarrow as pa
import pytest

import gpfit
from frame_data import assert_same_rows, in_folder, job_rows, long_table, rows_of


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("engines")
    table = long_table(in_folder(folder, "series"))
    return table, job_rows(in_folder(folder, "series"), in_folder(folder, "out"))


@pytest.fixture
def by_value():
    """This module's functions pickled by value, as a notebook's are (by
    cloudpickle, and by the copy pyspark ships)."""
    module = sys.modules[__name__]
    picklers = [cloudpickle]
    try:
        from pyspark import cloudpickle as spark_cloudpickle
        picklers.append(spark_cloudpickle)
    except ImportError:
        pass
    for pickler in picklers:
        pickler.register_pickle_by_value(module)
    yield
    for pickler in picklers:
        pickler.unregister_pickle_by_value(module)


def fit_partition(part):
    """The recipe's task: one partition, every series of it whole."""
    import gpfit as api  # on the worker
    return api.fit_frame(part)


def test_a_dask_local_cluster_of_two_processes_fits_as_the_job_with_one_fitter_each(
        data, by_value):
    distributed = pytest.importorskip("distributed")
    dd = pytest.importorskip("dask.dataframe")
    from pipeline import fitters

    table, want = data
    frame = table.to_pandas().dropna(subset=["series_id"])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        # The recipe: whole series per partition (a shuffle on the id), then
        # fit_frame per partition; meta is the output schema, with no fit.
        ddf = dd.from_pandas(frame, npartitions=4).shuffle(on="series_id")
        got = ddf.map_partitions(fit_partition, meta=gpfit.fit_frame(frame.head(0))).compute()
        # Then each worker process gets calls of its own (pinned), so that
        # "one fitter per process" is seen on both whichever ran the above.
        workers = sorted(client.scheduler_info()["workers"])
        assert len(workers) == 2
        halves = [frame[frame["series_id"] < "s05"], frame[frame["series_id"] >= "s05"]]
        pinned = [client.submit(fit_partition, half, workers=[w], allow_other_workers=False,
                                pure=False)
                  for w in workers for half in halves]
        pinned_rows = [rows_of(f.result()) for f in pinned]
        counts = client.run(fitters.counts)
    assert_same_rows(sorted(rows_of(got), key=lambda r: r["series_id"]), want)
    for rows in (pinned_rows[0] + pinned_rows[1], pinned_rows[2] + pinned_rows[3]):
        assert_same_rows(sorted(rows, key=lambda r: r["series_id"]), want)
    assert sorted(counts) == workers
    for worker, count in counts.items():
        assert count["built"] == 1, (worker, count)
        assert count["calls"] >= 2, (worker, count)


def test_dasks_to_parquet_writes_the_results_with_gpfits_schema(data, tmp_path):
    """Dask infers each file's schema from a partition unless given one, and
    could not infer the components' lists of structs beside nulls
    (ArrowInvalid); with gpfit.output_schema() the files read back as the
    job's rows."""
    dd = pytest.importorskip("dask.dataframe")
    import dask
    import pyarrow.dataset as ds

    table, want = data
    frame = table.to_pandas().dropna(subset=["series_id"])
    ddf = dd.from_pandas(frame, npartitions=1).shuffle(on="series_id", npartitions=3)
    got = ddf.map_partitions(gpfit.fit_frame, meta=gpfit.fit_frame(frame.head(0)))
    with dask.config.set(scheduler="synchronous"):
        got.to_parquet(str(tmp_path / "params"), schema=gpfit.output_schema(),
                       write_index=False)
    written = ds.dataset(str(tmp_path / "params"), format="parquet").to_table()
    assert written.schema.remove_metadata().equals(gpfit.output_schema().remove_metadata())
    assert_same_rows(sorted(rows_of(written), key=lambda r: r["series_id"]), want)


def _java() -> str | None:
    return shutil.which("java") or (os.path.exists("/usr/bin/java") and "/usr/bin/java") or None


def test_spark_apply_in_pandas_fits_as_the_job(data, by_value, monkeypatch):
    pyspark = pytest.importorskip(
        "pyspark", reason="pyspark is not installed: the Spark recipe is not run here")
    if _java() is None:
        pytest.skip("no Java runtime: pyspark's local mode cannot start here")
    from pyspark.sql import SparkSession

    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # this venv's, not python3's

    table, want = data
    frame = table.to_pandas().dropna(subset=["series_id"])
    # Spark keeps timestamps in microseconds: days from them would round
    # differently from the job's (from milliseconds). As days, t is the
    # job's to the bit (pipeline/io/columns.py: float(ms) * (1 / 86_400_000)).
    ms = frame["t"].astype("datetime64[ms]").astype("int64").astype("float64")
    frame["t"] = ms * (1 / 86_400_000)
    spark = (SparkSession.builder.master("local[2]").appName("gpfit-test")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
             .getOrCreate())
    try:
        sdf = spark.createDataFrame(frame)
        got = (sdf.groupBy("series_id").applyInPandas(fit_partition, gpfit.spark_schema())
               .toPandas())
    finally:
        spark.stop()
    assert pyspark.__version__
    rows = rows_of(pa.Table.from_pandas(got, preserve_index=False))
    assert_same_rows(sorted(rows, key=lambda r: r["series_id"]), want)
