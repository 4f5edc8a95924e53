"""The job's --transform step: series onto the fitted scale
(pipeline/io/scales.py), or a "skipped" row naming the values it cannot take;
and, after the fit, skip reasons that quote the values said in y's terms."""
from __future__ import annotations

from typing import Union

import apache_beam as beam
import numpy as np

from gpcore import FitResult, Series
from gpcore.result import SKIPPED
from gpcore.series import SPREAD_OUTSIDE, equal_values
from pipeline.io import fingerprint, rows
from pipeline.io.scales import NONE, SCALE_NAMES, inverse, problem, transformed

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


def said_in_y(name: str, fitted: Series, row: dict) -> dict:
    """The row of a series fitted on transform `name`'s scale (`fitted`: the
    points the fitter saw), its skip reason in y's terms where it quotes the
    values: gpcore judged log(y), and "all 20 values are equal (2.30259)"
    under --transform log read as a value the user never had; the equal
    value is quoted as y (10), a spread out of range names the scale."""
    reason = row.get("error")
    if name == NONE or row["status"] != SKIPPED or not reason:
        return row
    y = np.asarray(fitted.y, dtype=np.float64)
    values = y[np.isfinite(np.asarray(fitted.t, dtype=np.float64)) & np.isfinite(y)]
    if values.size and reason == equal_values(values.size, float(values[0])):
        return dict(row, error=equal_values(values.size, float(inverse(name, values[0]))))
    if reason.startswith(SPREAD_OUTSIDE):
        return dict(row, error=f"{reason} (values of {SCALE_NAMES[name]}, which --transform "
                               f"{name} fits)")
    return row
