"""Series: one time series as given, and its cleaning before a fit."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Optional

import numpy as np

from gpcore.kernels import LENGTH_BOUNDS
from gpcore.starts import median_spacing
from gpcore.result import FitResult


# A time span below this fraction of the times' magnitude has fewer than ~1e4
# distinguishable float64 steps (eps = 2.2e-16): the times are mostly offset.
TIME_RESOLUTION = 1e-11

# The smallest length scale a fit may report (units of t): float64's
# smallest normal number. The fit's length scales reach down to
# LENGTH_BOUNDS[0] of the median spacing or LENGTH_BOUNDS[1] of the span,
# whichever is shorter (kernels.shortest_length_scale); one below this
# loses precision, and its reciprocal (in every covariance) is inf: at span
# 1.5e-323 a fit reported length_scale 0.0, at 1e-306 one predict refused.
SMALLEST_LENGTH = float(np.finfo(np.float64).tiny)  # 2.2e-308
SMALLEST_SPAN = SMALLEST_LENGTH / LENGTH_BOUNDS[1]  # 2.2e-305

# Standard deviations of y that a fit accepts: their squares stay normal floats.
SPREAD_RANGE = (1e-150, 1e150)

# The words of the reason of a series over max_points (clean), which a
# fitter extends with the kernels that fit it in O(n).
OVER_MAX_POINTS = "finite points is more than max_points"

# The first words of the reason of a series whose values' spread is out of
# SPREAD_RANGE (clean): the pipeline says which scale under a --transform.
SPREAD_OUTSIDE = "the values' standard deviation"

# What to do with times or values that are not numbers (`numbers`).
TIME_ADVICE = "convert times to numbers, e.g. days since an epoch"
VALUE_ADVICE = "give numeric values; NaN marks a missing one"
# The same for the times of a row of gpfit's params/ (predict, split): given
# in seconds they give the prior without a word (README, "See the fits
# (report)": the paragraph on predict with a row and its points).
ROW_TIME_ADVICE = (f"{TIME_ADVICE}: days since 1970-01-01 UTC for a row gpfit fitted on dates "
                   "or timestamps (its length scales and periods are in days)")


@dataclasses.dataclass
class Series:
    """One time series.

    Attributes:
      series_id: its identifier (any value; reported as str).
      t: [n] observation times, numbers (any units; results use the same;
        datetime64 is refused: give e.g. days since an epoch). A row or a
        column [1, n], [n, 1] is read as [n].
      y: [n] observed values; NaN or +-inf mark a missing value.
      warm_start: optional parameters of an earlier fit of this series (a
        mapping as FitResult.params gives it, that FitResult, or a pandas
        row of the output). The fitter also starts from them, as an extra
        batch member, when their kernel is the one it fits, and keeps the
        best; the result's `warm_started` says so.
    """

    series_id: object
    t: np.ndarray
    y: np.ndarray
    warm_start: Optional[dict] = None


@dataclasses.dataclass
class CleanSeries:
    """A series ready to fit: sorted by time, only finite observations.

    Attributes:
      t: [n] sorted times; repeated times are kept (repeated measurements).
      y: [n] finite values.
      warm_start: the Series' warm_start, passed on (a FitResult's params).
      starts: parameters (mappings as FitResult.params gives them) to start
        Newton from beside the search grid's best point, instead of its
        restarts (GPFitter.fit's `starts_from`), or None: the grid's.
    """

    series_id: object
    t: np.ndarray
    y: np.ndarray
    warm_start: Optional[dict] = None
    starts: Optional[list] = None

    @property
    def n_points(self) -> int:
        return int(self.t.shape[0])


def listed(series) -> list[Series]:
    """A fitter's `series` argument as a list (a generator is as good);
    TypeError saying what fit takes where it is one Series or holds
    anything else."""
    if isinstance(series, Series):
        raise TypeError("fit takes a list of Series; got one Series: pass [series]")
    series = list(series)
    for i, s in enumerate(series):
        if not isinstance(s, Series):
            raise TypeError(f"fit takes a list of Series; item {i} is a {type(s).__name__}, "
                            "not a gpcore.Series: give Series(series_id, t, y)")
    return series


def clean(series: Series, min_points: int, max_points: int, linear_above: Optional[int] = None
          ) -> tuple[Optional[CleanSeries], int, Optional[str]]:
    """Sorts a series and drops missing points, or says why it can't be fitted.
    linear_above: where given, series of more points fit in O(n) (a Markov
    kernel's, docs/design.md "Long series: Markov kernels"), and the reason
    of one over max_points says so rather than that cost grows as n^3.

    Returns:
      (clean series or None, number of finite points, reason or None).
    """
    warm_start = series.warm_start
    if isinstance(warm_start, FitResult):
        warm_start = warm_start.params  # all None, so unused, unless it is fitted
    elif callable(getattr(warm_start, "get", None)) and not isinstance(warm_start, Mapping):
        warm_start = dict(warm_start)  # a pandas row of the output, as predict takes one
    elif callable(getattr(warm_start, "_asdict", None)):  # pandas' itertuples() row, too
        warm_start = warm_start._asdict()
    elif warm_start is not None and not isinstance(warm_start, Mapping):
        return None, 0, (f"warm_start must be a mapping as FitResult.params gives it, or "
                         f"a FitResult; got a {type(warm_start).__name__}")
    t, problem = numbers(series.t, "t", TIME_ADVICE)
    if problem:
        return None, 0, problem
    y, problem = numbers(series.y, "y", VALUE_ADVICE)
    if problem:
        return None, 0, problem
    if t.shape != y.shape:
        return None, 0, (f"t has {t.size} values but y has {y.size}; "
                         "give one time per value")
    finite = np.isfinite(y) & np.isfinite(t)
    n = int(finite.sum())
    if n < min_points:
        # Missing times named: a time column of nulls (a failed parse) was
        # said only as too few points, beside values all present.
        timeless = int(y.size - np.isfinite(t).sum())
        of = f"of {y.size}" + (f"; {timeless} without a finite time" if timeless else "")
        return None, n, (f"too few finite points: {n} ({of}); at least "
                         f"{min_points} are needed to fit a GP")
    t, y = t[finite], y[finite]
    span, biggest_t = float(np.ptp(t)), float(np.max(np.abs(t)))
    if span == 0.0:
        return None, n, _equal_times(float(t[0]))
    if span < TIME_RESOLUTION * biggest_t:
        return None, n, _short_span(span, biggest_t)
    if span < SMALLEST_SPAN:
        return None, n, (f"the times span {span:.3g}, too little for float64 to hold the "
                         f"length scales fitted to them (the span must be at least "
                         f"{SMALLEST_SPAN:.3g}); rescale t (change its units)")
    # Stable sort keeps repeated timestamps in input order (deterministic).
    order = np.argsort(t, kind="stable")
    t_sorted = t[order]
    spacing = median_spacing(t_sorted)  # the fit's bounds' (starts.bounds)
    if LENGTH_BOUNDS[0] * spacing < SMALLEST_LENGTH:
        return None, n, (f"the times' median spacing {spacing:.3g} is too little for "
                         f"float64 to hold the length scales fitted to them (a quarter "
                         f"of it must be at least {SMALLEST_LENGTH:.3g}); rescale t "
                         "(change its units)")
    # Scaled by the largest magnitude so that computing it cannot overflow or
    # underflow; variances (spread^2) are reported, so keep them in range.
    with np.errstate(over="ignore", under="ignore"):
        biggest = float(np.max(np.abs(y)))
        spread = float(np.std(y / biggest)) * biggest if biggest > 0 else 0.0
    if spread != 0.0 and not (SPREAD_RANGE[0] <= spread <= SPREAD_RANGE[1]):
        return None, n, (f"{SPREAD_OUTSIDE} {spread:.3g} (largest |y| "
                         f"{biggest:.3g}) is outside [{SPREAD_RANGE[0]:g}, {SPREAD_RANGE[1]:g}], "
                         "where their variance would overflow or underflow; rescale the "
                         "series, or give NaN where a value is a code for a missing one")
    if np.ptp(y) == 0.0:
        return None, n, equal_values(n, float(y[0]))
    # Last: a series no kernel can fit at any max_points says so above,
    # rather than to raise max_points or change kernel.
    if n > max_points:
        growth = ("n^3" if linear_above is None or n <= linear_above
                  else f"n past {linear_above} points for this kernel, in O(n) memory")
        return None, n, (f"{n} {OVER_MAX_POINTS}={max_points}; "
                         f"raise max_points (cost grows as {growth}) or aggregate/"
                         "split the series")
    return CleanSeries(series.series_id, t_sorted, y[order], warm_start), n, None


@dataclasses.dataclass(frozen=True)
class Split:
    """A series cut for the backtest: `fitted` (all but the last K finite
    points; missing values before them kept), and the K held out."""

    fitted: Series
    t_held: np.ndarray  # [K] times
    y_held: np.ndarray  # [K] values, on the fitted scale


def split(series: Series, k: int) -> Split:
    """Cuts off the last k finite points by time (ties: the order given).

    Raises:
      ValueError: as points; k no whole number >= 0."""
    t, y = points(series)
    k = _count(k)
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    finite = np.flatnonzero(np.isfinite(t) & np.isfinite(y))
    held = finite[max(finite.size - k, 0):] if k > 0 else finite[:0]
    keep = np.ones(t.size, bool)
    keep[held] = False
    return Split(dataclasses.replace(series, t=t[keep], y=y[keep]), t[held], y[held])


def _count(k) -> int:
    """split's k as an int; a whole float is one: `holdout_points` as
    pandas reads it where the column holds nulls (docs/design.md,
    "Contracts", A row given to gpcore)."""
    array = np.asarray(k)
    if (isinstance(k, (bool, np.bool_)) or array.dtype.kind not in "iuf" or array.shape
            or not np.isfinite(array) or array < 0 or array != np.floor(array)):
        raise ValueError(f"k must be a whole number of points >= 0 (holdout_points); got {k!r}")
    return int(array)


def points(series: Series) -> tuple[np.ndarray, np.ndarray]:
    """(t [n], y [n]) of a series given to predict or split, float64, every
    point kept, by the fit's rule (`numbers`).

    Raises:
      ValueError: series no Series (any object with series_id, t and y);
        naming the series: t or y not numbers (datetime64 told
        ROW_TIME_ADVICE), of two dimensions, or of different lengths."""
    if not all(hasattr(series, name) for name in ("series_id", "t", "y")):
        raise ValueError(f"series must be a gpcore.Series; got a {type(series).__name__}: give "
                         "Series(series_id, t, y)")
    where = f"series {series.series_id!r}: "
    t, problem = numbers(series.t, "t", ROW_TIME_ADVICE)
    if not problem:
        y, problem = numbers(series.y, "y", VALUE_ADVICE)
    if not problem and t.shape != y.shape:
        problem = f"t has {t.size} values but y has {y.size}; give one time per value"
    if problem:
        raise ValueError(where + problem)
    return t, y


def equal_values(n: int, value: float) -> str:
    """The reason of a series whose n finite values all equal `value`.
    Past 2^53 float64 holds no longer every integer: int64 values of 2^62
    +- 100, read as float64, are one value, and "all equal" alone named
    values the input does not hold."""
    if abs(value) < 2.0**53:
        return f"all {n} values are equal ({value:g}); nothing to fit"
    return (f"all {n} values are equal ({value:g} as float64, which resolves only steps of "
            f"{np.spacing(abs(value)):g} there); nothing to fit: if they differ by less, "
            "give y from an offset (e.g. less the series' first value)")


def _equal_times(t: float) -> str:
    """Why a series whose times all equal t (as float64) can't be fitted:
    times closer than float64 resolves there look equal, as nanosecond
    timestamps do once they are days since 1970."""
    if t == 0.0:
        return "all observation times are equal; a time span is needed"
    return (f"all observation times are equal (t = {t:.10g} as float64, which "
            f"resolves {np.spacing(abs(t)):.2g} there); a time span is needed: if the "
            "times differ by less, give t as numbers from an offset (e.g. seconds since "
            "the first; timestamps become days since 1970-01-01)")


def _short_span(span: float, biggest_t: float) -> str:
    """Why a series whose times span too little of their magnitude can't be
    fitted; as _equal_times, it names the timestamps' case, where
    subtracting an offset in place would give durations, not numbers."""
    return (f"the times span {span:.3g} at magnitude {biggest_t:.3g}, beyond what float64 "
            "resolves; subtract an offset from t or change its units: give t as numbers "
            "from an offset (e.g. seconds since the first; timestamps become days since "
            "1970-01-01)")


def numbers(values, name: str, advice: str, vector: str = "a vector [n], one Series per series"
            ) -> tuple[Optional[np.ndarray], Optional[str]]:
    """values as a float64 vector, or the reason they are not numbers (the
    fit's and predict's one rule: datetime64 is refused, not read as counts
    of its unit since 1970); `vector` says what to give where values have
    two dimensions (a series' t or y by default)."""
    if values is None:  # not NaN: np.asarray would make it one
        return None, f"{name} is not numeric (None); {advice}"
    array = np.asarray(values)
    if sum(size > 1 for size in array.shape) > 1:  # several series' rows, flattened into one
        return None, f"{name} has shape {array.shape}; give {vector} (a row or a column will do)"
    if array.dtype.kind not in "biuf":  # datetime64, strings, objects: no silent guess
        try:
            array = array.astype(np.float64) if array.dtype.kind == "O" else None
        except (TypeError, ValueError):
            array = None
        if array is None:
            return None, (f"{name} is not numeric (dtype {np.asarray(values).dtype}); {advice}")
    return array.astype(np.float64).reshape(-1), None
