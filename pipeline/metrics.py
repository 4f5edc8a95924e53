"""Beam metrics of a gpfit run: their names, and the fitter's figures as data.

The metrics are for watching a run (Dataflow's job page, a local run's
result). The manifest is not built from them: the job combines its counts
from the rows it writes (pipeline/manifest_step.py), and FitStats carries
the fitter's figures there as ordinary pipeline elements. Counters share the
manifest's count names: SERIES_READ, NULL_IDS, and one per status
(gpcore.result's OK, SKIPPED, FAILED).
"""
from __future__ import annotations

from typing import NamedTuple

from apache_beam.metrics.metric import Metrics

from pipeline.io.manifest import NULL_IDS, SERIES_READ  # noqa: F401  (metric names)

NAMESPACE = "gpfit"

FITTERS_BUILT = "fitters_built"    # GPFitter instances built (one per process)
FIT_MS = "fit_ms_per_series"       # distribution: wall ms per series in a batch
TRACING_COUNT = "tracing_count"    # distribution and gauge: fitter traces
REUSED = "reused"                  # rows copied from the previous output
WARM_STARTS_OFFERED = "warm_starts_offered"  # series given the previous parameters
PREDICTED = "predicted"            # series whose predictions were written
NOT_PREDICTED = "not_predicted"    # ok series whose posterior could not be computed


class FitStats(NamedTuple):
    """One fit call, as the fitting DoFn saw it (what its metrics record)."""

    series: int            # series in the call
    ms_per_series: int     # wall ms of the call / series
    tracing_count: int     # the fitter's traces after the call
    # The id of the fitter that made the call (one per build in a worker
    # process): the manifest counts the distinct ids, so a build is counted
    # once whichever attempt of a retried bundle commits (a "first call"
    # flag was lost with a failed first attempt).
    fitter: str
    call_seconds: float = 0.0  # wall seconds of the call
    estimated_seconds: float = 0.0  # gpcore.batching's estimate of the call (core-seconds)
    # ((kernel, series, newton_evaluations, grid_evaluations), ...): the
    # call's work per fitted kernel (each candidate's under "auto"); a tuple,
    # not a dict, so that the element stays a plain picklable record.
    work: tuple = ()
    # Whether the fitter compiled during the call (traced its fit function,
    # or loaded a kept trace and ran it first): seconds that no estimate
    # holds (docs/design.md, "Cost per kernel").
    compiled: bool = False


def counter(name: str):
    return Metrics.counter(NAMESPACE, name)


def distribution(name: str):
    return Metrics.distribution(NAMESPACE, name)


def gauge(name: str):
    return Metrics.gauge(NAMESPACE, name)
