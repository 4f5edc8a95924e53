"""KernelChoice: kernel "auto", one GPFitter per candidate kernel and, per
series, the fit with the lowest BIC.

BIC = 2 nll + k log n penalises a sum's extra parameters, so a periodic
component is kept only where the likelihood gain pays for its three
parameters (docs/design.md, "Kernel choice"). Each candidate's fitter is
built once and traced once, like any GPFitter; the candidates fit the same
batches one after another.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from gpcore.config import AUTO, FitConfig, fitted_configs
from gpcore.fitter import GPFitter, summed_work
from gpcore.result import OK, FitResult
from gpcore.series import Series


class KernelChoice:
    """Fits every candidate of config (kernel "auto") and keeps, per series,
    the lowest BIC; `bic_margin` is the runner-up's BIC minus the choice's."""

    def __init__(self, config: FitConfig):
        if config.kernel != AUTO:
            raise ValueError(f"KernelChoice needs kernel {AUTO!r}; got {config.kernel!r}")
        self.config = config
        self.fitters = [GPFitter(candidate, name=f"fitter_{i}")
                        for i, candidate in enumerate(fitted_configs(config))]

    @property
    def tracing_count(self) -> int:
        """Total traces of the candidates' compiled fits (one each)."""
        return sum(f.tracing_count for f in self.fitters)

    @property
    def work(self) -> dict:
        """The candidates' work counters, summed."""
        return summed_work(self.fitters)

    def fit(self, series: Sequence[Series]) -> list[FitResult]:
        """One FitResult per series, in order: the chosen candidate's, or
        (no candidate fitted) the first candidate's reason under "auto"."""
        per_candidate = [f.fit(series) for f in self.fitters]
        return [_choose([fits[i] for fits in per_candidate]) for i in range(len(series))]


def _choose(fits: list[FitResult]) -> FitResult:
    ranked = sorted((r for r in fits if r.status == OK), key=lambda r: r.bic)
    if not ranked:
        return dataclasses.replace(fits[0], kernel=AUTO)
    best = ranked[0]
    margin = ranked[1].bic - best.bic if len(ranked) > 1 else None
    return dataclasses.replace(best, bic_margin=margin)


def work_by_kernel(fitter) -> dict[str, dict]:
    """{kernel: the `work` counters of its GPFitters, summed} of a
    build_fitter fitter: one kernel for a GPFitter, each candidate's under
    "auto", the copies' summed under SideBySide."""
    inner = getattr(fitter, "fitters", None)
    if inner is None:
        return {fitter.config.kernel: dict(fitter.work)}
    merged: dict[str, dict] = {}
    for part in inner:
        for kernel, work in work_by_kernel(part).items():
            into = merged.setdefault(kernel, dict.fromkeys(work, 0))
            for key, value in work.items():
                into[key] += value
    return merged


def build_fitter(config: FitConfig, copies: int = 1):
    """The fitter for config: a GPFitter, or a KernelChoice under "auto";
    with copies > 1, that many of them side by side on threads (SideBySide),
    for a process with as many cores."""
    build = lambda k: (KernelChoice(config) if config.kernel == AUTO
                       else GPFitter(config, name="gp_fitter" + (f"_{k}" if k else "")))
    if copies <= 1:
        return build(0)
    from gpcore.side_by_side import SideBySide
    return SideBySide([build(k) for k in range(copies)])
