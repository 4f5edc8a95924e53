"""Running gpfit for the reliability tests: in this process (cheap after the
first run) or as `python -m pipeline` in a subprocess (a real exit code, a
real stderr where a traceback would show, real signals), and what a run
leaves: a snapshot of an output folder, to compare a re-run after a fault
with a clean run."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpfit_runs import Run, files_in, gpfit_here, read_rows  # noqa: F401  (re-exported)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Quiet, one BLAS thread, no GPU probing; subprocesses inherit it.
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
       "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": REPO}

# The fault suite's options: two shards of each table, forecasts (a second
# table, and enough bytes to fill a small disk mid-write), and secrets that
# the manifest must not hold.
PREDICT_POINTS = 400
SECRETS = ("hunter2-json", "SASSIG0123")
OPTIONS = ("--num_shards", "2",
           "--predict_horizon", "5", "--predict_points", str(PREDICT_POINTS),
           "--environment_config", '{"env": {"DB_PASSWORD": "hunter2-json"}}',
           "--azure_connection_string",
           "BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02"
           "&ss=b&sig=SASSIG0123")

# Ids an operator's data really holds: path-like, markup, quotes, control
# characters, non-ASCII, empty, very long, numbers as text.
HOSTILE_IDS = ("../../etc/passwd", "a/b\\c", "<script>alert(1)</script>", "' OR 1=1 --",
               "line\nbreak\ttab", "σειρά-€", "", "x" * 500, "007", "_SUCCESS.json",
               "null", "NaN")


def write_hostile_input(folder: str) -> str:
    """Two Parquet files of smooth series under HOSTILE_IDS (one split over
    both files), with NaN, ±inf and huge values among the points, and one
    series too short to fit; returns the folder."""
    rng = np.random.default_rng(22)
    ids, ts, ys = [], [], []
    for i, sid in enumerate(HOSTILE_IDS):
        n = 2 if sid == "null" else 30 + 3 * i
        t = np.sort(rng.uniform(0, 40, n))
        y = np.sin(t / rng.uniform(3, 9)) + 0.1 * rng.standard_normal(n)
        if sid == "NaN":
            y[::5], y[1] = np.nan, np.inf
        if sid == "007":
            y = y * 1e12
        ids += [sid] * n
        ts.append(t)
        ys.append(y)
    table = pa.table({"series_id": pa.array(ids, pa.string()), "t": np.concatenate(ts),
                      "y": np.concatenate(ys)})
    os.makedirs(folder)
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), os.path.join(folder, "a.parquet"))
    pq.write_table(table.slice(half), os.path.join(folder, "b.parquet"))
    return folder


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What a finished run leaves in its folder, comparable across runs."""

    files: tuple[str, ...]
    params: tuple[tuple, ...]       # rows, sorted by id
    predictions: tuple[tuple, ...]  # rows, sorted by (id, kind, t)
    counts: dict
    output_files: tuple[str, ...]
    prediction_files: tuple[str, ...]


def snapshot(folder: str) -> Snapshot:
    with open(os.path.join(folder, "_SUCCESS.json")) as f:
        found = json.load(f)
    params = sorted(tuple(row.items()) for row in read_rows(folder))
    predictions = sorted((tuple(row.items()) for row in read_rows(folder, "predictions")),
                         key=lambda r: (r[0][1], r[1][1], str(r[2][1])))
    return Snapshot(tuple(files_in(folder)), tuple(params), tuple(predictions), found["counts"],
                    tuple(found["output_files"]), tuple(found["prediction_files"]))


def listing(folder: str) -> list[str]:
    """Every file and folder under `folder`, relative, folders ending in "/"."""
    found = []
    for root, dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        prefix = "" if rel == "." else rel + "/"
        found += [prefix + d + "/" for d in dirs] + [prefix + f for f in files]
    return sorted(found)


def gpfit_command(input_: str, output: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pipeline", "--input", input_, "--output", output, *extra]


def gpfit_subprocess(input_: str, output: str, *extra: str, timeout: float = 300) -> Run:
    """`python -m pipeline ...` in a subprocess."""
    done = subprocess.run(gpfit_command(input_, output, *extra), cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=timeout, check=False)
    return Run(done.returncode, done.stdout, done.stderr, output)


def error_lines(stderr: str) -> list[str]:
    """gpfit's own error lines in a stderr (TensorFlow's start-up chatter aside)."""
    return [line for line in stderr.splitlines() if line.startswith("gpfit: error:")]


class Running:
    """`python -m pipeline ...` started in a subprocess, its stderr collected;
    `fitting` is set once a fitter was built (the job is fitting). It leads a
    process group of its own, as a command started from a terminal does."""

    def __init__(self, input_: str, output: str, *extra: str):
        self.output = output
        self.process = subprocess.Popen(gpfit_command(input_, output, *extra), cwd=REPO,
                                        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, start_new_session=True)
        self.lines: list[str] = []
        self.fitting = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line)
            if "gpfit: built the" in line and "fitter" in line:  # pipeline/fitters.py's line
                self.fitting.set()

    def wait_fitting(self, timeout: float = 240) -> None:
        assert self.fitting.wait(timeout), "".join(self.lines)

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def signal_group(self, signum: int) -> None:
        """signum to every process of the run, as a terminal's Ctrl-C sends SIGINT."""
        os.killpg(self.process.pid, signum)

    def left(self) -> list[int]:
        """Pids of the run's process group still alive (its workers, once it ended)."""
        found = []
        for name in os.listdir("/proc"):
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == self.process.pid and fields[0] != "Z":
                found.append(int(name))
        return found

    def finish(self, timeout: float = 240) -> Run:
        try:
            code = self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=10)
        stdout = self.process.stdout.read() if self.process.stdout else ""
        return Run(code, stdout, "".join(self.lines), self.output)

    def workers(self) -> list[int]:
        """Pids of Beam's SDK worker processes under this one (Beam starts
        each through a shell: the worker is a grandchild)."""
        parents, commands = {}, {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    parents[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    commands[int(name)] = f.read().split(b"\0")
            except OSError:
                continue

        def below(pid: int) -> bool:
            while pid in parents and pid > 1:
                pid = parents[pid]
                if pid == self.process.pid:
                    return True
            return False

        return [pid for pid, argv in commands.items()
                if below(pid) and any(b"sdk_worker_main" in a for a in argv)
                and not argv[0].endswith(b"sh")]


def kill_all(pids: list[int], signum: int = signal.SIGKILL) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def wait_for(predicate, timeout: float = 60.0, every: float = 0.1) -> Optional[bool]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return None
