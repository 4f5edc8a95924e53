"""Peak memory of the `gpfit` command on series at, below and far above the
default --max_points (docs/design.md, "The fitter", Memory per series).

  python benchmarks/worker_memory.py --kernel rbf --points 4096 --series 2
      [--cycle 50] [--limit_s 300] [--stop_mb 12000] [-- more gpfit options]

Writes --series series of --points points (white noise on unit-spaced
times: every start runs, the memory estimate's worst case; --cycle adds
a sine, so that `auto` fits its periodic candidate) to one Parquet
file in a temporary folder, runs the real command with
`--direct_num_workers 2 --direct_running_mode multi_processing` (README:
one fitter per worker process, as on a Dataflow worker) and samples every
0.5 s the RSS of the command's process and all its descendants. Prints one
JSON line: the peak of their sum and of the largest process (MB), the
seconds at which each was reached, the exit code or "cut" where the run
was stopped at --limit_s (a dense sum's fit of 4,096 points takes hours,
its search grid alone more than 300 s here; its peak, in Newton, was
measured at 2,048 points: the peak over a worker's own scales as N^2) or past
--stop_mb (to spare a shared machine), the estimate of one series' dense
fit (gpcore.config.dense_bytes), the tree's RSS every 15 s and the
statuses written.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_input(path: str, series: int, points: int, cycle: float) -> None:
    rng = np.random.default_rng(3)
    t = np.tile(np.arange(points, dtype=np.float64), series)
    y = rng.standard_normal(series * points)
    if cycle:  # a cycle of that period under the noise: auto fits its periodic candidate
        y += 2 * np.sin(2 * np.pi * t / cycle)
    pq.write_table(pa.table({
        "series_id": np.repeat([f"s{i}" for i in range(series)], points), "t": t, "y": y}), path)


def tree_rss(root: psutil.Process) -> tuple[int, int]:
    """(sum, largest) RSS in bytes of root and all its descendants."""
    sizes = []
    for each in [root, *root.children(recursive=True)]:
        try:
            sizes.append(each.memory_info().rss)
        except psutil.Error:  # ended between listing and reading
            pass
    return sum(sizes), max(sizes, default=0)


def estimate_mb(kernel: str) -> dict:
    from gpcore.config import FitConfig, dense_bytes, fitted_starts

    return {str(c.kernel.name): round(dense_bytes(c.kernel, starts, c.max_points) / 2**20)
            for c, starts in fitted_starts(FitConfig(kernel=kernel))}


def stop(process: subprocess.Popen) -> None:
    """SIGTERM (gpfit ends its workers), then SIGKILL what is left by pid."""
    left = psutil.Process(process.pid).children(recursive=True)
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
    for each in left:
        try:
            each.kill()
        except psutil.Error:
            pass


def run(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="gpfit-memory-") as folder:
        return measure(args, folder)


def measure(args, folder: str) -> dict:
    """run's measurement, its input and output in `folder`."""
    write_input(os.path.join(folder, "series.parquet"), args.series, args.points, args.cycle)
    output = os.path.join(folder, "out")
    command = [sys.executable, "-m", "pipeline", "--input",
               os.path.join(folder, "series.parquet"), "--output", output,
               "--kernel", args.kernel, "--direct_num_workers", "2",
               "--direct_running_mode", "multi_processing", *args.gpfit_args]
    env = dict(os.environ, PYTHONPATH=REPO)
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    root = psutil.Process(process.pid)
    peak = largest = 0
    peak_s = largest_s = 0.0
    ended, timeline = None, []
    while process.poll() is None:
        total, one = tree_rss(root)
        now = time.perf_counter() - start
        if now >= 15 * len(timeline):
            timeline.append(total // 2**20)
        if total > peak:
            peak, peak_s = total, now
        if one > largest:
            largest, largest_s = one, now
        if now > args.limit_s or total > args.stop_mb * 2**20:
            ended = "cut at %.0f s" % now + (" (stop_mb)" if total > args.stop_mb * 2**20 else "")
            stop(process)
            break
        time.sleep(0.5)
    lines = process.stdout.read().strip().splitlines()
    found = {"kernel": args.kernel, "points": args.points, "series": args.series,
             "cycle": args.cycle,
             "exit": ended or process.returncode, "wall_s": round(time.perf_counter() - start),
             "peak_tree_mb": peak // 2**20, "peak_tree_at_s": round(peak_s),
             "peak_process_mb": largest // 2**20, "peak_process_at_s": round(largest_s),
             "tree_mb_every_15_s": timeline,
             "estimate_one_series_mb": estimate_mb(args.kernel),
             "last_line": lines[-1:], "load": [round(x, 1) for x in os.getloadavg()]}
    if process.returncode == 0:
        table = pq.read_table(os.path.join(output, "params"), columns=["status"]).to_pylist()
        found["statuses"] = {s: sum(r["status"] == s for r in table)
                             for s in ("ok", "skipped", "failed")}
    return found


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="rbf")
    parser.add_argument("--points", type=int, default=4096)
    parser.add_argument("--series", type=int, default=2)
    parser.add_argument("--cycle", type=float, default=0, help="a sine of this period added")
    parser.add_argument("--limit_s", type=float, default=300)
    parser.add_argument("--stop_mb", type=float, default=12000)
    parser.add_argument("gpfit_args", nargs="*", help="after --: more gpfit options")
    print(json.dumps(run(parser.parse_args(argv))), flush=True)


if __name__ == "__main__":
    main()
