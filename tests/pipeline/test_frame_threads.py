"""gpfit.fit_frame called from several threads of one process at once, as
Dask's threaded scheduler, Spark's and Ray's worker threads and a user's
ThreadPoolExecutor call it (docs/design.md, "DataFrame API" and "Threads
sharing a process"): each call's rows are those of the same call made
alone, bit for bit; one fitter per configuration, traced once.

Barriers start the calls together; every join has a timeout, so a deadlock
fails the test instead of hanging the run."""
from __future__ import annotations

import pandas as pd
import pytest

import gpfit
from frame_data import assert_same_rows, rows_of
from pipeline import fitters
from pipeline.frame import fit_config
from pipeline_data import make_series
from thread_calls import at_once

JOIN_S = 180.0  # a fit_frame call on a busy machine: a deadlock fails here


def frame_of(seed: int, count: int) -> pd.DataFrame:
    """A long pandas frame of `count` smooth series and one too short."""
    rows = [(sid, t, y) for sid, (ts, ys) in make_series(seed, count).items()
            for t, y in zip(ts, ys)]
    return pd.DataFrame(rows, columns=["series_id", "t", "y"])




def test_six_threads_fitting_at_once_get_the_rows_of_each_call_alone_from_one_fitter():
    """Four frames, one of them given to three threads: the calls share the
    process's one fitter for their options (built once, by whichever
    thread came first, traced once) and take turns with it."""
    options = dict(kernel="matern32", min_points=4)  # a configuration of this test's own
    frames = [frame_of(seed, 3) for seed in range(4)]
    given = frames + [frames[0], frames[0]]
    before = fitters.counts()
    together = at_once([lambda f=f: gpfit.fit_frame(f, **options) for f in given], JOIN_S)
    after = fitters.counts()
    assert after["built"] - before["built"] <= 1  # 0 if an earlier test built it
    assert after["calls"] - before["calls"] == len(given)
    assert fitters.cached(fit_config(**options)).fitter.tracing_count == 1
    for frame, got in zip(given, together):
        pd.testing.assert_frame_equal(got, gpfit.fit_frame(frame, **options), check_exact=True)


def test_threads_with_different_options_fit_at_once_each_as_alone():
    """Each configuration its own fitter, fitting at the same time as the
    others; kernel auto's screen keeps its verdicts for all of them."""
    calls = [(frame_of(0, 3), dict(kernel="rbf")), (frame_of(1, 3), dict(kernel="matern12")),
             (frame_of(2, 2), dict(kernel="auto")), (frame_of(2, 2), dict(kernel="auto")),
             (frame_of(3, 3), dict(kernel="rbf", restarts=2))]
    together = at_once([lambda f=f, o=o: gpfit.fit_frame(f, **o) for f, o in calls], JOIN_S)
    for (frame, options), got in zip(calls, together):
        pd.testing.assert_frame_equal(got, gpfit.fit_frame(frame, **options), check_exact=True)


def test_dasks_threaded_scheduler_runs_the_recipe_as_the_synchronous_one():
    """The recipe under scheduler="threads" (Dask's default for a frame
    without a distributed Client): the partitions' tasks call fit_frame on
    threads at once, and give the synchronous scheduler's rows bit for bit,
    and one call's on the whole frame to round-off (batched differently)."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    pdf = frame_of(5, 12)
    whole = rows_of(gpfit.fit_frame(pdf))
    meta = gpfit.fit_frame(pdf.head(0))
    ddf = dd.from_pandas(pdf, npartitions=4).shuffle(on="series_id", npartitions=4)
    recipes = {
        "partitions": ddf.map_partitions(gpfit.fit_frame, meta=meta),
        "groups": ddf.groupby("series_id")[["series_id", "t", "y"]].apply(gpfit.fit_frame,
                                                                           meta=meta),
    }
    for name, params in recipes.items():
        got = {}
        for scheduler in ("threads", "synchronous"):
            with dask.config.set(scheduler=scheduler, num_workers=4):
                frame = params.compute().reset_index(drop=True)
            got[scheduler] = frame.sort_values("series_id", ignore_index=True)
        pd.testing.assert_frame_equal(got["threads"], got["synchronous"], check_exact=True,
                                      obj=name)
        assert_same_rows(rows_of(got["threads"]), whole)
