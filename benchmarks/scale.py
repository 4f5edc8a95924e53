"""gpfit at scale: many short series through the `gpfit` command
with two worker processes; every series accounted for, wall time, peak
memory, and whether a worker's memory stays flat as series go by.

    .venv/bin/python benchmarks/scale.py --series 5000            # ~3 min here
    nohup .venv/bin/python benchmarks/scale.py --series 100000 > scale.log 2>&1 &

What it does:
  1. writes --series series of 32-64 points (long layout, --files Parquet
     files, each series whole in one file) under --workdir, once per size;
  2. runs `/usr/bin/time -v python -m pipeline --input ... --output ...
     --direct_num_workers 2 --direct_running_mode multi_processing`
     (OPENBLAS_NUM_THREADS=1), its log in the work dir;
  3. meanwhile, every --sample-s seconds, reads VmRSS and VmHWM of every
     process of the run from /proc, and follows the workers' progress lines
     ("gpfit progress: N series fitted in process PID", one per worker every
     30 s): the run's series done = the sum of each worker's latest N;
  4. reads the output back: every series exactly once, statuses counted,
     the manifest's counts;
  5. memory flatness: each worker's RSS when the run had fitted 5,000
     series and when it had fitted 50,000, and the difference (the bar:
     < 100 MB); also from the first progress line to the last;
  6. prints a markdown table and keeps it, with every earlier run's row, in
     benchmarks/SCALE.md (rows in benchmarks/scale_results.json).

Timings on a shared 2-core machine are noisy: the load average before and
after the run is recorded with it.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "scale_results.json")
TABLE = os.path.join(HERE, "SCALE.md")
TIME = "/usr/bin/time"

MARKS = (5_000, 50_000)  # series fitted by the run: worker memory compared here
FLAT_MB = 100.0
PROGRESS = re.compile(r"gpfit progress: (\d+) series fitted in process (\d+)")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="benchmarks/scale.py", description=__doc__.split("\n")[0])
    parser.add_argument("--series", type=int, default=100_000, help="series (default %(default)s)")
    parser.add_argument("--files", type=int, default=4, help="Parquet files (default %(default)s)")
    parser.add_argument("--workers", type=int, default=2,
                        help="--direct_num_workers, multi_processing (default %(default)s)")
    parser.add_argument("--workdir", default="/tmp/gpfit-scale",
                        help="data, output and logs (default %(default)s)")
    parser.add_argument("--sample-s", type=float, default=1.0,
                        help="seconds between memory samples (default %(default)s)")
    parser.add_argument("--label", default=None, help="row label (default: the series count)")
    parser.add_argument("--no-save", action="store_true",
                        help="print the table only; leave SCALE.md and scale_results.json alone")
    parser.add_argument("gpfit_args", nargs="*", help="more gpfit options, after --")
    return parser.parse_args(argv)


# ---- data ---------------------------------------------------------------------------

def series_id(i: int) -> str:
    return f"s{i:07d}"


def write_data(folder: str, n_series: int, n_files: int, seed: int = 20261130) -> dict:
    """n_series smooth noisy series of 32-64 points over 100 days, long
    layout, series i in file i % n_files. Reuses an existing folder written
    with the same settings. Returns {"rows": total rows, "seconds": time taken}."""
    stamp_path = os.path.join(folder, "_STAMP.json")
    stamp = {"series": n_series, "files": n_files, "seed": seed, "version": 1}
    if os.path.exists(stamp_path):
        with open(stamp_path) as f:
            found = json.load(f)
        if {k: found.get(k) for k in stamp} == stamp:
            return {"rows": found["rows"], "seconds": 0.0}
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    start = time.time()
    rng = np.random.default_rng(seed)
    lengths = rng.integers(32, 65, n_series)
    rows = 0
    for k in range(n_files):
        members = np.arange(k, n_series, n_files)
        n = lengths[members]
        total = int(n.sum())
        owner = np.repeat(np.arange(members.size), n)
        t = rng.uniform(0.0, 100.0, total)
        # Sorted within each series: sort by (series, t).
        t = t[np.lexsort((t, owner))]
        amplitude = rng.uniform(0.5, 2.0, members.size)[owner]
        period = rng.uniform(10.0, 60.0, members.size)[owner]
        phase = rng.uniform(0, 2 * np.pi, members.size)[owner]
        level = rng.uniform(-5.0, 5.0, members.size)[owner]
        y = (level + amplitude * np.sin(2 * np.pi * t / period + phase)
             + 0.3 * amplitude * np.sin(2 * np.pi * t / (0.37 * period))
             + 0.1 * rng.standard_normal(total))
        ids = pa.array([series_id(int(i)) for i in members]).take(pa.array(owner))
        table = pa.table({"series_id": ids, "t": t, "y": y})
        pq.write_table(table, os.path.join(folder, f"part-{k:03d}.parquet"),
                       row_group_size=50_000)
        rows += total
    with open(stamp_path, "w") as f:
        json.dump({**stamp, "rows": rows}, f)
    return {"rows": rows, "seconds": time.time() - start}


# ---- watching the run -----------------------------------------------------------------

def _status_kb(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def _descendants(root: int) -> dict[int, str]:
    """{pid: kind} of root's descendants: "main" (gpfit), "worker" (SDK worker)."""
    children = collections.defaultdict(list)
    commands = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                commands[int(entry)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        children[ppid].append(int(entry))
    found, todo = {}, list(children[root])
    while todo:
        pid = todo.pop()
        todo += children[pid]
        command = commands.get(pid, "")
        # Beam starts each worker through `/bin/sh -c`: the shell is "other".
        program = os.path.basename(command.split(" ", 1)[0])
        python = program.startswith("python")
        found[pid] = ("worker" if python and "sdk_worker_main" in command
                      else "main" if python and "-m pipeline" in command else "other")
    return found


class Watcher(threading.Thread):
    """Samples the run's processes' memory and follows its progress lines."""

    def __init__(self, root: int, log_path: str, every_s: float):
        super().__init__(daemon=True)
        self.root, self.log_path, self.every_s = root, log_path, every_s
        self.stop = threading.Event()
        self.start_time = time.time()
        self.samples = []     # (t, {pid: (kind, rss_kb, hwm_kb)}, {pid: series done})
        self.progress = {}    # worker pid -> latest series count
        self.progress_lines = []  # (t, pid, count, rss_kb at that moment)
        self._offset = 0

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.every_s)
        self.sample()

    def _read_progress(self):
        try:
            with open(self.log_path, errors="replace") as f:
                f.seek(self._offset)
                text = f.read()
        except OSError:
            return
        # Only whole lines; the rest is read next time.
        end = text.rfind("\n") + 1
        self._offset += len(text[:end].encode("utf-8", errors="replace"))
        for match in PROGRESS.finditer(text[:end]):
            count, pid = int(match.group(1)), int(match.group(2))
            self.progress[pid] = count
            rss = _status_kb(pid).get("VmRSS", 0)
            self.progress_lines.append((time.time() - self.start_time, pid, count, rss))

    def sample(self):
        self._read_progress()
        processes = {}
        for pid, kind in _descendants(self.root).items():
            kb = _status_kb(pid)
            if kb:
                processes[pid] = (kind, kb.get("VmRSS", 0), kb.get("VmHWM", 0))
        self.samples.append((time.time() - self.start_time, processes, dict(self.progress)))


# ---- the run -----------------------------------------------------------------------

def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _parse_time_v(path: str) -> dict:
    found = {}
    if not os.path.exists(path):
        return found
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().rpartition(": ")
            if key == "Maximum resident set size (kbytes)":
                found["max_rss_mb"] = int(value) / 1024.0
            elif key == "User time (seconds)":
                found["user_s"] = float(value)
            elif key == "System time (seconds)":
                found["system_s"] = float(value)
            elif key.startswith("Elapsed (wall clock) time"):
                parts = [float(p) for p in value.split(":")]
                found["elapsed_s"] = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
            elif key == "Exit status":
                found["exit_status"] = int(value)
    return found


def run_gpfit(args, data: str, output: str, log_path: str) -> tuple[int, float, dict, Watcher]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
           "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": ROOT}
    command = [sys.executable, "-m", "pipeline", "--input", data, "--output", output,
               "--direct_num_workers", str(args.workers),
               "--direct_running_mode", "multi_processing", *args.gpfit_args]
    time_path = log_path + ".time"
    if os.path.exists(TIME):
        command = [TIME, "-v", "-o", time_path, *command]
    with open(log_path, "w") as log:
        start = time.time()
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        watcher = Watcher(proc.pid, log_path, args.sample_s)
        watcher.start()
        code = proc.wait()
        wall = time.time() - start
        watcher.stop.set()
        watcher.join()
    return code, wall, _parse_time_v(time_path), watcher


def check_output(output: str, n_series: int) -> dict:
    """Every series exactly once? Statuses, and the manifest's counts."""
    folder = os.path.join(output, "params")  # pipeline.io.outputs.PARAMS_PREFIX
    shards = sorted(n for n in os.listdir(folder) if n.endswith(".parquet"))
    ids, statuses = [], collections.Counter()
    for name in shards:
        table = pq.read_table(os.path.join(folder, name), columns=["series_id", "status"])
        ids += table.column("series_id").to_pylist()
        statuses.update(table.column("status").to_pylist())
    counts = collections.Counter(ids)
    expected = {series_id(i) for i in range(n_series)}
    manifest_path = os.path.join(output, "_SUCCESS.json")
    manifest = None
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    return {"rows": len(ids), "distinct": len(counts),
            "duplicated": sum(1 for c in counts.values() if c > 1),
            "missing": len(expected - set(counts)), "unexpected": len(set(counts) - expected),
            "statuses": dict(statuses), "shards": len(shards),
            "manifest_counts": (manifest or {}).get("counts")}


def memory_flatness(watcher: Watcher) -> dict:
    """Each worker's RSS at the run's first progress count, when the run had
    first fitted >= 5,000 and >= 50,000 series (MARKS), and at its last
    progress count. -> {"marks": {"first" | "5000" | "50000" | "last":
    {t_s, series_done, worker_rss_mb {pid: MB}, worker_series {pid: n}}}}."""
    counted = [(t, processes, progress) for t, processes, progress in watcher.samples
               if progress]

    def at(sample) -> dict:
        t, processes, progress = sample
        return {"t_s": round(t, 1), "series_done": sum(progress.values()),
                "worker_rss_mb": {str(pid): round(rss / 1024.0, 1)
                                  for pid, (kind, rss, _) in processes.items()
                                  if kind == "worker"},
                "worker_series": {str(pid): n for pid, n in progress.items()}}

    if not counted:
        return {"marks": {}}
    marks = {"first": at(counted[0])}
    for mark in MARKS:
        reached = [sample for sample in counted if sum(sample[2].values()) >= mark]
        if reached:
            marks[str(mark)] = at(reached[0])
    most = max(sum(sample[2].values()) for sample in counted)
    marks["last"] = at(next(sample for sample in counted if sum(sample[2].values()) == most))
    return {"marks": marks}


def growth(memory: dict, start: str, end: str) -> dict | None:
    """{worker pid: RSS at `end` - RSS at `start`, MB}, or None."""
    marks = memory.get("marks", {})
    if start not in marks or end not in marks or marks[start] == marks[end]:
        return None
    a, b = marks[start]["worker_rss_mb"], marks[end]["worker_rss_mb"]
    return {pid: round(b[pid] - a[pid], 1) for pid in a if pid in b}


def peaks(watcher: Watcher) -> dict:
    worker_hwm, main_hwm, tree = 0, 0, 0
    for _, processes, _ in watcher.samples:
        tree = max(tree, sum(rss for _, rss, _ in processes.values()))
        for kind, _, hwm in processes.values():
            if kind == "worker":
                worker_hwm = max(worker_hwm, hwm)
            elif kind == "main":
                main_hwm = max(main_hwm, hwm)
    return {"worker_peak_mb": round(worker_hwm / 1024.0, 1),
            "main_peak_mb": round(main_hwm / 1024.0, 1),
            "tree_peak_mb": round(tree / 1024.0, 1)}


# ---- the table -----------------------------------------------------------------------

COLUMNS = ("run", "date", "series", "rows", "wall s", "series/s", "CPU s (user+sys)",
           "peak RSS MB (largest process)", "peak RSS MB (all, sampled)", "worker peak MB",
           "worker RSS MB: 5k -> 50k series", "flat (< 100 MB)",
           "worker RSS MB: first -> last count", "exactly once", "ok / skipped / failed",
           "exit", "load before / after")


def _growth_text(memory: dict, start: str, end: str) -> str:
    change = growth(memory, start, end)
    if not change:
        return "n/a"
    marks = memory["marks"]
    return (", ".join(f"{v:+.0f}" for v in change.values())
            + f" ({marks[start]['series_done']:,} -> {marks[end]['series_done']:,})")


def table_row(r: dict) -> list[str]:
    out = r["output"]
    memory = r["memory"]
    change = growth(memory, str(MARKS[0]), str(MARKS[1]))
    flat = "n/a" if not change else (
        "yes" if all(abs(v) < FLAT_MB for v in change.values()) else "NO")
    once = (out["distinct"] == r["series"] and out["rows"] == r["series"]
            and not out["duplicated"] and not out["missing"])
    s = out["statuses"]
    return [
        r["label"], r["date"], f"{r['series']:,}", f"{r['rows']:,}", f"{r['wall_s']:.0f}",
        f"{r['series'] / r['wall_s']:.1f}",
        f"{r['time'].get('user_s', 0) + r['time'].get('system_s', 0):.0f}",
        f"{r['time'].get('max_rss_mb', 0):.0f}", f"{r['peaks']['tree_peak_mb']:.0f}",
        f"{r['peaks']['worker_peak_mb']:.0f}",
        _growth_text(memory, str(MARKS[0]), str(MARKS[1])), flat,
        _growth_text(memory, "first", "last"),
        "yes" if once else f"NO ({out['rows']} rows, {out['distinct']} distinct, "
                           f"{out['missing']} missing, {out['duplicated']} duplicated)",
        f"{s.get('ok', 0):,} / {s.get('skipped', 0):,} / {s.get('failed', 0):,}",
        str(r["exit_code"]), f"{r['load_before']} / {r['load_after']}",
    ]


def render(results: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(table_row(r)) + " |" for r in results]
    return "\n".join(lines) + "\n"


HEADER = """# gpfit at scale

`benchmarks/scale.py`: short series (32-64 points, long layout,
4 Parquet files) through the `gpfit` command with
`--direct_num_workers 2 --direct_running_mode multi_processing` on this
project's 2-core machine, under `/usr/bin/time -v`. Columns:

- *wall s*, *series/s*: the whole command (start-up, TensorFlow import and
  tracing in each worker, reading, fitting, writing);
- *peak RSS MB (largest process)*: `/usr/bin/time -v`'s maximum resident set
  size, the largest single process of the run; *(all, sampled)*: the largest
  sum of VmRSS over all the run's processes, sampled every second;
- *worker RSS MB: 5k -> 50k series*: each worker's VmRSS when the run had
  fitted 50,000 series minus when it had fitted 5,000, counted from the
  workers' progress lines (one every 30 s per worker, so the counts in
  brackets are the run's totals at those moments, not exactly 5,000 and
  50,000); *flat*: every worker's change is under 100 MB (the bar);
  *first -> last count*: the same from the first progress line to the last
  (a run too small for 50,000 has only this);
- *exactly once*: every generated series id appears in the output exactly once;
- *load before / after*: 1/5/15-minute load averages; other engineers' tests
  share the machine, so timings are noisy.

"""


def save(result: dict) -> str:
    results = []
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            results = json.load(f)
    results = [r for r in results if r["label"] != result["label"]] + [result]
    with open(RESULTS, "w") as f:
        json.dump(results, f, indent=1)
    text = HEADER + render(results)
    with open(TABLE, "w") as f:
        f.write(text)
    return text


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    label = args.label or f"{args.series:,} series"
    data = os.path.join(args.workdir, f"data-{args.series}")
    output = os.path.join(args.workdir, f"out-{args.series}")
    log_path = os.path.join(args.workdir, f"gpfit-{args.series}.log")
    os.makedirs(args.workdir, exist_ok=True)
    made = write_data(data, args.series, args.files)
    print(f"data: {args.series:,} series, {made['rows']:,} rows in {data} "
          f"({made['seconds']:.0f} s)", flush=True)
    shutil.rmtree(output, ignore_errors=True)
    load_before = _load()
    print(f"running gpfit -> {output}, log {log_path} (load {load_before})", flush=True)
    code, wall, timed, watcher = run_gpfit(args, data, output, log_path)
    load_after = _load()
    print(f"gpfit exited {code} after {wall:.0f} s", flush=True)
    checked = check_output(output, args.series) if os.path.isdir(output) else {
        "rows": 0, "distinct": 0, "duplicated": 0, "missing": args.series, "unexpected": 0,
        "statuses": {}, "shards": 0, "manifest_counts": None}
    result = {
        "label": label, "date": datetime.date.today().isoformat(), "series": args.series,
        "rows": made["rows"], "files": args.files, "workers": args.workers,
        "gpfit_args": args.gpfit_args, "exit_code": code, "wall_s": round(wall, 1),
        "time": timed, "peaks": peaks(watcher), "memory": memory_flatness(watcher),
        "output": checked, "load_before": load_before, "load_after": load_after,
        "progress_lines": watcher.progress_lines,
    }
    with open(os.path.join(args.workdir, f"result-{args.series}.json"), "w") as f:
        json.dump({**result, "samples": watcher.samples}, f)
    print(json.dumps({k: v for k, v in result.items() if k != "progress_lines"}, indent=1))
    if args.no_save:
        print(render([result]))
    else:
        print(save(result))
    ok = (code == 0 and checked["missing"] == 0 and checked["duplicated"] == 0
          and checked["rows"] == args.series)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
