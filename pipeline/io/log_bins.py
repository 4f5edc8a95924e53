"""Medians to within 2 % from histograms of log-spaced bins: the
manifest's fit-call seconds and holdout MASE, and the report's backtest.

A histogram of bins 2 % wide holds the median of 10^5 values in a few
hundred numbers, not 10^5, and merges by adding counts (a Beam combine).
"""
from __future__ import annotations

import math

WIDTH = math.log(1.02)  # a bin's width in log units: 2 %


def log_bin(value: float, smallest: float) -> int:
    """The bin of a positive value; values below `smallest` share its bin."""
    return math.floor(math.log(max(value, smallest)) / WIDTH)


def median_of_bins(bins: dict, count: int) -> float:
    """The median of a histogram {bin: values} of `count` values (log_bin's
    bins), to within 2 %: the bin centre of the middle value, or the mean of
    the two middle values' for an even count (the lower one alone is off by
    their whole gap). Four significant digits: decimals would lose the 2 %
    below 0.05."""
    ranks = [(count - 1) // 2, count // 2]  # 0-based ranks of the middle values
    centres, seen = [], 0
    for key in sorted(bins):
        seen += bins[key]
        while ranks and ranks[0] < seen:
            centres.append(math.exp((key + 0.5) * WIDTH))
            ranks.pop(0)
        if not ranks:
            return float(f"{0.5 * (centres[0] + centres[1]):.4g}")
    raise ValueError("empty histogram")
