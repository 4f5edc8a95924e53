"""--holdout K: fit each series without its last K finite points, forecast
exactly those times, and score the forecast.

Scores (per series, written into its parameter row):
  holdout_mase         mean |y - median forecast| over the K points, divided
                       by holdout_scale; on the original scale of y
  holdout_scale        the in-sample one-step naive MAE of the fitted
                       points, mean |y_i - y_(i-1)| in time order (m = 1:
                       gpfit is not told a season, so the scale is never a
                       seasonal naive one)
  holdout_coverage_95  the fraction of the K points inside the central 95 %
                       interval for a new observation, gpcore.calibration's
                       (the forecast rows' lower_95/upper_95)
MASE is null where the scale is 0 (a constant fitted part) or where it
is not a finite number (held-out values near float64's largest, such as
missing-value codes). The fitted
parameters are those of the shortened series (docs/design.md, "Contracts").
"""
from __future__ import annotations

import dataclasses
import numpy as np

from gpcore import Series
from gpcore.series import split
from gpcore.calibration import forecast
from gpcore.result import OK, SKIPPED
from pipeline.io import rows, scales


def naive_scale(y: np.ndarray) -> float:
    """Mean |y_i - y_(i-1)| over the finite values y [n] in time order; NaN
    with fewer than 2."""
    y = np.asarray(y, dtype=np.float64)
    y = y[np.isfinite(y)]
    return float(np.mean(np.abs(np.diff(y)))) if y.size >= 2 else float("nan")


@dataclasses.dataclass(frozen=True)
class Holdout:
    """The backtest of a run: K points, the --transform scale."""

    k: int
    transform: str = scales.NONE

    def fitted_part(self, series: Series) -> Series:
        return split(series, self.k).fitted

    def scored(self, series: Series, row: dict) -> dict:
        """row (of `series`' fitted part) with the holdout columns filled:
        scores where it is "ok", holdout_points only otherwise; a skipped
        row's reason says what was held out."""
        cut = split(series, self.k)
        row = dict(row, holdout_points=int(cut.t_held.size))
        if row["status"] == SKIPPED and row.get("error"):
            # The count the fit saw is the fitted part's ("0 (of 0)" for a
            # series held out whole): say how many points the holdout took.
            row["error"] = (f"{row['error']} (after --holdout {self.k} held out its last "
                            f"{cut.t_held.size} finite point(s))")
        if row["status"] != OK or not cut.t_held.size:
            return row
        found = forecast(cut.fitted, rows.parameters(row), cut.t_held, horizon=cut.t_held.size)
        row.update(scores(cut.y_held, found.mean, *found.interval(0.95), cut.fitted.y,
                          self.transform))
        return row


def scores(y_held, mean, lower, upper, y_fitted, transform: str = scales.NONE) -> dict:
    """holdout_mase, holdout_coverage_95, holdout_scale of held-out y
    [K] (fitted scale) against the forecast's mean and central 95 %
    interval (lower, upper) [K] (fitted scale), with y_fitted [n] the
    fitted part."""
    # Held-out values are never checked by the fit: missing-value codes
    # near float64's largest make the error (or the scale) inf, and a score
    # that is not a number would fail the manifest's bins; null, as for a
    # scale of 0.
    with np.errstate(over="ignore", invalid="ignore"):
        original = scales.inverse(transform, y_held)
        median = scales.inverse(transform, mean)
        scale = naive_scale(scales.inverse(transform, y_fitted))
        mae = float(np.mean(np.abs(original - median)))
        mase = mae / scale if 0 < scale < np.inf else None
    y_held = np.asarray(y_held)
    inside = (y_held >= np.asarray(lower)) & (y_held <= np.asarray(upper))
    return {"holdout_mase": mase if mase is not None and np.isfinite(mase) else None,
            "holdout_coverage_95": float(np.mean(inside)),
            "holdout_scale": scale if np.isfinite(scale) else None}

