"""gpcore's fit quality on the real-data set against the scikit-learn peer.

gap = nll_gpcore - nll_sklearn per series (nats, raw units; < 0: gpcore fits
better). gpcore runs with FitConfig's defaults unless told the restarts; the
peer gets REFERENCE_RESTARTS starts, enough to find the better optimum on
nearly every real series (docs/design.md, "Measured facts").
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

REFERENCE_RESTARTS = 4
# nats. The mean is fitted by gpcore but fixed at the sample mean by sklearn,
# so at the same optimum gpcore's nll is the lower one; 0.01 nats absorbs
# both optimisers' stopping tolerances and is far below any difference a user
# could see in a fit.
TOLERANCE = 0.01
TARGET_SHARE = 0.99
BAD_GAP = 1.0  # nats: a different optimum, not a stopping tolerance


class GapMeasures:
    """What a comparison's `ids` [n] and `gaps` [n] (nll_gpcore -
    nll_sklearn, NaN where the peer failed) say."""

    ids: list
    gaps: np.ndarray

    @property
    def share_within(self) -> float:
        judged = self.gaps[~np.isnan(self.gaps)]
        return float(np.mean(judged <= TOLERANCE)) if judged.size else math.nan

    @property
    def worse_than_bad_gap(self) -> int:
        return int(np.sum(self.gaps > BAD_GAP))

    def worst(self, k: int = 10) -> list[tuple[str, float]]:
        order = np.argsort(-np.nan_to_num(self.gaps, nan=-np.inf), kind="stable")
        return [(str(self.ids[i]), float(self.gaps[i])) for i in order[:k]
                if self.gaps[i] > TOLERANCE]


@dataclasses.dataclass
class Comparison(GapMeasures):
    """One run of gpcore against the peer on the same series.

    Attributes:
      ids: [n] series ids.
      gaps: [n] nll_gpcore - nll_sklearn; +inf where gpcore gave no nll,
        NaN where sklearn failed (left out of the share).
      restarts: gpcore's FitConfig.restarts.
      evaluations_per_series, iterations_mean: gpcore's work, from
        fitter.work["member_evaluations"] and FitResult.iterations.
      gpcore_s, sklearn_s: wall seconds of each side's fits (sklearn_s None
        when its results were given).
    """

    ids: list
    gaps: np.ndarray
    restarts: int
    evaluations_per_series: float
    iterations_mean: float
    gpcore_s: float
    sklearn_s: float | None

    def to_json(self) -> dict:
        # NaN (sklearn failed) -> null; +inf stays (Python's json writes Infinity).
        return {"ids": [str(i) for i in self.ids],
                "gaps": [None if math.isnan(g) else g for g in map(float, self.gaps)],
                "restarts": self.restarts, "share_within": self.share_within,
                "worse_than_bad_gap": self.worse_than_bad_gap,
                "evaluations_per_series": self.evaluations_per_series,
                "iterations_mean": self.iterations_mean,
                "gpcore_s": self.gpcore_s, "sklearn_s": self.sklearn_s}


def peer_fits(series, cache: str | None = None, kernel: str = "rbf") -> dict:
    """The peer's fits with `kernel` at REFERENCE_RESTARTS starts: {"nll":
    [nll or None], "period": [period or None], "seconds": [per series],
    "wall_s": the pool's wall seconds}, lists in the order of `series`.

    cache: a JSON file to reuse them from when it was written for the same
    series, peer set-up and scikit-learn version (else they are computed and
    written there): the peer's fits take minutes, gpcore's seconds.
    """
    wanted, saved = cached(cache, peers.DESCRIPTIONS[kernel], series)
    if saved is not None:
        return saved
    start = time.perf_counter()
    out = peers.nlls([(s.t, s.y) for s in series], REFERENCE_RESTARTS, kernel=kernel)
    fits = {**wanted, "nll": [o[0] for o in out], "period": [o[4] for o in out],
            "seconds": [o[1] for o in out], "wall_s": time.perf_counter() - start}
    save(cache, fits)
    return fits


# The points' round-off: numpy's sin, exp and log take other code paths on
# CPUs with and without AVX-512, so a synthetic set built on two machines
# differs in the last bits of its points (docs/design.md, "Build",
# *References, committed*). A saved fit is the same set's when the points'
# weighted sums agree to this relative tolerance: far above round-off
# (1e-16 a point), far below any real change of the set.
POINTS_WITHIN = 1e-9


def stamp(description: str, series) -> dict:
    """What a saved fit is checked against: {"key": a hash of the peer's
    set-up `description`, scikit-learn's version, the starts and every
    series' id, length and missing points; "sums": [[Σ w t, Σ w y]] per
    series, the points weighted by their position (w = 1 + (i mod 10) / 10,
    so that a moved point shows)}."""
    import sklearn

    exact, sums = [], []
    for s in series:
        t, y = np.asarray(s.t, float), np.asarray(s.y, float)
        weight = 1.0 + (np.arange(t.size) % 10) / 10.0
        exact.append([str(s.series_id), int(t.size), np.flatnonzero(np.isnan(y)).tolist()])
        sums.append([float(weight @ t), float(weight @ np.nan_to_num(y, nan=0.0))])
    key = hashlib.sha256(json.dumps(
        [description, sklearn.__version__, REFERENCE_RESTARTS, exact]).encode()).hexdigest()
    return {"key": key, "sums": sums}


def same_set(saved: dict, wanted: dict, series) -> bool:
    """Whether `saved` (a file's contents) holds the fits of `wanted`'s set
    (a stamp of `series`): the same key, and sums equal within
    POINTS_WITHIN of the points' own scale."""
    if saved.get("key") != wanted["key"] or len(saved.get("sums", ())) != len(wanted["sums"]):
        return False
    scale = np.array([[np.abs(s.t).sum(), np.nansum(np.abs(s.y))] for s in series]) * 2.0
    return bool(np.all(np.abs(np.array(saved["sums"]) - np.array(wanted["sums"]))
                       <= POINTS_WITHIN * (scale + 1e-300)))


def cached(cache: str | None, description: str, series) -> tuple[dict, dict | None]:
    """(stamp of the set, the fits saved in `cache` for it or None): a
    changed set, peer or scikit-learn version is fitted again."""
    wanted = stamp(description, series)
    if cache and os.path.exists(cache):
        with open(cache) as f:
            saved = json.load(f)
        if same_set(saved, wanted, series):
            return wanted, saved
    return wanted, None


def save(cache: str | None, fits: dict) -> None:
    """Writes `fits` (with its stamp) to the JSON file `cache`, if any."""
    if cache:
        os.makedirs(os.path.dirname(os.path.abspath(cache)), exist_ok=True)
        with open(cache, "w") as f:
            json.dump(fits, f)


def reference(series, cache: str | None = None) -> list:
    """[nll or None] of the RBF peer at REFERENCE_RESTARTS starts, per series
    (peer_fits, cached there)."""
    return peer_fits(series, cache)["nll"]


def gaps(results, reference_nll) -> np.ndarray:
    """[n] nll_gpcore - nll_sklearn: +inf where gpcore gave no nll, NaN
    where the peer failed. results: [FitResult]; reference_nll: [nll or None]."""
    return np.array([math.nan if theirs is None
                     else (r.nll - theirs if r.status == "ok" and r.nll is not None
                           and math.isfinite(r.nll) else math.inf)
                     for r, theirs in zip(results, reference_nll)], dtype=float)


def compare(series, restarts=None, reference_nll=None, search: str = "thorough") -> Comparison:
    """Fits `series` ([gpcore.Series]) with gpcore (FitConfig defaults, or
    `restarts`; `search`: gpcore.config.SEARCHES) and, unless `reference_nll`
    ([nll or None]) is given, with the peer at REFERENCE_RESTARTS starts in
    its 2-process pool."""
    sklearn_s = None
    if reference_nll is None:
        start = time.perf_counter()
        reference_nll = reference(series)  # before TensorFlow starts here
        sklearn_s = time.perf_counter() - start

    from gpcore import GPFitter
    from gpcore.config import at_search

    config = at_search(search, kernel="rbf",
                       **({} if restarts is None else {"restarts": restarts}))
    fitter = GPFitter(config)
    before = fitter.work.get("member_evaluations", 0)
    start = time.perf_counter()
    results = fitter.fit(series)
    gpcore_s = time.perf_counter() - start
    evaluations = fitter.work.get("member_evaluations", 0) - before

    return Comparison([s.series_id for s in series], gaps(results, reference_nll), config.restarts,
                      evaluations / max(len(series), 1),
                      float(np.mean([r.iterations for r in results])), gpcore_s, sklearn_s)


def summary(c: Comparison, k: int = 10) -> str:
    """Lines for a person: the share, the bad count and the worst series."""
    lines = [
        f"gpcore (restarts={c.restarts}) vs scikit-learn ({REFERENCE_RESTARTS} starts) on "
        f"{len(c.ids)} real series: {100 * c.share_within:.1f} % within {TOLERANCE} nats "
        f"(target {100 * TARGET_SHARE:.0f} %), {c.worse_than_bad_gap} worse by > {BAD_GAP:g} "
        f"nat, sklearn failed on {int(np.isnan(c.gaps).sum())}",
        f"gpcore: {c.evaluations_per_series:.1f} evaluations/series, "
        f"{c.iterations_mean:.1f} iterations mean, {c.gpcore_s:.1f} s; sklearn: "
        + ("results reused" if c.sklearn_s is None else f"{c.sklearn_s:.1f} s"),
        "worst (id, gap nats):",
    ]
    lines += [f"  {i}\t{g:+.3f}" for i, g in c.worst(k)]
    return "\n".join(lines)
