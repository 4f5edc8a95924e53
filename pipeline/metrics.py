"""Beam metrics of a gpfit run: their names, and reading them back.

Counters add up across workers and bundle retries are excluded where the
runner commits metrics, so the manifest's counts are the run's counts.
"""
from __future__ import annotations

from apache_beam.metrics.metric import Metrics, MetricsFilter

NAMESPACE = "gpfit"

SERIES_READ = "series_read"        # distinct series ids in the input
NULL_IDS = "null_ids"              # input rows whose id is null (not fitted)
OK, SKIPPED, FAILED = "ok", "skipped", "failed"  # output rows by status
FITTERS_BUILT = "fitters_built"    # GPFitter instances built (one per process)
FIT_MS = "fit_ms_per_series"       # distribution: wall ms per series in a batch
TRACING_COUNT = "tracing_count"    # distribution and gauge: fitter traces

COUNT_NAMES = (SERIES_READ, OK, SKIPPED, FAILED, NULL_IDS)


def counter(name: str):
    return Metrics.counter(NAMESPACE, name)


def distribution(name: str):
    return Metrics.distribution(NAMESPACE, name)


def gauge(name: str):
    return Metrics.gauge(NAMESPACE, name)


def counters(result) -> dict[str, int]:
    """{counter name: total over all steps}, every gpfit counter present."""
    totals = {name: 0 for name in COUNT_NAMES + (FITTERS_BUILT,)}
    found = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    for item in found["counters"]:
        totals[item.key.metric.name] = totals.get(item.key.metric.name, 0) + _value(item)
    return totals


def distributions(result) -> dict[str, dict]:
    """{distribution name: {count, sum, min, max, mean}} over all steps."""
    out = {}
    found = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    for item in found["distributions"]:
        data = _value(item)
        if data is None or not data.count:
            continue
        out[item.key.metric.name] = {"count": data.count, "sum": data.sum, "min": data.min,
                                     "max": data.max, "mean": data.sum / data.count}
    return out


def _value(item):
    # Not every runner commits metrics; fall back to the attempted value.
    try:
        committed = item.committed
    except Exception:  # some runners raise instead of returning None
        committed = None
    return committed if committed is not None else item.attempted
