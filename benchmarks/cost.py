"""What a fit costs per kernel, measured: the calibration of gpcore.batching.

For each kernel named (a kernel string passes straight to gpcore.FitConfig;
one this checkout does not know is skipped with a line saying so), the
script forms fit calls from real series exactly as the pipeline does
(pipeline.transforms.BatchByLength over one bundle, with gpcore.batching's
estimate and --seconds_per_fit_call), fits each call with one GPFitter (or a
KernelChoice for "auto") on one TensorFlow thread, and records per call the
series' lengths, the estimated core-seconds, the CPU and wall seconds, and
the fitter's work counters (Newton evaluations, grid values, starts).

Series: benchmarks/realdata.py's quality set and benchmarks/seasonal.py's
set (never a held-out set), `--count` of each spread over the set; for
gpcore.batching's FLOOR_SECONDS, `--sets short` (realdata.py's series
under SHORT_BELOW points) and, as their check, `generated-short`
(`generated_short`: drawn series of 8-40 points that no figure used).

It prints, per kernel and set: Newton evaluations per series and per start
(over gpcore.batching.expected_starts), grid values per series, CPU ms per
series, mean length, the share stopped at max_iterations, `cpu/model` (CPU
over the flop model's seconds at the measured evaluations: what the flop
count misses, such as the periodic kernel's sin) and the fit calls' CPU
seconds against their estimate (median and largest ratio, with this
checkout's figures and as recorded when measured; the largest call).

  python benchmarks/cost.py --count 16 --out benchmarks/results/cost.json
  python benchmarks/cost.py --model benchmarks/results/cost.json

`--model FILE` refits nothing: it re-estimates the recorded calls with this
checkout's gpcore.batching (after a recalibration) and prints the table;
under auto with each series' recorded screen answer (`periodic`, what
Batching.cost_of charged), where the record has one, and each series'
recorded roughness (`rough`, gpcore.batching.is_rough; none where the
record has no answer).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

KERNELS = ("rbf", "matern12", "matern32", "matern52", "periodic", "rbf+periodic",
           "matern52+periodic", "linear+rbf", "linear+rbf+periodic")


# Series this short cost the fixed work of their compiled batches, not their
# flops ("short": the calibration set; "generated-short": the proof, never
# used for the figures).
SHORT_BELOW = 48


def generated_short(count: int = 320, seed: int = 0) -> list:
    """`count` series of 8-40 irregular points (deterministic): a smooth
    draw (rbf, length 0.5-3 of a span of 10) with noise 0.2, half of them
    plus a sine of period 1-3, around 5."""
    import numpy as np
    from gpcore import Series
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(8, 41))
        t = np.sort(rng.uniform(0.0, 10.0, n))
        scale = rng.uniform(0.5, 3.0)
        k = np.exp(-0.5 * np.subtract.outer(t, t) ** 2 / scale ** 2) + 1e-6 * np.eye(n)
        y = 5.0 + np.linalg.cholesky(k) @ rng.standard_normal(n) + 0.2 * rng.standard_normal(n)
        if i % 2:
            y = y + np.sin(2.0 * np.pi * t / rng.uniform(1.0, 3.0))
        out.append(Series(series_id=f"short/{i}", t=t, y=y))
    return out


def _sets(count: int | None, names: list[str]) -> dict:
    import realdata
    import seasonal
    build = {"realdata": lambda: realdata.real_series(),
             "seasonal": lambda: [c.series for c in seasonal.cases()],
             "short": lambda: [s for s in realdata.real_series() if len(s.t) < SHORT_BELOW],
             "generated-short": generated_short}
    return {name: realdata.spread(build[name](), count) for name in names}


def _calls(series: list, batching) -> list:
    """The fit calls BatchByLength forms from `series` in one bundle, as
    lists of series."""
    from pipeline.transforms import BatchByLength
    dofn = BatchByLength(batching)
    dofn.start_bundle()
    calls = [call for s in series for call in dofn.process(s)]
    return [call.series for call in calls + [w.value for w in dofn.finish_bundle()]]


def _work(fitter) -> dict:
    return dict(fitter.work)


def _fits(kernel: str, config, series) -> bool:
    """Whether auto (config) fits `series` with candidate `kernel`: every
    series, but a periodic candidate only those its screen passes."""
    from gpcore.choice import fits_periodic
    from gpcore.kernels import kernel as kernel_named
    return not kernel_named(kernel).has_period or fits_periodic(config, series)


def _estimate(batching, lengths: list, periodic: list | None, rough: list | None = None) -> float:
    """A recorded call's estimate: its series' lengths and, under auto,
    whether auto fitted its periodic candidates on each (None: a record
    from before they were kept, charged as that checkout did), and whether
    each is rough (gpcore.batching.is_rough; None: a record from before,
    none)."""
    return sum(batching.cost(n, p, bool(q)) for n, p, q in zip(
        lengths, periodic or [None] * len(lengths), rough or [False] * len(lengths)))


def measure(kernel: str, sets: dict, seconds_per_call: float) -> list[dict] | None:
    """Records of every fit call of `kernel` over the sets; None if gpcore
    does not know the kernel."""
    import numpy as np
    from gpcore import Batching, FitConfig, build_fitter
    from gpcore.batching import is_rough
    from gpcore.choice import fits_periodic, work_by_kernel
    from gpcore.config import fitted_configs
    try:
        config = FitConfig(kernel=kernel)
    except ValueError as err:
        print(f"{kernel}: skipped ({err})", flush=True)
        return None
    fitter = build_fitter(config)
    warm = next(iter(sets.values()))[:2]
    fitter.fit(warm)  # build and trace apart from the measurement
    batching = Batching(config, seconds_per_call)
    limits = [c.max_iterations for c in fitted_configs(config)]
    records = []
    for name, series in sets.items():
        for call in _calls(series, batching):
            before, before_each = _work(fitter), work_by_kernel(fitter)
            wall, cpu = time.perf_counter(), time.process_time()
            results = fitter.fit(call)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            work = {k: fitter.work[k] - before[k] for k in before}
            # Under auto each candidate's share, and the series it fitted
            # (a periodic candidate: those the screen passes).
            each = {k: {"series": sum(_fits(k, config, s) for s in call),
                        **{key: v - before_each[k][key] for key, v in w.items()}}
                    for k, w in work_by_kernel(fitter).items()} if config.kernel == "auto" else {}
            records.append({
                "kernel": kernel, "set": name, "lengths": [int(np.size(s.t)) for s in call],
                "estimated_s": sum(batching.cost_of(s) for s in call),
                **({"periodic": [fits_periodic(config, s) for s in call]}
                   if config.kernel == "auto" else {}),
                "rough": [is_rough(s) for s in call],
                "cpu_s": round(cpu, 4), "wall_s": round(wall, 4),
                "at_max_iterations": sum(r.iterations >= min(limits) and r.stop_reason
                                         == "max_iterations" for r in results),
                **({"per_kernel": each} if each else {}),
                **{k: (round(v, 1) if isinstance(v, float) else v) for k, v in work.items()}})
            print(f"  {kernel} {name}: {len(call)} series, estimated {records[-1]['estimated_s']:.1f}"
                  f" s, CPU {cpu:.1f} s", flush=True)
    return records


def table(records: list[dict]) -> str:
    """The per-kernel table of the records, estimates from this checkout."""
    import numpy as np
    from gpcore import Batching, FitConfig
    from gpcore.batching import FLOPS_PER_SECOND, expected_starts
    from gpcore.config import fitted_configs
    head = ("| kernel | set | series | mean n | Newton ev. / series | / start | grid / series "
            "| CPU ms / series | cpu/model | at max_iter | calls | CPU/estimate median, max "
            "| ... as recorded | largest call CPU s |"
            "\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    lines = [head]
    keys = sorted({(r["kernel"], r["set"]) for r in records}, key=lambda k: (
        KERNELS.index(k[0]) if k[0] in KERNELS else len(KERNELS), k[0], k[1]))
    for kernel, name in keys:
        rows = [r for r in records if (r["kernel"], r["set"]) == (kernel, name)]
        config = FitConfig(kernel=kernel)
        batching = Batching(config)
        n = sum(len(r["lengths"]) for r in rows)
        starts = sum(expected_starts(c.kernel, c.restarts)
                     for c in fitted_configs(config)) / len(fitted_configs(config))
        evaluations = sum(r["member_evaluations"] for r in rows)
        model_s = sum(r["flops"] for r in rows) / FLOPS_PER_SECOND
        cpu = sum(r["cpu_s"] for r in rows)
        ratios = [r["cpu_s"] / _estimate(batching, r["lengths"], r.get("periodic"), r.get("rough"))
                  for r in rows]
        recorded = [r["cpu_s"] / r["estimated_s"] for r in rows]  # the measuring checkout's
        per_model = len(fitted_configs(config))
        lines.append(
            f"| {kernel} | {name} | {n} | {np.mean([k for r in rows for k in r['lengths']]):.0f} "
            f"| {evaluations / n:.1f} | {evaluations / n / per_model / starts:.1f} "
            f"| {sum(r['grid_evaluations'] for r in rows) / n:.0f} | {1000 * cpu / n:.0f} "
            f"| {cpu / model_s:.2f} | {sum(r['at_max_iterations'] for r in rows)} | {len(rows)} "
            f"| {np.median(ratios):.2f}, {max(ratios):.2f} "
            f"| {np.median(recorded):.2f}, {max(recorded):.2f} | {max(r['cpu_s'] for r in rows):.1f} |")
        lines += _candidate_rows(config, name, rows)
    return "\n".join(lines)


def _candidate_rows(config, name: str, rows: list[dict]) -> list[str]:
    """Under auto, a row per candidate: the series it fitted (a periodic
    candidate: those the screen passes), its Newton evaluations per such
    series and per start (over its expected_starts), and its flop model's
    seconds; the CPU seconds are the calls' (not split by candidate)."""
    from gpcore.batching import FLOPS_PER_SECOND, expected_starts
    from gpcore.config import fitted_configs
    out = []
    for c in fitted_configs(config):
        parts = [r["per_kernel"][c.kernel_name] for r in rows if c.kernel_name in r.get("per_kernel", {})]
        n = sum(p["series"] for p in parts)
        if not n:
            continue
        evaluations = sum(p["member_evaluations"] for p in parts)
        starts = expected_starts(c.kernel, c.restarts)
        out.append(f"| auto: {c.kernel}{'' if c.jumps else ' (no jumps)'} | {name} | {n} | "
                   f"| {evaluations / n:.1f} | {evaluations / n / starts:.1f} "
                   f"| {sum(p['grid_evaluations'] for p in parts) / n:.0f} | "
                   f"model {sum(p['flops'] for p in parts) / FLOPS_PER_SECOND / n * 1000:.0f} "
                   "| | | | | | |")
    return out


def keep_records(path: str, records: list[dict]) -> None:
    """Writes the calls recorded so far, with the command, as JSON to path
    (what `--model FILE` re-estimates)."""
    with open(path, "w") as f:
        json.dump({"command": " ".join(sys.argv), "calls": records}, f)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/cost.py", description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", default=",".join(KERNELS),
                        help="comma-separated kernel strings (auto allowed)")
    parser.add_argument("--count", type=int, default=16, help="series per set, spread over it")
    parser.add_argument("--sets", default="realdata,seasonal",
                        help="comma-separated: realdata (benchmarks/realdata.py), seasonal, short "
                        "(realdata's series under SHORT_BELOW points), generated-short "
                        "(generated_short: the short figures' proof)")
    parser.add_argument("--seconds_per_fit_call", type=float, default=15.0)
    parser.add_argument("--out", default=None, help="JSON file for the call records")
    parser.add_argument("--model", default=None,
                        help="re-estimate the calls recorded in this JSON file; fit nothing")
    args = parser.parse_args(argv)
    if args.model:
        with open(args.model) as f:
            print(table(json.load(f)["calls"]))
        return 0
    from gpcore.threads import configure_threads, skip_graph_rewrites
    configure_threads(1, 1)  # one core per fitter, as gpfit's workers run
    skip_graph_rewrites()
    sets = _sets(args.count, args.sets.split(","))
    records: list[dict] = []
    for kernel in args.kernels.split(","):
        measured = measure(kernel, sets, args.seconds_per_fit_call)
        if measured is None:
            continue
        records += measured
        if args.out:  # after every kernel: a long run's finished part is kept
            keep_records(args.out, records)
    print(table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
