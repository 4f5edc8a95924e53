"""Where a series is forecast: a fixed horizon, or steps of its own spacing.

--predict_horizon H --predict_points K: K times evenly spaced in
(t_last, t_last + H], the same H for every series. --predict_steps K: K
times t_last + step, t_last + 2 step, ..., step the series' median
spacing, so that hourly and monthly series share one run.

A series has a step when it has at least two distinct finite times and at
least REGULAR_SHARE of its spacings lie within STEP_TOLERANCE of their
median: daily data with gaps (most spacings 1 day), monthly data in days
(28-31 around 31) pass; times drawn at random (exponential spacings: about
7 % within 10 % of the median) do not (docs/design.md, "Contracts").
For dates and timestamps the step is whole microseconds, the unit the
forecast times are written in (written_step), and they are written as
the last time's instant plus whole steps (written_micros).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from pipeline.io.columns import as_micros
from pipeline.io.schema import MICROSECONDS_PER_DAY

STEP_TOLERANCE = 0.1
REGULAR_SHARE = 0.5
# Why a series has no step, or no forecast times (the manifest counts each).
FEW_TIMES = "fewer than 2 distinct times"
IRREGULAR = "too irregular to have a step"
UNRESOLVED = "forecast times not past the last time at the resolution they are written in"
PAST_9999 = "forecast times past 9999-12-31"
# 9999-12-31 in days since 1970-01-01: the last day Python's datetime,
# pandas' printing and BigQuery's TIMESTAMP take; later ones (a horizon in
# seconds given as days) are unreadable, or past int64 microseconds garbage.
LATEST_DAY = 2_932_896.0


def median_step(t: np.ndarray) -> tuple[Optional[float], Optional[str]]:
    """(the median spacing of the distinct finite times t [n], None) or
    (None, FEW_TIMES | IRREGULAR)."""
    t = np.unique(np.asarray(t, dtype=np.float64)[np.isfinite(t)])
    if t.size < 2:
        return None, FEW_TIMES
    spacings = np.diff(t)
    step = float(np.median(spacings))
    close = np.abs(spacings - step) <= STEP_TOLERANCE * step
    if np.mean(close) < REGULAR_SHARE:
        return None, IRREGULAR
    return step, None


def written_step(step: float, dates: bool) -> float:
    """The step (units of t) as the forecast times are written: for dates
    (days) rounded to whole microseconds. As float64 days, times of today
    carry ~0.3 us of round-off, so a median spacing of hourly timestamps
    is an hour +- 0.1 us, and K steps of it drift off the hour (18 us
    after a week); the data's own clock is whole microseconds or coarser."""
    if not dates:
        return step
    return round(step * MICROSECONDS_PER_DAY) / MICROSECONDS_PER_DAY


def horizon_offsets(horizon: float, points: int) -> np.ndarray:
    """[points] offsets evenly spaced in (0, horizon]."""
    return horizon * np.arange(1, points + 1, dtype=np.float64) / max(points, 1)


def step_offsets(step: float, steps: int) -> np.ndarray:
    """[steps] offsets step, 2 step, ..., steps * step."""
    return step * np.arange(1, steps + 1, dtype=np.float64)


def written_micros(t_last: float, offsets: np.ndarray) -> np.ndarray:
    """Forecast times t_last + offsets [k] (days since 1970) as the
    predictions write them for dates: [k] int64 us since 1970, t_last's
    instant (columns.as_micros) plus each offset in whole us, so that whole
    steps stay on the data's clock. Rounded from days, t_last + k step was
    1 us off it for a third of hourly steps before 1790 and after 2149,
    where an ulp of days (2^16 of them from 1970) is 1.3 us."""
    return (as_micros(np.array([t_last]))[0]
            + np.round(offsets * MICROSECONDS_PER_DAY).astype(np.int64))


def coarse(spacing: float, periods) -> bool:
    """Whether a grid of this spacing is coarser than a quarter of one of
    the fitted periods (units of t): it cannot show that cycle."""
    return any(p is not None and spacing > 0.25 * p for p in periods)


def unusable(t_last: float, offsets: np.ndarray, dates: bool) -> Optional[str]:
    """Why forecast times t_last + offsets [k] cannot be written, or None:
    UNRESOLVED where they do not rise past t_last (an offset below
    float64's resolution at t_last, as 2 units at 1.7e18 ns; for dates,
    below the whole microseconds written_micros adds), PAST_9999 where
    dates (t in days since 1970) go past LATEST_DAY."""
    times = t_last + offsets
    if dates:  # as written_micros adds them: 1e-11 days put a row at t_last
        written = np.round(np.concatenate([[0.0], offsets]) * MICROSECONDS_PER_DAY)
    else:
        written = np.concatenate([[t_last], times])
    if np.any(np.diff(written) <= 0):
        return UNRESOLVED
    if dates and times.size and times[-1] > LATEST_DAY:
        return PAST_9999
    return None
