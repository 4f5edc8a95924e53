"""What a whole run looks like: counts, failure reasons, parameter histograms,
and under --kernel auto which kernel the series chose.

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

from gpcore.kernels import LINEAR, kernel as kernel_named
from gpcore.result import COMPONENT_FIELDS, FAILED, OK, SKIPPED
from pipeline.io import holdout_totals
from pipeline.io.schema import named

STATUS_ORDER = (OK, SKIPPED, FAILED)

# Quantities of every "ok" row, from its flat columns; nll per point
# compares series of unequal lengths; bic_margin is null unless --kernel
# auto. The kernels' own parameters come from `components` (see
# component_quantities) and are shown between mean and noise_variance: the
# flat amplitude, length_scale and period are null for sums.
QUANTITIES = ("mean", "noise_variance", "nll per point", "n_points", "bic_margin",
              "holdout_mase")
MARGIN = "bic_margin"
# The report's unit-free ranking of fits without a backtest (standardised_nll).
STANDARDISED_NLL = "standardised nll per point"
HOLDOUT_MASE = "holdout_mase"
# The backtest's columns (--holdout), null without one.
HOLDOUT = named("holdout_points", "holdout_coverage_95", HOLDOUT_MASE)
# Quantities drawn in sections of their own, not among the fitted parameters.
SECTIONED = (MARGIN, HOLDOUT_MASE)
# The columns the quantities are read from.
COLUMNS = named("status", "kernel", "components", "mean", "noise_variance", "nll", "n_points",
                MARGIN, *HOLDOUT)
# A BIC margin below this is weak evidence (Kass and Raftery's 2): either
# kernel would do for that series.
CLOSE_CALL = 2.0

# A range this wide (max/min of positive values: about 1.5 decades) is binned
# and drawn on a log axis; on a linear one most values crowd the first bins.
LOG_SPAN = 30.0
MAX_BINS = 40
# Distinct reason patterns kept; beyond this, reasons are lumped together
# (a message quoting a series id would otherwise grow without bound).
MAX_REASONS = 10_000
OTHER_REASONS = "(other reasons)"

# Not after a letter, digit or underscore: the digits of a name (log1p,
# matern52, --max_points) are part of it, not a count.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def reason_pattern(message: Optional[str]) -> str:
    """A failure message with its numbers replaced by '#', so that
    'too few finite points: 2' and 'too few finite points: 1' count as one reason."""
    if not message:
        return "(no message)"
    return _NUMBER.sub("#", message.strip().splitlines()[0])


def quantity(batch: pa.RecordBatch, name: str) -> tuple[np.ndarray, np.ndarray]:
    """([rows] float64 values of one quantity, NaN where null; [rows] bool
    True where not null), so that nulls (not applicable, e.g. the period of
    an rbf fit) and NaN (a broken value) can be told apart."""
    if name == STANDARDISED_NLL:
        return standardised_nll(batch)
    if name == "nll per point":
        nll, nll_ok = _floats(batch, "nll")
        n, n_ok = _floats(batch, "n_points")
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n > 0, nll / n, np.nan), nll_ok & n_ok & (n > 0)
    return _floats(batch, name)


def spread_variance(noise: float, parts) -> float:
    """A row's noise variance `noise` plus its stationary components'
    amplitude^2 (a linear part's amplitude is a slope: left out), added in
    that order; parts: its `components` (None: none). numpy's square: an
    amplitude past 1.3e154 gives inf, where Python's ** raised OverflowError."""
    total = noise
    for part in parts or ():
        if part.get("kernel") != LINEAR.name and part.get("amplitude") is not None:
            with np.errstate(over="ignore"):
                total += np.float64(part["amplitude"]) ** 2
    return total


def standardised_nll(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
    """Per row, nll per point less log(s), s the fitted sd of a new
    observation far from the data: sqrt(noise_variance + the stationary
    components' amplitude^2; a linear part, whose amplitude is a slope, is
    left out). Scaling y by c adds log c to both terms, so it does not
    depend on y's units, unlike nll per point, which ranks the series with
    the largest values worst. Same returns as quantity()."""
    per_point, ok = quantity(batch, "nll per point")
    noise, noise_ok = _floats(batch, "noise_variance")
    variance = np.where(noise_ok, noise, np.nan)
    if "components" in batch.schema.names:
        for i, parts in enumerate(batch.column("components").to_pylist()):
            variance[i] = spread_variance(variance[i], parts)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = per_point - 0.5 * np.log(variance)
    return value, ok & noise_ok & (variance > 0)


def component_quantities(good: pa.RecordBatch) -> dict[str, tuple[np.ndarray, np.ndarray, tuple]]:
    """The kernel parameters of "ok" rows, from `components`, per row kernel
    and component: {label: ([rows] float64 values, NaN where not set; [rows]
    bool, True where set; a sort key: row kernel, component, parameter)}.
    Labels name the parameter and the component, e.g. "length_scale (rbf)"
    for an rbf fit, "period (periodic in rbf+periodic)" for a sum's seasonal
    part, "length_scale (rbf #2 in rbf+rbf)"."""
    found = {}
    kernels = good.column("kernel")
    components = good.column("components")
    sizes = pc.fill_null(pc.list_value_length(components), 0)
    for name in pc.unique(kernels).drop_null().to_pylist():
        mine = pc.fill_null(pc.equal(kernels, name), False)
        listed = components.filter(pc.and_(mine, pc.is_valid(components)))
        if not len(listed) or not listed[0].as_py():
            continue
        parts = [c["kernel"] for c in listed[0].as_py()]
        # Rows of one kernel have one component per kernel of its sum; a row
        # that does not is left out rather than misread.
        mine = pc.and_(mine, pc.equal(sizes, len(parts)))
        rows = np.flatnonzero(mine.to_numpy(zero_copy_only=False))
        for i, part in enumerate(parts):
            element = pc.list_element(components.filter(mine), i)
            for order, parameter in enumerate(_parameters(part)):
                field = pc.struct_field(element, parameter)
                values = np.full(good.num_rows, np.nan)
                values[rows] = pc.fill_null(field, np.nan).to_numpy(zero_copy_only=False)
                nonnull = np.zeros(good.num_rows, bool)
                nonnull[rows] = pc.is_valid(field).to_numpy(zero_copy_only=False)
                found[_label(parameter, name, parts, i)] = (values, nonnull, (name, i, order))
    return found


def _label(parameter: str, kernel: str, parts: list[str], i: int) -> str:
    if len(parts) == 1:
        return f"{parameter} ({parts[0]})"
    number = f" #{i + 1}" if parts.count(parts[i]) > 1 else ""
    return f"{parameter} ({parts[i]}{number} in {kernel})"


def _parameters(part: str) -> tuple[str, ...]:
    """amplitude and a component kernel's shape parameters (all the fields
    for a kernel this gpcore does not know)."""
    try:
        return ("amplitude", *kernel_named(part).parameters)
    except ValueError:
        return COMPONENT_FIELDS[1:]


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
    """Pass 1: counts by status, reasons, kernels (and, under --kernel auto,
    the kernels chosen), and the ranges of every quantity."""

    def __init__(self):
        self.rows = 0
        self.status = collections.Counter()
        self.kernels = collections.Counter()
        self.converged = 0  # among "ok"
        self.reused = 0  # copied from the previous run (--previous_output)
        self.warm_started = 0  # fitted again, also from the previous parameters
        self.ranges = {name: _Range() for name in QUANTITIES}  # and component labels
        self.ok_kernels = collections.Counter()  # "ok" rows by kernel
        self.chosen = collections.Counter()  # "ok" rows with a bic_margin, by kernel
        self.close_calls = collections.Counter()  # of those, margin below CLOSE_CALL
        # Of those, a negative margin: a periodic candidate had the lower BIC
        # but not by PERIODIC_MARGIN (gpcore.choice.choose_fit).
        self.negative_margins = 0
        self._order: dict[str, tuple] = {}  # component label -> sort key
        self._reasons: dict[tuple[str, str], list] = {}
        # The backtest's totals, as the job's manifest sums them (one
        # definition of the median and the pooled coverage for both).
        self._holdout = holdout_totals.create()

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
        for label, (values, nonnull, key) in component_quantities(good).items():
            self._order[label] = key
            self.ranges.setdefault(label, _Range()).add(values, nonnull)
        margin, chose = quantity(good, MARGIN)
        kernels = np.asarray(good.column("kernel").to_pylist(), dtype=object)
        self.ok_kernels.update(kernels.tolist())
        self.chosen.update(kernels[chose].tolist())
        self.close_calls.update(kernels[chose & (margin < CLOSE_CALL)].tolist())
        self.negative_margins += int(np.sum(chose & (margin < 0)))
        if HOLDOUT_MASE in good.schema.names:  # shards before --holdout lack it
            for row in good.select(list(HOLDOUT)).to_pylist():
                holdout_totals.add(self._holdout, row)
        bad = batch.filter(pc.invert(ok))
        for status_, error in zip(bad.column("status").to_pylist(),
                                  bad.column("error").to_pylist()):
            self._count_reason(status_ or "(null)", error)

    def _count_reason(self, status: str, message: Optional[str]) -> None:
        key = (status, reason_pattern(message))
        message = message or "(no message)"
        entry = self._reasons.get(key)
        if entry is None:
            if len(self._reasons) >= MAX_REASONS:
                key = (status, OTHER_REASONS)
                entry = self._reasons.setdefault(key, [0, OTHER_REASONS])
            else:
                entry = self._reasons[key] = [0, message]
        elif entry[1] != OTHER_REASONS:
            # The least message as the example, not the first row's: a
            # rerun writes its rows in another order.
            entry[1] = min(entry[1], message)
        entry[0] += 1

    def reasons(self, top: int = 10) -> list[Reason]:
        """The `top` most common (status, reason) pairs, most common first."""
        ranked = sorted(self._reasons.items(), key=lambda kv: (-kv[1][0], kv[0]))
        return [Reason(status, pattern, count, example)
                for (status, pattern), (count, example) in ranked[:top]]

    def left_out(self, top: int = 10) -> tuple[int, int]:
        """(reasons, series) beyond the `top` most common: what a table of
        reasons(top) does not show."""
        counts = sorted((entry[0] for entry in self._reasons.values()), reverse=True)[top:]
        return len(counts), sum(counts)

    def holdout(self) -> Optional[dict]:
        """With --holdout: {series, points, mase_mean, mase_median (within
        2 %), coverage_95 (over all held-out points)}, as in the manifest,
        and mase_series: the series of them with a MASE, which the mean and
        median are over; None when no series has a backtest."""
        found = holdout_totals.extract(self._holdout)
        return found and {**found, "mase_series": self._holdout["mase_n"]}

    def quantity_names(self) -> list[str]:
        """Every quantity seen, in page order: mean, the kernels' parameters
        (by kernel, component, parameter), noise_variance, the rest."""
        return [QUANTITIES[0], *sorted(self._order, key=self._order.get), *QUANTITIES[1:]]

    def kernel_counts(self) -> list[tuple[str, int]]:
        """(kernel, rows), most rows first, equal counts by name."""
        return sorted(self.kernels.items(), key=lambda kv: (-kv[1], kv[0]))

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
    the ranges of pass 1, in the order of Tally.quantity_names."""
    hists = {}
    for name in tally.quantity_names():
        r = tally.ranges[name]
        if r.count:
            edges, log = _edges(r.lo, r.hi, r.count)
            hists[name] = Histogram(name, edges, np.zeros(len(edges) - 1, np.int64), log,
                                    r.nonfinite)
    for batch in batches:
        good = batch.filter(pc.fill_null(pc.equal(batch.column("status"), OK), False))
        parts = component_quantities(good)
        for name, hist in hists.items():
            if name in parts:
                values = parts[name][0]
            elif name in QUANTITIES:
                values = quantity(good, name)[0]
            else:  # a kernel with no rows in this batch
                continue
            values = values[np.isfinite(values)]
            hist.counts += np.histogram(values, bins=hist.edges)[0]
    return list(hists.values())


def _edges(lo: float, hi: float, count: int) -> tuple[np.ndarray, bool]:
    bins = int(np.clip(2 * np.sqrt(count), 5, MAX_BINS))
    if hi == lo:  # a single value: one bin around it
        half = 0.5 * (abs(lo) or 1.0)
        with np.errstate(over="ignore"):
            edges = np.array([lo - half, hi + half])
        # Near float64's largest (a MASE of held-out missing-value codes) a
        # side past it is inf: the bin ends at the value there.
        return np.where(np.isfinite(edges), edges, lo), False
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
    if name not in batch.schema.names:  # a shard from before the column
        return np.full(batch.num_rows, np.nan), np.zeros(batch.num_rows, bool)
    column = batch.column(name)
    if pa.types.is_null(column.type):
        return np.full(batch.num_rows, np.nan), np.zeros(batch.num_rows, bool)
    nonnull = pc.is_valid(column).to_numpy(zero_copy_only=False)
    values = pc.fill_null(pc.cast(column, pa.float64()), np.nan)
    return values.to_numpy(zero_copy_only=False).astype(np.float64), nonnull
