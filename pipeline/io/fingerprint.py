"""A series' fingerprint: what decides whether last night's row still holds.

The fingerprint is a sha256 (hex) over, in order:
  - the gpfit version (VERSION; a release that changes the fitter changes it),
  - the fit options that change a result (FitConfig's fields but batch_size,
    which only groups the work, and candidates unless the kernel is "auto",
    where they are sorted: their order changes no fit; --transform and
    --holdout unless none and 0, with the revision of its scores'
    formula), as sorted JSON,
  - the number of finite points, then their t and y as float64 bytes, sorted
    by (t, y) (a point is finite when both t and y are; -0.0 counts as 0.0).
Points are hashed after the input's conversion (dates and timestamps to days,
pipeline/io/columns.py), so the same values in the same units match however
the input files were split or ordered. Two runs whose rows carry equal
fingerprints would fit the same data with the same code and options.

A row the read step refuses before assembling its points (more than
--max_rows rows, t and y lists of different lengths) has no points to hash:
its fingerprint covers the version, the options and the reason instead.

A series is hashed once: the step that first needs its fingerprint (the
comparison with the previous run) carries it on with the series
(Fingerprinted), and its row takes it from there (of_series).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json

from typing import Optional

import numpy as np

from gpcore.config import AUTO, FitConfig
from gpcore.series import Series

# gpfit's release; pyproject.toml's version (a test keeps them equal).
VERSION = "0.16.6"

# The revision of the --holdout scores' formula (backtest.scores over
# gpcore.calibration's interval): 2 since the interval's scale is the
# flat-prior Q / (n - 1), not the fitted Q / n.
HOLDOUT_SCORES = 2

# FitConfig fields that do not change what a fit returns.
_NOT_FIT_OPTIONS = ("batch_size",)


def options_key(config: FitConfig, transform: str = "none", holdout: int = 0) -> bytes:
    """The version and the fit-changing options, as the bytes hashed first:
    FitConfig's, and the pipeline's --transform (the data fitted) and
    --holdout (the points fitted, the scores in the row) where not their
    defaults, so that a run without them keeps earlier runs' keys."""
    options = {k: v for k, v in dataclasses.asdict(config).items() if k not in _NOT_FIT_OPTIONS}
    options["kernel"] = config.kernel_name  # the name, as runs before kernels were objects
    if config.kernel != AUTO:  # the candidates are not fitted
        options.pop("candidates", None)
    else:  # their order changes no fit (gpcore.choice.choose_fit): a set
        options["candidates"] = sorted(options["candidates"])
    if not options.get("stop_behind"):  # its default: keys as before the option
        options.pop("stop_behind", None)
    if options.get("far_probes") is True:  # a lone kernel's default: keys as before it
        options.pop("far_probes")
    if not options.get("probe_check"):  # the default: keys as before it
        options.pop("probe_check", None)
    if transform != "none":
        options["transform"] = transform
    if holdout:
        options["holdout"] = int(holdout)
        # The row's scores are computed with the interval of their day: a
        # reused row keeps its own, so a change of the interval's formula
        # must refit (and rescore) the rows of --holdout runs once, and only
        # theirs (docs/design.md, "Contracts").
        options["holdout_scores"] = HOLDOUT_SCORES
    return json.dumps({"gpfit": VERSION, "options": options}, sort_keys=True).encode()


def of_points(key: bytes, t, y) -> str:
    """Fingerprint of a series' points (t [n], y [n], any order; non-finite
    points are ignored) under options_key(config) `key`."""
    t = np.asarray(t, dtype=np.float64).reshape(-1)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if t.shape != y.shape:  # not a series the fitter accepts; it says why
        return of_reason(key, f"{t.size} times, {y.size} values")
    finite = np.isfinite(t) & np.isfinite(y)
    # + 0.0 turns -0.0 into 0.0: equal values, equal bytes.
    t, y = t[finite] + 0.0, y[finite] + 0.0
    order = np.lexsort((y, t))
    digest = hashlib.sha256(key)
    digest.update(np.int64(t.size).tobytes())
    digest.update(np.ascontiguousarray(t[order]).tobytes())
    digest.update(np.ascontiguousarray(y[order]).tobytes())
    return digest.hexdigest()


def of_reason(key: bytes, reason: str) -> str:
    """Fingerprint of a series refused unassembled, from the reason given."""
    return hashlib.sha256(key + b"\0unassembled\0" + reason.encode()).hexdigest()



@dataclasses.dataclass
class Fingerprinted(Series):
    """A Series with its fingerprint under the run's options_key, worked out
    once and carried along (a fitter takes it as any Series). Made after the
    last change to the points (--transform); a warm start is not hashed."""

    fingerprint: Optional[str] = None


def stamped(key: bytes, series: Series) -> Fingerprinted:
    """series with its fingerprint under `key` (the one it carries, if any)."""
    if isinstance(series, Fingerprinted) and series.fingerprint is not None:
        return series
    return Fingerprinted(**{f.name: getattr(series, f.name)
                            for f in dataclasses.fields(Series)},
                         fingerprint=of_points(key, series.t, series.y))


def of_series(key: bytes, series: Series) -> str:
    """A series' fingerprint under `key`: the one it carries, or of its points."""
    if isinstance(series, Fingerprinted) and series.fingerprint is not None:
        return series.fingerprint
    return of_points(key, series.t, series.y)
