"""A run's backtest totals (--holdout) from its output rows: what the job's
manifest records under "holdout" and the report shows, summed one way for
both. Accumulators are plain dicts, so a Beam combine merges them.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional

from pipeline.io.log_bins import log_bin, median_of_bins

# MASE below this shares its bin (a perfect forecast's 0 has no log).
SMALLEST_MASE = 1e-12

# The MASEs are summed times this power of 2, exact for all but subnormal
# ones, so that a sum of finite MASEs near 1e307 (held-out missing-value
# codes) does not overflow: the mean's bits are those of the plain sum's.
SUM_SCALE = 2.0 ** -64


def create() -> dict:
    return {"series": 0, "points": 0, "covered": 0.0, "mase_n": 0, "mase_sum": 0.0,
            "bins": {}, "mase_min": None, "mase_max": None}


def add(acc: dict, row: dict) -> dict:
    """Adds one output row (holdout_points, holdout_coverage_95,
    holdout_mase); a row without a backtest adds nothing."""
    if row.get("holdout_coverage_95") is None:
        return acc
    acc["series"] += 1
    acc["points"] += row["holdout_points"]
    acc["covered"] += row["holdout_coverage_95"] * row["holdout_points"]
    mase = row.get("holdout_mase")
    # Scored as gpfit writes a MASE that is not a finite number: null. Rows
    # of runs before it (inf, NaN: the run failed at its manifest, its
    # shards left) failed the report's bins, 'cannot convert float infinity'.
    if mase is not None and math.isfinite(mase):
        acc["mase_n"] += 1
        acc["mase_sum"] += mase * SUM_SCALE
        key = log_bin(mase, SMALLEST_MASE)
        acc["bins"][key] = acc["bins"].get(key, 0) + 1
        acc["mase_min"] = mase if acc["mase_min"] is None else min(acc["mase_min"], mase)
        acc["mase_max"] = mase if acc["mase_max"] is None else max(acc["mase_max"], mase)
    return acc


def merge(accumulators: Iterable[dict]) -> dict:
    merged = create()
    for acc in accumulators:
        for key in ("series", "points", "covered", "mase_n", "mase_sum"):
            merged[key] += acc[key]
        for key, n in acc["bins"].items():
            merged["bins"][key] = merged["bins"].get(key, 0) + n
        for key, pick in (("mase_min", min), ("mase_max", max)):
            if acc[key] is not None:
                merged[key] = acc[key] if merged[key] is None else pick(merged[key], acc[key])
    return merged


def extract(acc: dict) -> Optional[dict]:
    """{series, points, mase_mean, mase_median (to within 2 %), coverage_95
    over every held-out point}; None when no row had a backtest."""
    if not acc["series"]:
        return None
    median = None
    if acc["mase_n"]:
        # A bin's centre may lie outside the MASEs' range (one series of
        # 0.409 said 0.406): the median is within it.
        median = min(max(median_of_bins(acc["bins"], acc["mase_n"]), acc["mase_min"]),
                     acc["mase_max"])
    return {"series": acc["series"], "points": acc["points"],
            "mase_mean": acc["mase_sum"] / acc["mase_n"] / SUM_SCALE if acc["mase_n"] else None,
            "mase_median": median,
            "coverage_95": acc["covered"] / acc["points"] if acc["points"] else None}
