"""Costs outside the fit calls at scale: does reading and grouping grow
linearly with the input's rows, ids and id lengths?

For each case and each of two sizes it writes one Parquet file (long
layout) and runs `python -m pipeline` on it (rbf: every series here is
skipped, too long or too short, so the run is reading, grouping, the
skipped rows and the output), recording the run's wall and CPU seconds
(its processes'). A case whose CPU grows more than its size says so in
the last column (CPU ratio over size ratio; 1 is linear):

  one_id:   one id of --rows_small / --rows_large rows (beyond --max_rows
            the series keeps only its count)
  many_ids: --ids_small / --ids_large ids of one row each
  long_ids: --ids_long ids of one row each, ids of 100 and of 10,000 characters

  python benchmarks/read_scale.py [--cases one_id,many_ids,long_ids]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def write(path: str, ids, t, y) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"series_id": ids, "t": t, "y": y}), path)


def one_id(rows: int):
    t = np.arange(rows, dtype=float)
    return pa_strings(["one"], rows), t, np.sin(t / 50.0)


def many_ids(ids: int):
    return [f"id{i:09d}" for i in range(ids)], np.zeros(ids), np.ones(ids)


def long_ids(ids: int, width: int):
    return [f"{i:09d}".rjust(width, "x") for i in range(ids)], np.zeros(ids), np.ones(ids)


def pa_strings(names, repeat):
    import pyarrow as pa
    return pa.array(names * repeat) if len(names) == 1 else pa.array(names)


def run(data: str, out: str) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    job = subprocess.run([sys.executable, "-m", "pipeline", "--input", data, "--output", out,
                          "--kernel", "rbf"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - wall
    if job.returncode:
        sys.exit(f"gpfit exited {job.returncode}:\n{job.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/read_scale.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="one_id,many_ids,long_ids")
    parser.add_argument("--rows_small", type=int, default=250_000)
    parser.add_argument("--rows_large", type=int, default=1_000_000)
    parser.add_argument("--ids_small", type=int, default=50_000)
    parser.add_argument("--ids_large", type=int, default=200_000)
    parser.add_argument("--ids_long", type=int, default=20_000)
    args = parser.parse_args(argv)
    sizes = {"one_id": [(args.rows_small, lambda: one_id(args.rows_small)),
                        (args.rows_large, lambda: one_id(args.rows_large))],
             "many_ids": [(args.ids_small, lambda: many_ids(args.ids_small)),
                          (args.ids_large, lambda: many_ids(args.ids_large))],
             "long_ids": [(100, lambda: long_ids(args.ids_long, 100)),
                          (10_000, lambda: long_ids(args.ids_long, 10_000))]}
    print(f"load {os.getloadavg()[0]:.1f}\n| case | size | wall s | CPU s | CPU ratio / size ratio |"
          "\n|---|--:|--:|--:|--:|")
    with tempfile.TemporaryDirectory(prefix="read_scale-") as work:
        for case in args.cases.split(","):
            first = None
            for size, make in sizes[case]:
                data = os.path.join(work, f"{case}-{size}")
                os.makedirs(data)
                write(os.path.join(data, "part-00000.parquet"), *make())
                wall, cpu = run(data, data + "-out")
                growth = "" if first is None else f"{(cpu / first[1]) / (size / first[0]):.2f}"
                first = first or (size, cpu)
                print(f"| {case} | {size:,} | {wall:.1f} | {cpu:.1f} | {growth} |", flush=True)
    print(f"load after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
