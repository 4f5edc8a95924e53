"""What a whole run looks like: counts, failure reasons, parameter histograms.

Everything is accumulated batch by batch, so memory does not grow with the
number of series: pass 1 (Tally) counts and finds each parameter's range,
pass 2 (histograms) bins the values on edges fixed by that range.
"""
from __future__ import annotations

import collections
import dataclasses
import re
from typing import Iterable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpcore.result import FAILED, OK, SKIPPED

STATUS_ORDER = (OK, SKIPPED, FAILED)

# (name on the page, how to get it from a batch of "ok" rows). Derived
# quantities come last; nll per point compares series of unequal lengths.
QUANTITIES = ("mean", "amplitude", "length_scale", "period", "noise_variance",
              "nll per point", "n_points")

# A range this wide (max/min of positive values: about 1.5 decades) is binned
# and drawn on a log axis; on a linear one most values crowd the first bins.
LOG_SPAN = 30.0
MAX_BINS = 40
# Distinct reason patterns kept; beyond this, reasons are lumped together
# (a message quoting a series id would otherwise grow without bound).
MAX_REASONS = 10_000
OTHER_REASONS = "(other reasons)"

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def reason_pattern(message: Optional[str]) -> str:
    """A failure message with its numbers replaced by '#', so that
    'only 2 finite points' and 'only 1 finite points' count as one reason."""
    if not message:
        return "(no message)"
    return _NUMBER.sub("#", message.strip().splitlines()[0])


def quantity(batch: pa.RecordBatch, name: str) -> tuple[np.ndarray, np.ndarray]:
    """([rows] float64 values of one quantity, NaN where null; [rows] bool
    True where not null), so that nulls (not applicable, e.g. the period of
    an rbf fit) and NaN (a broken value) can be told apart."""
    if name == "nll per point":
        nll, nll_ok = _floats(batch, "nll")
        n, n_ok = _floats(batch, "n_points")
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n > 0, nll / n, np.nan), nll_ok & n_ok & (n > 0)
    return _floats(batch, name)


@dataclasses.dataclass
class Reason:
    status: str
    pattern: str
    count: int
    example: str


@dataclasses.dataclass
class _Range:
    count: int = 0  # finite values
    lo: float = np.inf
    hi: float = -np.inf
    nonfinite: int = 0  # non-null but NaN or inf

    def add(self, values: np.ndarray, nonnull: np.ndarray) -> None:
        finite = np.isfinite(values)
        self.nonfinite += int((nonnull & ~finite).sum())
        values = values[finite]
        if values.size:
            self.count += int(values.size)
            self.lo = min(self.lo, float(values.min()))
            self.hi = max(self.hi, float(values.max()))


class Tally:
    """Pass 1: counts by status, reasons, kernels, and parameter ranges."""

    def __init__(self):
        self.rows = 0
        self.status = collections.Counter()
        self.kernels = collections.Counter()
        self.converged = 0  # among "ok"
        self.reused = 0  # copied from the previous run (--previous_output)
        self.warm_started = 0  # fitted again, also from the previous parameters
        self.ranges = {name: _Range() for name in QUANTITIES}
        self._reasons: dict[tuple[str, str], list] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        status = batch.column("status")
        for item in pc.value_counts(status).to_pylist():
            self.status[item["values"] if item["values"] is not None else "(null)"] += item["counts"]
        for item in pc.value_counts(batch.column("kernel")).to_pylist():
            self.kernels[item["values"]] += item["counts"]
        ok = pc.fill_null(pc.equal(status, OK), False)
        good = batch.filter(ok)
        self.converged += int(pc.sum(pc.fill_null(good.column("converged"), False)).as_py() or 0)
        self.reused += _trues(batch, "reused")
        self.warm_started += _trues(batch, "warm_started")
        for name in QUANTITIES:
            self.ranges[name].add(*quantity(good, name))
        bad = batch.filter(pc.invert(ok))
        for status_, error in zip(bad.column("status").to_pylist(),
                                  bad.column("error").to_pylist()):
            self._count_reason(status_ or "(null)", error)

    def _count_reason(self, status: str, message: Optional[str]) -> None:
        key = (status, reason_pattern(message))
        entry = self._reasons.get(key)
        if entry is None:
            if len(self._reasons) >= MAX_REASONS:
                key = (status, OTHER_REASONS)
                entry = self._reasons.setdefault(key, [0, OTHER_REASONS])
            else:
                entry = self._reasons[key] = [0, message or "(no message)"]
        entry[0] += 1

    def reasons(self, top: int = 10) -> list[Reason]:
        """The `top` most common (status, reason) pairs, most common first."""
        ranked = sorted(self._reasons.items(), key=lambda kv: (-kv[1][0], kv[0]))
        return [Reason(status, pattern, count, example)
                for (status, pattern), (count, example) in ranked[:top]]

    def status_counts(self) -> list[tuple[str, int]]:
        """(status, count) with ok, skipped, failed first (even if 0)."""
        extra = sorted(s for s in self.status if s not in STATUS_ORDER)
        return [(s, self.status.get(s, 0)) for s in STATUS_ORDER + tuple(extra)]


@dataclasses.dataclass
class Histogram:
    """Counts of one quantity over the "ok" series.

    Attributes:
      edges: [bins + 1] bin edges; geometric when log is True.
      counts: [bins] series per bin.
      nonfinite: values that were NaN or inf (not binned).
    """

    name: str
    edges: np.ndarray
    counts: np.ndarray
    log: bool
    nonfinite: int

    @property
    def total(self) -> int:
        return int(self.counts.sum())


def histograms(tally: Tally, batches: Iterable[pa.RecordBatch]) -> list[Histogram]:
    """Pass 2: bins every quantity that has finite values, on edges from
    the ranges of pass 1."""
    hists = {}
    for name in QUANTITIES:
        r = tally.ranges[name]
        if r.count:
            edges, log = _edges(r.lo, r.hi, r.count)
            hists[name] = Histogram(name, edges, np.zeros(len(edges) - 1, np.int64), log,
                                    r.nonfinite)
    for batch in batches:
        good = batch.filter(pc.fill_null(pc.equal(batch.column("status"), OK), False))
        for name, hist in hists.items():
            values = quantity(good, name)[0]
            values = values[np.isfinite(values)]
            hist.counts += np.histogram(values, bins=hist.edges)[0]
    return list(hists.values())


def _edges(lo: float, hi: float, count: int) -> tuple[np.ndarray, bool]:
    bins = int(np.clip(2 * np.sqrt(count), 5, MAX_BINS))
    if hi == lo:  # a single value: one bin around it
        half = 0.5 * (abs(lo) or 1.0)
        return np.array([lo - half, hi + half]), False
    if lo > 0 and hi / lo >= LOG_SPAN:
        edges = np.geomspace(lo, hi, bins + 1)
        log = True
    else:
        edges = np.linspace(lo, hi, bins + 1)
        log = False
    edges[0], edges[-1] = lo, hi  # exactly: the extremes must land inside
    return edges, log


def _trues(batch: pa.RecordBatch, name: str) -> int:
    """Rows where a bool column is true (0 if the shard predates it)."""
    if name not in batch.schema.names:
        return 0
    return int(pc.sum(pc.fill_null(batch.column(name), False)).as_py() or 0)


def _floats(batch: pa.RecordBatch, name: str) -> tuple[np.ndarray, np.ndarray]:
    column = batch.column(name)
    if pa.types.is_null(column.type):
        return np.full(batch.num_rows, np.nan), np.zeros(batch.num_rows, bool)
    nonnull = pc.is_valid(column).to_numpy(zero_copy_only=False)
    values = pc.fill_null(pc.cast(column, pa.float64()), np.nan)
    return values.to_numpy(zero_copy_only=False).astype(np.float64), nonnull
