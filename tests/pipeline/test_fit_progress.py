"""Progress lines and per-kernel work from a real run of the fitting DoFn
(pipeline.transforms.FitDoFn on gpfit's local runner, real fitters)."""
from __future__ import annotations

import logging

import apache_beam as beam
import numpy as np
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pvalue import AsSingleton
from apache_beam.testing.util import assert_that

import gpcore
from gpcore.batching import Batching
from pipeline.handler import FitterHandler
from pipeline.runtime import local_runner
from pipeline.transforms import FIT_STATS, BatchByLength, FitDoFn


class StepClock:
    """A clock that moves `step` seconds at every reading (picklable: the
    DoFn travels to the runner's worker with it)."""

    def __init__(self, step: float):
        self.step, self.now = step, 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _series(k: int, n: int = 30) -> gpcore.Series:
    t = np.arange(float(n))
    return gpcore.Series(f"s{k}", t, np.sin(t / (3.0 + k)) + 0.1 * np.cos(7.0 * t))


def test_a_real_run_says_done_of_total_rate_and_eta_per_call_and_counts_work(caplog):
    caplog.set_level(logging.INFO, logger="pipeline.transforms")
    config = gpcore.FitConfig(kernel="rbf", batch_size=4)
    # Every series a fit call of its own; the clock moves 10 s per reading:
    # start_call, the call's start and end, add: each call's line is due.
    # The heartbeat thread would read the clock too: it waits an hour here
    # (tests/pipeline/test_progress.py drives it).
    fit = FitDoFn(FitterHandler(config, 1), 1, clock=StepClock(10.0), progress_every_s=30.0,
                  heartbeat_s=3600.0)
    options = PipelineOptions([])
    with beam.Pipeline(runner=local_runner(options), options=options) as pipeline:
        series = pipeline | beam.Create([_series(k) for k in range(3)])
        total = series | "Count" >> beam.combiners.Count.Globally()
        out = (series | beam.ParDo(BatchByLength(Batching(config, 1e-9)))
               | beam.ParDo(fit, total=AsSingleton(total)).with_outputs(FIT_STATS, main="rows"))
        assert_that(out[FIT_STATS], _work_per_call(Batching(config).cost(30)))
    lines = [r.getMessage() for r in caplog.records if "gpfit progress" in r.getMessage()]
    assert [line.split(" series fitted")[0] for line in lines] == [
        f"gpfit progress: {k}/3" for k in (1, 2, 3)], lines
    assert all(" series/s, ETA " in line for line in lines)
    assert lines[-1].split("ETA ")[1].startswith("0 s")


def _work_per_call(estimate: float):
    """Each call's FitStats carries its work per kernel and its estimate."""
    def check(stats):
        assert len(stats) == 3, stats
        for s in stats:
            ((kernel, n, newton, grid),) = s.work
            assert (kernel, n) == ("rbf", 1) and newton > 0 and grid > 0, s
            assert s.estimated_seconds == round(estimate, 3), s
    return check
