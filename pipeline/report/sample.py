"""Which series to plot: the named ones, the worst fits, and a random few.

One pass over the parameter batches keeps only the current candidates
(at most `random + worst + len(named)` rows), whatever the run's size.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpcore.result import OK
from pipeline.report.summary import HOLDOUT_MASE, STANDARDISED_NLL, quantity

NAMED, WORST, RANDOM = "named", "worst", "random"


@dataclasses.dataclass
class Pick:
    """A series to plot.

    Attributes:
      row: its params row (a dict with the output columns).
      reasons: why it was picked, e.g. ["named", "worst #2 by holdout_mase"].
    """

    row: dict
    reasons: list[str]

    @property
    def series_id(self) -> str:
        return self.row["series_id"]


class Sampler:
    """Keeps the named series, the `worst` fitted series, and `random`
    fitted series drawn uniformly.

    The worst are ranked by a measure that does not depend on the units of
    y, so that on mixed data the worst fits come first, not the series with
    the largest values: the backtest's holdout_mase where the run has one
    (--holdout), else the standardised nll per point (summary.standardised_nll).

    The random draw gives every series a uniform key, a hash of its id and
    `seed`, and keeps the smallest keys: the same seed and the same params
    give the same series, in whatever order and shards a run wrote its rows
    (worker processes and bundles decide those). Ties, among the worst,
    go to the smaller id.
    """

    def __init__(self, named: Sequence[str] = (), random: int = 0, worst: int = 0,
                 seed: int = 0):
        if random < 0 or worst < 0:
            raise ValueError(f"random and worst must be >= 0; got {random}, {worst}")
        self.named = list(dict.fromkeys(str(s) for s in named))  # unique, in order
        self.n_random, self.n_worst = int(random), int(worst)
        self._seed = int(seed)
        self.measure = None  # what the worst are ranked by, once a batch is seen
        self._named: dict[str, dict] = {}
        self._random: list[tuple[float, str, dict]] = []  # (key, id, row)
        self._worst: list[tuple[float, str, dict]] = []  # (-score, id, row)
        self._named_set = pa.array(self.named, pa.string())

    def add(self, batch: pa.RecordBatch) -> None:
        if self.named:
            hit = pc.fill_null(pc.is_in(batch.column("series_id"), value_set=self._named_set),
                               False)
            for row in batch.filter(hit).to_pylist():
                self._named.setdefault(row["series_id"], row)
        ok = pc.fill_null(pc.equal(batch.column("status"), OK), False)
        ok = ok.to_numpy(zero_copy_only=False)
        if self.n_random:
            keys = np.full(batch.num_rows, np.inf)
            keys[ok] = draws(batch.column("series_id").filter(pa.array(ok)).to_pylist(),
                             self._seed)
            self._random = _keep_smallest(self._random, keys, ok, batch, self.n_random)
        if self.n_worst:
            measure = HOLDOUT_MASE if (self.measure == HOLDOUT_MASE or _has_mase(batch)) \
                else STANDARDISED_NLL
            if measure != self.measure:
                # A backtest's MASE outranks the fit's own measure: one ranking per run.
                self._worst, self.measure = [], measure
            score = quantity(batch, measure)[0]
            fine = ok & np.isfinite(score)
            self._worst = _keep_smallest(self._worst, -score, fine, batch, self.n_worst)

    def missing(self) -> list[str]:
        """Named series that are not in the params."""
        return [name for name in self.named if name not in self._named]

    def picks(self) -> list[Pick]:
        """Named first (in the order given), then the worst (worst first),
        then the random ones; a series picked twice appears once."""
        picks: dict[str, Pick] = {}

        def pick(row, reason):
            entry = picks.setdefault(row["series_id"], Pick(row, []))
            entry.reasons.append(reason)

        for name in self.named:
            if name in self._named:
                pick(self._named[name], NAMED)
        for rank, (_, _, row) in enumerate(sorted(self._worst, key=lambda e: e[:2]), 1):
            pick(row, f"{WORST} #{rank} by {self.measure}")
        for _, _, row in sorted(self._random, key=lambda e: e[:2]):
            pick(row, RANDOM)
        return list(picks.values())


def _has_mase(batch: pa.RecordBatch) -> bool:
    return (HOLDOUT_MASE in batch.schema.names
            and batch.column(HOLDOUT_MASE).null_count < batch.num_rows)


def draws(series_ids: Sequence[str], seed: int) -> np.ndarray:
    """[len(series_ids)] uniform keys in [0, 1), each a function of its id
    and seed only (blake2b, not Python's hash, which changes per process)."""
    # The seed hashed to a key: blake2b takes keys of at most 64 bytes, and
    # --seed any non-negative integer.
    salt = hashlib.blake2b(str(seed).encode(), digest_size=32).digest()
    return np.array([int.from_bytes(hashlib.blake2b(str(sid).encode(), digest_size=8,
                                                    key=salt).digest(), "big") >> 11
                     for sid in series_ids], dtype=np.float64) * 2.0 ** -53


def _keep_smallest(kept, key, eligible, batch, n):
    """Merges the batch's n smallest eligible keys into `kept` (n at most),
    ties to the smaller id, so the choice depends on neither row order nor
    batching."""
    index = np.flatnonzero(eligible)
    if index.size > n:
        nth = np.partition(key[index], n - 1)[n - 1]
        index = index[key[index] <= nth]  # the n smallest, and any tied with the n-th
    if not index.size:
        return kept
    rows = batch.take(pa.array(index)).to_pylist()
    merged = kept + [(float(key[i]), row["series_id"] or "", row) for i, row in zip(index, rows)]
    merged.sort(key=lambda e: e[:2])
    return merged[:n]
