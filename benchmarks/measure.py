"""Running one contender as a process tree, and measuring its wall time and
peak memory.

Two memory figures, because neither alone tells the whole story:
- tree peak: the largest sum over the tree's processes of their proportional
  set size (PSS; shared pages split between the processes sharing them),
  sampled SAMPLE_S seconds apart at first, then further apart, up to
  SAMPLE_MAX_S. This is what the contender costs the machine, workers
  included. A PSS reading walks the process's page tables: about 33 ms
  of CPU for a 1.2 GB gpfit process, so every 0.2 s it took 4.5 CPU s of
  a 32 s run on the 2 cores the contender uses, and the run 1-3 s longer
  (small processes, such as scikit-learn's, cost far less to read).
- largest process: ru_maxrss from wait4 for the contender's process and its
  reaped descendants: the peak RSS of the single largest process (exact, not
  sampled, but shared pages counted in full).

Linux only (/proc).
"""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import threading
import time
from typing import Optional

SAMPLE_S = 0.2       # first gap between memory samples, s
SAMPLE_MAX_S = 2.0   # the gap grows by SAMPLE_GROWTH up to this
SAMPLE_GROWTH = 1.5


@dataclasses.dataclass
class Measured:
    """What one contender process tree cost.

    Attributes:
      returncode: exit status (negative: killed by that signal).
      wall_s: seconds from start to exit.
      tree_peak_mb: peak summed PSS of the process tree, MB (sampled).
      largest_process_mb: peak RSS of the largest process in the tree, MB.
      timed_out: killed after the timeout.
    """

    returncode: int
    wall_s: float
    tree_peak_mb: float
    largest_process_mb: float
    timed_out: bool = False


def run_measured(command: list[str], env: dict, cwd: str, log_path: str,
                 timeout_s: Optional[float] = None) -> Measured:
    """Runs `command` to completion, output to `log_path`; measures it.

    The wall time ends when the process is reaped, by a thread blocked in
    wait4, not at the next memory sample: polling put the end up to a
    sample's gap late (0.1 s on average at 0.2 s, a few percent of a small
    night's run).
    """
    with open(log_path, "wb") as log:
        start = time.perf_counter()
        # Own session: the whole tree can be killed on timeout.
        proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        reaped: dict = {}
        done = threading.Event()

        def reap() -> None:
            reaped["wait"] = os.wait4(proc.pid, 0)
            reaped["end"] = time.perf_counter()
            done.set()

        threading.Thread(target=reap, daemon=True).start()
        peak_kb = 0
        timed_out = False
        gap = SAMPLE_S
        while not done.is_set():
            peak_kb = max(peak_kb, _tree_memory_kb(proc.pid))
            if timeout_s is not None and time.perf_counter() - start > timeout_s:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                break
            done.wait(gap)
            gap = min(gap * SAMPLE_GROWTH, SAMPLE_MAX_S)
        done.wait()
        _, status, usage = reaped["wait"]
        wall = reaped["end"] - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    # A tree too short-lived to be sampled still has its ru_maxrss.
    largest_mb = usage.ru_maxrss / 1024.0
    return Measured(proc.returncode, wall, peak_kb / 1024.0 if peak_kb else largest_mb,
                    largest_mb, timed_out)


def _tree_memory_kb(root: int) -> int:
    """Summed PSS (else RSS) of `root` and all its descendants, kB."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    # The command name may hold spaces: fields follow the last ')'.
                    fields = f.read().rsplit(b")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in set(frontier)]
        tree.extend(frontier)
    return sum(_process_memory_kb(pid) for pid in tree)


def _process_memory_kb(pid: int) -> int:
    for path, key in ((f"/proc/{pid}/smaps_rollup", b"Pss:"), (f"/proc/{pid}/status", b"VmRSS:")):
        try:
            with open(path, "rb") as f:
                for line in f:
                    if line.startswith(key):
                        return int(line.split()[1])
        except (OSError, ValueError):
            continue
    return 0
