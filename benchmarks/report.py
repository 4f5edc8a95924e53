"""Turning contender runs into the benchmark's numbers, table and chart.

A row is one contender on one workload at one number of starts (R). Fit
quality is judged per series against scikit-learn at the same R:
gap = nll_ours - nll_sklearn (nats, raw units; lower nll is the better fit).
A series ours did not fit counts as gap = +inf.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

QUALITY_GAP = 0.01  # nats: far below any difference a user could see in a fit
QUALITY_SHARE = 0.995  # target on the synthetic workloads: this share within QUALITY_GAP


@dataclasses.dataclass
class Row:
    """One contender's measured run on one workload."""

    workload: str
    contender: str  # "gpcore" | "pipeline" | "pipeline-warm" | "sklearn" | "jax-cold" | "jax-warm"
    restarts: int
    series: int
    timed_s: float  # the span that series/s is computed from
    timed_span: str  # what timed_s covers, in words
    one_off_s: Optional[float]
    wall_s: float  # the whole process tree, start to exit
    tree_peak_mb: float
    largest_process_mb: float
    nll: dict  # series id -> nll, or None when not fitted
    info: dict = dataclasses.field(default_factory=dict)
    gaps: Optional[np.ndarray] = None  # vs sklearn at the same R, per series
    speedup: Optional[float] = None  # series/s over sklearn's at the same R

    @property
    def series_per_s(self) -> float:
        return self.series / self.timed_s if self.timed_s > 0 else math.nan

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["gaps"] = None if self.gaps is None else [
            None if not np.isfinite(g) else float(g) for g in self.gaps]
        out["series_per_s"] = self.series_per_s
        return out


def quality_gaps(ours: dict, sklearn: dict) -> np.ndarray:
    """[n] nll_ours - nll_sklearn over the series sklearn fitted; +inf where
    ours has no nll."""
    gaps = []
    for series_id, theirs in sklearn.items():
        if theirs is None:
            continue
        mine = ours.get(series_id)
        gaps.append(math.inf if mine is None else mine - theirs)
    return np.array(gaps, dtype=float)


def quality(gaps: np.ndarray) -> dict:
    """median, share <= QUALITY_GAP, worst, and whether the target is met."""
    if gaps.size == 0:
        return {"median": math.nan, "share_within": math.nan, "worst": math.nan, "met": False}
    share_within = float(np.mean(gaps <= QUALITY_GAP))
    return {"median": float(np.median(gaps)), "share_within": share_within,
            "worst": float(np.max(gaps)), "met": share_within >= QUALITY_SHARE}


def compare(rows: list[Row]) -> None:
    """Fills gaps and speedup of every row from the sklearn row of the same
    workload and R."""
    reference = {(r.workload, r.restarts): r for r in rows if r.contender == "sklearn"}
    for row in rows:
        ref = reference.get((row.workload, row.restarts))
        if ref is None or row.contender == "sklearn":
            continue
        row.gaps = quality_gaps(row.nll, ref.nll)
        row.speedup = row.series_per_s / ref.series_per_s


def _num(value, fmt: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–" if value is None or math.isnan(value) else ("inf" if value > 0 else "-inf")
    return format(value, fmt)


def _per_series(total, series):
    return None if total is None else total / max(series, 1)


ORDER = {"gpcore": 0, "pipeline": 1, "pipeline-warm": 2, "sklearn": 3, "jax-cold": 4,
         "jax-warm": 5}


def markdown(rows: list[Row]) -> str:
    """The results table, then the machine-limit table for gpcore rows."""
    rows = sorted(rows, key=lambda r: (r.workload, r.restarts, ORDER[r.contender]))
    lines = [
        "| workload | contender | R | series | series/s | × sklearn | timed span | "
        "one-off s | peak MB (tree) | peak MB (largest proc) | gap median | "
        f"within {QUALITY_GAP} nats | worst gap |",
        "|---|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        q = quality(r.gaps) if r.gaps is not None else None
        lines.append(" | ".join([
            f"| {r.workload}", r.contender, str(r.restarts), str(r.series),
            _num(r.series_per_s, ".1f" if r.series_per_s >= 1 else ".3f"),
            _num(r.speedup, ".2f") + ("×" if r.speedup is not None else ""),
            r.timed_span, _num(r.one_off_s, ".1f"),
            _num(r.tree_peak_mb, ".0f"), _num(r.largest_process_mb, ".0f"),
            _num(q and q["median"], ".2g") if q else "(reference)",
            (_num(100 * q["share_within"], ".1f") + " %" + (" ✓" if q["met"] else " ✗"))
            if q else "–",
            _num(q["worst"], ".3g") if q else "–",
        ]) + " |")
    core = [r for r in rows if r.contender == "gpcore"]
    if core:
        lines += [
            "",
            "gpcore against the machine's limit (float64; flops = Cholesky + inverse for "
            "the gradient + kernel matrix, per likelihood evaluation of every batch member, "
            "converged members included):",
            "",
            "| workload | R | batch | evaluations / series | iterations mean | GFLOP | fit s | "
            "fit CPU s | GFLOP/s | matmul GFLOP/s tf / numpy 1 thr / numpy 2 thr | "
            "fraction of peak | traces |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|",
        ]
        for r in core:
            i = r.info
            lines.append(" | ".join([
                f"| {r.workload}", str(r.restarts), str(i["config"]["batch_size"]),
                _num(_per_series(i.get("member_evaluations"), r.series), ".1f"),
                _num(i.get("iterations_mean"), ".1f"),
                _num(i.get("gflop"), ".1f"), _num(r.timed_s, ".1f"),
                _num(i.get("timing", {}).get("fit_cpu_s"), ".1f"), _num(i.get("gflops"), ".2f"),
                " / ".join(_num(i.get(k), ".1f") for k in (
                    "matmul_tf_gflops", "matmul_numpy_1thread_gflops",
                    "matmul_numpy_2thread_gflops")),
                _num(i.get("gflops") and i["gflops"] / i["matmul_peak_gflops"], ".1%"),
                str(i["traces"]),
            ]) + " |")
    return "\n".join(lines) + "\n"


def chart(rows: list[Row], path: str) -> None:
    """PNG: series/s bars (left) and the quality-gap distribution (right)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=lambda r: (r.workload, r.restarts, ORDER[r.contender]))
    colours = {"gpcore": "tab:blue", "pipeline": "tab:green", "pipeline-warm": "tab:olive",
               "sklearn": "tab:grey",
               "jax-cold": "tab:orange", "jax-warm": "tab:red"}
    fig, (bars, dist) = plt.subplots(1, 2, figsize=(13, 5))

    labels = [f"{r.workload} R={r.restarts}\n{r.contender}" for r in rows]
    x = np.arange(len(rows))
    bars.bar(x, [r.series_per_s for r in rows], color=[colours[r.contender] for r in rows])
    for xi, r in zip(x, rows):
        if r.speedup is not None:
            bars.annotate(f"{r.speedup:.2f}×", (xi, r.series_per_s), ha="center",
                          va="bottom", fontsize=8)
    bars.set_xticks(x, labels, fontsize=7, rotation=60, ha="right")
    bars.set_yscale("log")
    bars.set_ylabel("series / s (log)")
    bars.set_title("Throughput (× = over sklearn at the same R)")

    shades = {"gpcore": plt.get_cmap("Blues"), "pipeline": plt.get_cmap("Greens"),
              "pipeline-warm": plt.get_cmap("YlGn"),
              "jax-cold": plt.get_cmap("Oranges"), "jax-warm": plt.get_cmap("Reds")}
    for r in rows:
        if r.gaps is None or r.gaps.size == 0:
            continue
        g = np.sort(np.where(np.isfinite(r.gaps), r.gaps, 1e3))  # not fitted: far right
        # Plotting positions (i - 1/2) / n stay inside (0, 1) for the logit axis.
        dist.step(g, (np.arange(1, g.size + 1) - 0.5) / g.size, where="post",
                  color=shades[r.contender](min(0.45 + 0.2 * r.restarts, 1.0)),
                  # gpcore's and the pipeline's gaps often coincide: both stay visible.
                  linewidth=3.0 if r.contender == "gpcore" else 1.2,
                  linestyle={"a": "-", "b": "--", "c": ":"}.get(r.workload, "-"),
                  label=f"{r.workload} R={r.restarts} {r.contender}")
    dist.axvline(QUALITY_GAP, color="red", linewidth=0.8)
    dist.axhline(QUALITY_SHARE, color="red", linewidth=0.8)
    dist.set_xscale("symlog", linthresh=1e-3)
    dist.set_xlabel("nll_ours − nll_sklearn per series (nats; < 0: ours fits better)")
    dist.set_yscale("logit")  # spreads out the tail near 1, where the target is
    dist.set_ylabel("share of series ≤ x (logit scale)")
    dist.set_title(f"Fit quality (target: ≥ {QUALITY_SHARE:.1%} left of {QUALITY_GAP})")
    dist.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
