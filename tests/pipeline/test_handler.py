"""The fitting step's handler (pipeline.handler.FitterHandler) against the
real fitter: what it builds and fits is gpcore's."""
from __future__ import annotations

import numpy as np

import gpcore
from pipeline import runtime
from pipeline.handler import Counters, FitterHandler


def _series(k: int, n: int) -> gpcore.Series:
    t = np.linspace(0.0, 10.0, n)
    return gpcore.Series(f"s{k}", t, np.sin(t / (1.0 + 0.3 * k)) + 0.05 * np.cos(5.0 * t))


def test_the_handler_fits_as_gpcores_fitter_does_and_counts_its_work():
    config = gpcore.FitConfig(kernel="rbf", batch_size=4)
    handler = FitterHandler(config, 1)
    batch = [_series(k, 20 + 5 * k) for k in range(3)]
    fitter = handler.load_fitter()
    before = handler.counters(fitter)
    results = handler.fit(fitter, batch)
    after = handler.counters(fitter)
    # gpcore's own fitter, built apart with as many copies side by side (the
    # process's thread setting: the batch is split the same way), on the
    # same batch: the same fit (a fixed start grid, no random restarts).
    reference = gpcore.build_fitter(config, runtime.configure_tf_threads(1)).fit(batch)
    assert [r.to_row() for r in results] == [r.to_row() for r in reference]
    assert all(r.status == "ok" for r in results)
    # One trace, kept by a second call; the work is the fitter's own counts.
    assert after.tracing_count == 1
    ((kernel, series, newton, grid),) = handler.work_done(before, after)
    assert (kernel, series) == ("rbf", 3) and newton > 0 and grid > 0
    handler.fit(fitter, batch[:1])
    assert handler.counters(fitter).tracing_count == 1


def test_under_auto_the_work_is_counted_per_candidate():
    config = gpcore.FitConfig(kernel="auto", candidates=("rbf", "matern52"))
    nothing = Counters({}, 0)
    assert FitterHandler(config).work_done(nothing, nothing) == (
        ("rbf", 0, 0, 0), ("matern52", 0, 0, 0))


def test_under_auto_each_candidate_counts_the_series_it_fitted():
    """The manifest's work_per_kernel: the periodic candidate fits only the
    series its screen passes, so its series (and Newton evaluations per
    series) count those, not every series of the call."""
    config = gpcore.FitConfig(kernel="auto")
    handler = FitterHandler(config, 1)
    rng = np.random.default_rng(4)
    walk = gpcore.Series("walk", np.arange(80.0), np.cumsum(rng.standard_normal(80)))
    cycle = gpcore.Series("cycle", np.arange(80.0), np.sin(np.arange(80.0)) + 0.1 * rng.standard_normal(80))
    short = gpcore.Series("short", np.arange(2.0), np.arange(2.0))  # skipped: too few points
    fitter = handler.load_fitter()
    before = handler.counters(fitter)
    results = handler.fit(fitter, [walk, cycle, short])
    assert [r.status for r in results] == ["ok", "ok", "skipped"]
    done = {kernel: series for kernel, series, _, _ in
            handler.work_done(before, handler.counters(fitter))}
    assert done == {"matern52": 2, "matern12": 2, "matern52+periodic": 1}
