"""Does anything grow in a long-running worker? Memory, handles and threads
over many fit calls (docs/design.md, "Measured facts", *Long-running workers*).

  fitter   one fitter (gpcore.build_fitter) fits --calls calls of 1-5 short
           series (5-39 points) in a loop; after every tenth of them it
           prints the process's RSS, open file descriptors (/proc/self/fd),
           threads (/proc/self/task), Python objects (gc.get_objects after
           gc.collect) and the fitter's tracing_count.
  command  the `gpfit` command on --series short series (8-32 points, 8
           Parquet files in a temporary folder) with --workers worker
           processes and --seconds_per_fit_call, sampling every process's
           RSS, fds and threads every 2 s; prints each worker's figures when
           its progress lines first say 10 % of its share fitted, their
           peak, and at the job's end, with the manifest's fitters_built
           and tracing_count_max. Arguments after `--` go to gpfit
           (`-- --kernel auto`, `-- --predict_horizon 2 --predict_points 10`).
           --inside: each process also samples itself (a sitecustomize
           put first on the job's PYTHONPATH): glibc's bytes in use
           (mallinfo2's uordblks), pyarrow's pool (total_allocated_bytes)
           and Python's small-object blocks (sys.getallocatedblocks), which
           tell native memory held from Python objects and arrow's tables
           (docs/design.md, "Measured facts", *Long-running workers*);
           and the series each process fitted, to print each worker's
           memory at every tenth of the series it fitted (does it level
           off?). --workers 1 runs gpfit in one process (Beam's in-memory
           runner); `--workers 1 -- --direct_num_workers 1
           --direct_running_mode multi_processing` one worker process fed
           over gRPC, as a Dataflow worker's SDK harness is.

Usage:
  python benchmarks/long_worker.py fitter [--kernel rbf] [--calls 6000] [--copies 1]
  python benchmarks/long_worker.py command [--series 30000] [--workers 2]
      [--seconds_per_fit_call 0.1] [--inside [--every 2]] [-- gpfit options]
A defect is growth that does not level off: RSS rising with the calls
beyond the allocator's few MB, fds or threads rising, tracing_count above 1
(a candidate each under auto).
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# "2026-12-07 03:06:04,148 INFO worker: gpfit progress: 257/30000 series fitted in process 12"
PROGRESS = re.compile(r"^(\S+ \S+) .*gpfit progress: (\d+)/(\d+) series fitted in process (\d+)")


# Written as sitecustomize.py for --inside: a daemon thread in every process
# of the job appends [time, glibc bytes in use, arrow bytes, Python blocks,
# series fitted] to <LONG_WORKER_INSIDE>/<pid>.jsonl every
# LONG_WORKER_EVERY s. It reads counters only: gc.get_objects() from such a
# thread broke the job (it hands out tuples still being built:
# "SystemError: Objects/tupleobject.c"). The series this process fitted are
# counted by wrapping pipeline.progress.Progress.add once that module is
# loaded (before the fitter is built, seconds before the first fit call).
INSIDE = """import ctypes, json, os, sys, threading, time
class _Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
_FITTED = [0]
def _count_fitted():
    progress = sys.modules.get("pipeline.progress")
    if progress is None or getattr(progress.Progress, "_long_worker", False):
        return
    def add(self, n, _add=progress.Progress.add):
        _FITTED[0] += n
        return _add(self, n)
    progress.Progress.add, progress.Progress._long_worker = add, True
def _sample(path):
    mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    mallinfo2.restype = _Info
    with open(path, "w") as out:
        while True:
            _count_fitted()
            arrow = sys.modules.get("pyarrow")
            out.write(json.dumps([time.time(), mallinfo2().uordblks,
                                  arrow.total_allocated_bytes() if arrow else 0,
                                  sys.getallocatedblocks(), _FITTED[0]]) + "\\n")
            out.flush()
            time.sleep(float(os.environ["LONG_WORKER_EVERY"]))
threading.Thread(target=_sample, daemon=True, args=(os.path.join(
    os.environ["LONG_WORKER_INSIDE"], f"{os.getpid()}.jsonl"),)).start()
"""


def _rss_mb(pid: str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def _handles(pid: str = "self") -> tuple[int, int]:
    """(open file descriptors, threads) of a process."""
    return len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))


def _draw(rng, count: int, low: int, high: int, prefix: str):
    """(id, t, y) of `count` noisy sines of low..high-1 points."""
    for i in range(count):
        n = int(rng.integers(low, high))
        t = np.sort(rng.uniform(0.0, 10.0, n))
        yield f"{prefix}{i:06d}", t, np.sin(t * rng.uniform(0.3, 2.0)) + 0.1 * rng.standard_normal(n)


def fitter(kernel: str, calls: int, copies: int) -> None:
    from gpcore import FitConfig, Series, build_fitter

    rng = np.random.default_rng(1)
    fit = build_fitter(FitConfig(kernel=kernel), copies)
    print("| calls | RSS MB | fds | threads | Python objects | tracing_count |\n|--:|--:|--:|--:|--:|--:|")
    for k in range(1, calls + 1):
        fit.fit([Series(*drawn) for drawn in _draw(rng, int(rng.integers(1, 6)), 5, 40, f"c{k}_")])
        if k % max(1, calls // 10) == 0 or k == calls:
            gc.collect()
            fds, tasks = _handles()
            print(f"| {k} | {_rss_mb():.1f} | {fds} | {tasks} | {len(gc.get_objects())} | "
                  f"{fit.tracing_count} |", flush=True)


def _write_input(folder: str, series: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    drawn = list(_draw(rng, series, 8, 33, "s"))
    files = 8
    for f in range(files):
        part = drawn[f * len(drawn) // files:(f + 1) * len(drawn) // files]
        if part:
            pq.write_table(pa.table({
                "series_id": np.concatenate([[i] * len(t) for i, t, _ in part]),
                "t": np.concatenate([t for _, t, _ in part]),
                "y": np.concatenate([y for _, _, y in part])}),
                os.path.join(folder, f"part-{f:05d}.parquet"))


def _descendants(pid: int) -> list[int]:
    """Every process under pid. Linux lists a child under the thread that
    started it, and Beam's local runner starts its workers from a thread."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = []
        try:
            for task in os.listdir(f"/proc/{parent}/task"):
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    children += [int(c) for c in f.read().split()]
        except OSError:
            pass  # it ended meanwhile
        found += children
        todo += children
    return found


def _inside(folder: str) -> dict[int, list]:
    """pid -> its --inside samples [time, glibc bytes in use, arrow bytes, blocks]."""
    found = {}
    for name in os.listdir(folder):
        if name.endswith(".jsonl"):
            with open(os.path.join(folder, name)) as f:
                found[int(name[:-len(".jsonl")])] = [json.loads(line) for line in f
                                                     if line.endswith("\n")]
    return found


def command(series: int, workers: int, seconds: float, extra: list[str],
            inside: bool = False, every: float = 2.0) -> None:
    with tempfile.TemporaryDirectory(prefix="long_worker-") as work:
        data, out = os.path.join(work, "in"), os.path.join(work, "out")
        os.makedirs(data)
        _write_input(data, series)
        args = [sys.executable, "-m", "pipeline", "--input", data, "--output", out,
                "--seconds_per_fit_call", str(seconds), *extra]
        if workers > 1:
            args += ["--direct_num_workers", str(workers),
                     "--direct_running_mode", "multi_processing"]
        probe = os.path.join(work, "inside")
        if inside:
            os.makedirs(probe)
            with open(os.path.join(probe, "sitecustomize.py"), "w") as f:
                f.write(INSIDE)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [probe if inside else None, ROOT, os.environ.get("PYTHONPATH")])))
        if inside:
            env["LONG_WORKER_INSIDE"], env["LONG_WORKER_EVERY"] = probe, str(every)
        samples = []  # (time, pid, rss MB, fds, threads)
        with open(os.path.join(work, "stderr"), "w+") as err:
            job = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=env)
            while job.poll() is None:
                for pid in [job.pid] + _descendants(job.pid):
                    try:
                        samples.append((time.time(), pid, _rss_mb(str(pid)), *_handles(str(pid))))
                    except (OSError, StopIteration):
                        pass  # it ended meanwhile
                time.sleep(2.0)
            err.seek(0)
            lines = err.read().splitlines()
        if job.returncode:
            sys.exit(f"gpfit exited {job.returncode}:\n" + "\n".join(lines[-20:]))
        with open(os.path.join(out, "_SUCCESS.json")) as f:
            manifest = json.load(f)
        sampled = _inside(probe) if inside else {}
    tenth = {}  # pid -> when its progress first passed 10 % of its share
    for line in lines:
        found = PROGRESS.match(line)
        if found and int(found[2]) >= 0.1 * int(found[3]) / max(workers, 1):
            when = datetime.datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            tenth.setdefault(int(found[4]), when)
    print(f"{series} series, gpfit {' '.join(args[7:])}: fitters_built {manifest['fitters_built']}, "
          f"tracing_count_max {manifest['tracing_count_max']}, "
          f"{manifest['fit_call_seconds']['count']} fit calls, {manifest['wall_time_s']} s")
    print("| process | RSS MB at 10 % | peak | at the end | fds (min-max) | threads (min-max) |\n"
          "|--|--:|--:|--:|--:|--:|")
    for pid in sorted({s[1] for s in samples}):
        mine = [s for s in samples if s[1] == pid]
        at = next((s[2] for s in mine if s[0] >= tenth[pid]), None) if pid in tenth else None
        role = "worker" if pid in tenth else "launcher" if pid == job.pid else "other"
        print(f"| {role} {pid} | {'-' if at is None else f'{at:.0f}'} | "
              f"{max(s[2] for s in mine):.0f} | {mine[-1][2]:.0f} | "
              f"{min(s[3] for s in mine)}-{max(s[3] for s in mine)} | "
              f"{min(s[4] for s in mine)}-{max(s[4] for s in mine)} |")
    if inside:
        print("\n| process | malloc in use MB at 10 % | at the end | arrow MB at 10 % | at the end "
              "| Python blocks (k) at 10 % | at the end |\n|--|--:|--:|--:|--:|--:|--:|")
        for pid in sorted(sampled):
            mine = sampled[pid]
            if not mine:
                continue
            at = next((s for s in mine if s[0] >= tenth[pid]), mine[-1]) if pid in tenth else None
            role = "worker" if pid in tenth else "launcher" if pid == job.pid else "other"
            cells = [f"{v / 2 ** 20:.1f}" for v in (at[1], mine[-1][1], at[2], mine[-1][2])] \
                if at else ["-", f"{mine[-1][1] / 2 ** 20:.1f}", "-", f"{mine[-1][2] / 2 ** 20:.1f}"]
            blocks = [f"{at[3] / 1000:.0f}" if at else "-", f"{mine[-1][3] / 1000:.0f}"]
            print(f"| {role} {pid} | {' | '.join(cells + blocks)} |")
        print("\n| process | series it fitted | RSS MB | malloc in use MB | arrow MB "
              "| Python blocks (k) |\n|--|--:|--:|--:|--:|--:|")
        for pid in sorted(sampled):
            mine = sampled[pid]
            fitted = mine[-1][4] if mine else 0
            if not fitted:
                continue
            # The first sample past each tenth of the series it fitted, and its last.
            rows = [next(i for i, s in enumerate(mine) if s[4] >= k * fitted / 10)
                    for k in range(1, 11)] + [len(mine) - 1]
            theirs = [r for r in samples if r[1] == pid]
            for i in sorted(set(rows)):
                s = mine[i]
                rss = next((r[2] for r in theirs if r[0] >= s[0]),
                           theirs[-1][2] if theirs else float("nan"))
                print(f"| {pid}{' (its end)' if i == len(mine) - 1 else ''} | {s[4]} | "
                      f"{rss:.0f} | {s[1] / 2 ** 20:.1f} | {s[2] / 2 ** 20:.1f} | "
                      f"{s[3] / 1000:.0f} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/long_worker.py", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    modes = parser.add_subparsers(dest="mode", required=True)
    one = modes.add_parser("fitter", help="one fitter, many fit calls")
    one.add_argument("--kernel", default="rbf")
    one.add_argument("--calls", type=int, default=6000)
    one.add_argument("--copies", type=int, default=1)
    job = modes.add_parser("command", help="the gpfit command, its processes sampled")
    job.add_argument("--series", type=int, default=30000)
    job.add_argument("--workers", type=int, default=2)
    job.add_argument("--seconds_per_fit_call", type=float, default=0.1)
    job.add_argument("--inside", action="store_true",
                     help="each process samples its glibc, arrow and Python memory and the "
                     "series it fitted")
    job.add_argument("--every", type=float, default=2.0,
                     help="with --inside: seconds between a process's samples")
    job.add_argument("gpfit", nargs="*", help="after --: options for gpfit")
    args = parser.parse_args(argv)
    if args.mode == "fitter":
        fitter(args.kernel, args.calls, args.copies)
    else:
        command(args.series, args.workers, args.seconds_per_fit_call, args.gpfit, args.inside,
                args.every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
