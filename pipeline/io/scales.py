"""--transform: the scale y is fitted on (none, log, log1p), and back.

A GP on log(y) (or log(1 + y)) has Gaussian marginals on that scale, so
its quantiles map back through the inverse exactly: the median of y is
inverse(mean) and the bounds of an interval are inverse(mean +- z sd).
The mean of y on the original scale is not inverse(mean) (for log it is
exp(mean + sd^2 / 2)); the predictions give the median, which is what
the intervals are centred on (docs/design.md, "Contracts").
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from gpcore import Series

NONE, LOG, LOG1P = "none", "log", "log1p"
TRANSFORMS = (NONE, LOG, LOG1P)
# The fitted scale of each transform, as labels name it.
SCALE_NAMES = {NONE: "y", LOG: "log(y)", LOG1P: "log(1 + y)"}


# (forward, inverse) of each transform but none.
_FUNCTIONS = {LOG: (np.log, np.exp), LOG1P: (np.log1p, np.expm1)}


def forward(name: str, y: np.ndarray) -> np.ndarray:
    """y [n] on the fitted scale; NaN stays NaN. A value the transform cannot
    take (`problem` allows one only at a missing time) becomes -inf or NaN,
    missing too, without numpy's warning."""
    y = np.asarray(y, dtype=np.float64)
    if name not in _FUNCTIONS:
        return y
    with np.errstate(divide="ignore", invalid="ignore"):
        return _FUNCTIONS[name][0](y)


def inverse(name: str, z: np.ndarray) -> np.ndarray:
    """z [n] on the fitted scale -> the original scale (forward's inverse)."""
    z = np.asarray(z, dtype=np.float64)
    return _FUNCTIONS[name][1](z) if name in _FUNCTIONS else z


def problem(name: str, y: np.ndarray, t: Optional[np.ndarray] = None) -> Optional[str]:
    """Why a series' observations cannot be transformed, or None: its finite
    values y [n], at finite times t [n] where t is given (a point whose time
    is missing is dropped with its value, README "Missing values")."""
    y = np.asarray(y, dtype=np.float64)
    observed = np.isfinite(y) if t is None else np.isfinite(y) & np.isfinite(
        np.asarray(t, dtype=np.float64))
    finite = y[observed]
    if name == LOG and np.any(finite <= 0):
        bad = int(np.sum(finite <= 0))
        return (f"{bad} value(s) <= 0 (smallest {finite.min():.6g}): --transform log needs "
                "y > 0; use --transform log1p for counts with zeros, or none")
    if name == LOG1P and np.any(finite < 0):
        bad = int(np.sum(finite < 0))
        return (f"{bad} negative value(s) (smallest {finite.min():.6g}): --transform log1p "
                "needs y >= 0; use --transform none")
    return None


def transformed(name: str, series: Series) -> Series:
    """The series with y on the fitted scale (the input is not changed)."""
    if name == NONE:
        return series
    return dataclasses.replace(series, y=forward(name, series.y))
