"""Do fit calls of short series stay near `--seconds_per_fit_call`?

The `gpfit` command on --series generated short series (cost.py's
`generated_short`, 8-40 irregular points, with --seed: never the "short"
set that gpcore.batching's FLOOR_SECONDS were measured on), in 8 Parquet
files, once per kernel of --kernels, each with --seconds_per_fit_call; it
prints the manifest's fit_call_seconds (count, median, max and
max_over_estimate: wall over gpcore.batching's estimate, calls that
compiled nothing) and the largest call over --seconds_per_fit_call, the
ratio that should stay at most 4 (docs/design.md, "Cost per kernel",
*Short series*).

`--set counts` draws Poisson counts of mean 2 on 100-200 points instead
(benchmarks/shapes.py's "counts": rough series, whose neighbouring values
are nearly uncorrelated; docs/design.md, "Cost per kernel", *Rough
series*).

  python benchmarks/call_sizes.py [--series 4000] [--kernels rbf,auto]
      [--seconds_per_fit_call 2] [--seed 1] [--set short|counts]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)


def write_input(folder: str, series: list, files: int = 8) -> None:
    """`series` (gpcore Series) as `files` Parquet files of series_id, t, y."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    for f in range(files):
        part = series[f * len(series) // files:(f + 1) * len(series) // files]
        if part:
            pq.write_table(pa.table({
                "series_id": np.concatenate([[s.series_id] * len(s.t) for s in part]),
                "t": np.concatenate([s.t for s in part]),
                "y": np.concatenate([s.y for s in part])}),
                os.path.join(folder, f"part-{f:05d}.parquet"))


def run(data: str, out: str, kernel: str, seconds: float) -> dict:
    """The manifest of one `gpfit` run on `data` (exits on a failed run),
    with the run's CPU seconds (its processes') as "cpu_s"."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    job = subprocess.run([sys.executable, "-m", "pipeline", "--input", data, "--output", out,
                          "--kernel", kernel, "--seconds_per_fit_call", str(seconds)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if job.returncode:
        sys.exit(f"gpfit --kernel {kernel} exited {job.returncode}:\n{job.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(out, "_SUCCESS.json")) as f:
        return dict(json.load(f), cpu_s=round(after.ru_utime + after.ru_stime
                                              - before.ru_utime - before.ru_stime, 1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/call_sizes.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--series", type=int, default=4000)
    parser.add_argument("--kernels", default="rbf,auto")
    parser.add_argument("--seconds_per_fit_call", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--set", default="short", choices=("short", "counts"),
                        help="short: cost.py's generated_short; counts: shapes.py's Poisson counts")
    args = parser.parse_args(argv)
    from cost import generated_short
    from shapes import rough
    draw = {"short": lambda: generated_short(args.series, args.seed),
            "counts": lambda: rough(args.series, 100, 200, "counts", np.random.default_rng(
                args.seed), "counts")}[args.set]
    print(f"{args.series} generated {args.set} series (seed {args.seed}), "
          f"--seconds_per_fit_call {args.seconds_per_fit_call:g}, load {os.getloadavg()[0]:.1f}")
    print("| kernel | calls | median s | max s | max / --seconds_per_fit_call "
          "| max_over_estimate | fitters built | wall s | CPU s |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    with tempfile.TemporaryDirectory(prefix="call_sizes-") as work:
        data = os.path.join(work, "in")
        os.makedirs(data)
        write_input(data, draw())
        for kernel in args.kernels.split(","):
            manifest = run(data, os.path.join(work, kernel.replace("+", "_")), kernel,
                           args.seconds_per_fit_call)
            calls = manifest["fit_call_seconds"]
            print(f"| {kernel} | {calls['count']} | {calls['median']} | {calls['max']} "
                  f"| {calls['max'] / args.seconds_per_fit_call:.2f} "
                  f"| {calls['max_over_estimate']} | {manifest['fitters_built']} "
                  f"| {manifest['wall_time_s']} | {manifest['cpu_s']} |", flush=True)
    print(f"load after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
