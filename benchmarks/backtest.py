"""gpfit --holdout on real series: the job's backtest against gpcore's own
fit-and-predict of the same split, and what the backtest costs.

    python benchmarks/backtest.py [--split tune|holdout|all] [--holdout K] [--kernel K]

The series are benchmarks/forecast.py's cases: each its training part and
the first K of its held-out points, written as one long Parquet file (t as
given). gpfit runs twice through its CLI on the local runner, with
`--holdout K --predict_steps K --predict_levels 80,95` and with
`--predict_steps K` alone; the reference is gpcore's build_fitter on the
training parts and gpcore.calibration's forecast at the K times
(benchmarks/forecast.py's run_gpfit path), scored with
pipeline.backtest.scores. Prints a Markdown table: series scored, mean
and median MASE (one-step naive scale), 95 % coverage, the largest
|MASE difference| job against reference, and the
wall seconds of each gpfit run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]

import forecast  # noqa: E402  (benchmarks/forecast.py: the cases)


def write_cases(chosen, k: int, path: str) -> None:
    ids, t, y = [], [], []
    for case in chosen:
        ids += [case.series_id] * (case.t.size + k)
        t.append(np.concatenate([case.t, case.t_test[:k]]))
        y.append(np.concatenate([case.y, case.y_test[:k]]))
    pq.write_table(pa.table({"series_id": ids, "t": np.concatenate(t),
                             "y": np.concatenate(y)}), path)


def gpfit(data: str, out: str, *extra: str) -> tuple[dict, float, str]:
    """(manifest, wall seconds, last line) of one gpfit CLI run."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pipeline", "--input", data, "--output", out,
                           *extra], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(done.stderr)
    with open(os.path.join(out, "_SUCCESS.json")) as f:
        return json.load(f), wall, done.stdout.strip().splitlines()[-1]


def reference(chosen, k: int, kernel: str) -> dict:
    """{series_id: holdout_mase} of gpcore's fit on the training part."""
    import gpcore
    from gpcore import FitConfig, Series
    from gpcore.calibration import forecast as calibrated
    from pipeline.backtest import scores

    fitter = gpcore.build_fitter(FitConfig(kernel=kernel), copies=forecast.PROCESSES)
    series = [Series(c.series_id, c.t, c.y) for c in chosen]
    found = {}
    for case, s, r in zip(chosen, series, fitter.fit(series)):
        if r.status == "ok":
            f = calibrated(s, r, case.t_test[:k], horizon=k)
            found[case.series_id] = scores(case.y_test[:k], f.mean, *f.interval(0.95),
                                           case.y)["holdout_mase"]
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="tune", choices=("tune", "holdout", "all"))
    parser.add_argument("--holdout", type=int, default=6)
    parser.add_argument("--kernel", default="rbf")
    args = parser.parse_args(argv)
    k = args.holdout
    chosen = [c for c in forecast.cases(args.split) if c.horizon >= k]
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "cases.parquet")
        write_cases(chosen, k, data)
        common = ("--kernel", args.kernel, "--predict_steps", str(k))
        backtest, wall_b, line = gpfit(data, os.path.join(tmp, "b"), *common, "--holdout", str(k),
                                       "--predict_levels", "80,95")
        _, wall_plain, _ = gpfit(data, os.path.join(tmp, "p"), *common)
        rows = pq.read_table(os.path.join(tmp, "b", "params")).to_pylist()
    mine = {r["series_id"]: r["holdout_mase"] for r in rows if r["holdout_mase"] is not None}
    ref = reference(chosen, k, args.kernel)
    both = sorted(set(mine) & set(ref))
    worst = max(abs(mine[s] - ref[s]) for s in both)
    h = backtest["holdout"]
    print(f"{len(chosen)} series ({args.split}), --kernel {args.kernel}, --holdout {k}\n")
    print("| series scored | MASE mean | MASE median | 95 % coverage | max abs(MASE - reference) "
          "| wall --holdout (s) | wall without (s) |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {h['series']} | {h['mase_mean']:.3f} | {h['mase_median']:.3f} | "
          f"{h['coverage_95']:.3f} | {worst:.2g} ({len(both)} series) | {wall_b:.1f} | "
          f"{wall_plain:.1f} |")
    print(f"\nfinal line: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
