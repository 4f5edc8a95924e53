"""The job's --transform step: series onto the fitted scale
(pipeline/io/scales.py), or a "skipped" row naming the values it cannot take."""
from __future__ import annotations

import apache_beam as beam
import numpy as np

from gpcore import FitResult, Series
from gpcore.result import SKIPPED
from pipeline.io import fingerprint, rows
from pipeline.io.scales import problem, transformed

UNTRANSFORMABLE = "untransformable"  # output tag: "skipped" rows


class ToFittedScale(beam.DoFn):
    """Series -> the series on the fitted scale; a series with values the
    transform cannot take -> a "skipped" row on UNTRANSFORMABLE, naming
    them, with the fingerprint of its points under fingerprint_key."""

    def __init__(self, name: str, kernel: str, fingerprint_key: bytes):
        self._name, self._kernel, self._key = name, kernel, fingerprint_key

    def process(self, series: Series):
        reason = problem(self._name, series.y, series.t)
        if reason is None:
            yield transformed(self._name, series)
            return
        n = int(np.sum(np.isfinite(series.t) & np.isfinite(series.y)))
        yield beam.pvalue.TaggedOutput(UNTRANSFORMABLE, rows.of_fit(
            FitResult(str(series.series_id), SKIPPED, self._kernel, n, error=reason),
            fingerprint.of_points(self._key, series.t, series.y)))
