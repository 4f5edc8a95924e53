"""Beam metrics of a gpfit run: their names, and the fitter's figures as data.

The metrics are for watching a run (Dataflow's job page, a local run's
result). The manifest is not built from them: the job combines its counts
from the rows it writes (pipeline/manifest.py), and FitStats carries the
fitter's figures there as ordinary pipeline elements.
"""
from __future__ import annotations

from typing import NamedTuple

from apache_beam.metrics.metric import Metrics

NAMESPACE = "gpfit"

SERIES_READ = "series_read"        # distinct series ids in the input
NULL_IDS = "null_ids"              # input rows whose id is null (not fitted)
OK, SKIPPED, FAILED = "ok", "skipped", "failed"  # output rows by status
FITTERS_BUILT = "fitters_built"    # GPFitter instances built (one per process)
FIT_MS = "fit_ms_per_series"       # distribution: wall ms per series in a batch
TRACING_COUNT = "tracing_count"    # distribution and gauge: fitter traces

COUNT_NAMES = (SERIES_READ, OK, SKIPPED, FAILED, NULL_IDS)


class FitStats(NamedTuple):
    """One fitted batch, as the fitting DoFn saw it (what its metrics record)."""

    series: int            # series in the batch
    ms_per_series: int     # wall ms of the batch's fit / series
    tracing_count: int     # the fitter's traces after the batch
    fitters_built: int     # 1 if this batch was its process's fitter's first, else 0


def counter(name: str):
    return Metrics.counter(NAMESPACE, name)


def distribution(name: str):
    return Metrics.distribution(NAMESPACE, name)


def gauge(name: str):
    return Metrics.gauge(NAMESPACE, name)
