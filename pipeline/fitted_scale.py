"""The job's --transform step: series onto the fitted scale
(pipeline/io/scales.py), or a "skipped" row naming the values it cannot take."""
from __future__ import annotations

from typing import Union

import apache_beam as beam
import numpy as np

from gpcore import FitResult, Series
from gpcore.result import SKIPPED
from pipeline.io import fingerprint, rows
from pipeline.io.scales import problem, transformed

UNTRANSFORMABLE = "untransformable"  # output tag: "skipped" rows


def on_fitted_scale(name: str, kernel: str, key: bytes, series: Series) -> Union[Series, dict]:
    """The series on transform `name`'s scale, or, where it holds values the
    transform cannot take, its "skipped" row naming them, with the
    fingerprint of its points under `key`; the job's step and fit_frame
    both call it."""
    reason = problem(name, series.y, series.t)
    if reason is None:
        return transformed(name, series)
    n = int(np.sum(np.isfinite(series.t) & np.isfinite(series.y)))
    return rows.of_fit(FitResult(str(series.series_id), SKIPPED, kernel, n, error=reason),
                       fingerprint.of_points(key, series.t, series.y))


class ToFittedScale(beam.DoFn):
    """Series -> the series on the fitted scale; a series with values the
    transform cannot take -> its "skipped" row on UNTRANSFORMABLE
    (on_fitted_scale)."""

    def __init__(self, name: str, kernel: str, fingerprint_key: bytes):
        self._name, self._kernel, self._key = name, kernel, fingerprint_key

    def process(self, series: Series):
        found = on_fitted_scale(self._name, self._kernel, self._key, series)
        if isinstance(found, dict):
            yield beam.pvalue.TaggedOutput(UNTRANSFORMABLE, found)
        else:
            yield found
