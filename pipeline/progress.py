"""Progress lines of a worker process's fitting: done/total series, the
rate and an ETA, when a fit call ends and from a heartbeat thread during a
long one."""
from __future__ import annotations

import os
import threading
import weakref
from typing import Callable, Optional

class Progress:
    """Counts the series this process fitted; says so at most every
    `every_s` seconds: when a fit call ends (add) and, during a long call,
    from a heartbeat thread (beat, see start_heartbeat).

    A line gives done/total series, the rate and an ETA. `total` is the
    number of series the job fits (set_total; the pipeline counts them
    once they are all read); before that the line says "of ? (not counted
    yet)". `processes` is how many processes fit the job's series (None:
    not known, as on Dataflow); the ETA assumes they share the series
    evenly and is left out where their number is not known. The rate is
    per second of fit calls, not of the process's life (which holds the
    wait for the job's reading), and the ETA counts the running call's
    series as due when the rate says, less the time it has run.
    The clock is injected so that tests can drive it.
    """

    def __init__(self, clock: Callable[[], float], every_s: float = 30.0,
                 processes: Optional[int] = 1):
        self._clock = clock
        self._every_s = every_s
        self._processes = processes
        self._start = clock()
        self._last = self._start
        self._lock = threading.Lock()
        self._call: Optional[tuple[int, float, float]] = None  # series, started, estimated s
        # Wall seconds in finished fit calls, and where the next began (a
        # call counted by `add` alone, without start_call: at the last one's end).
        self._fitting_s = 0.0
        self._since = self._start
        self.done = 0
        self.total: Optional[int] = None

    def set_total(self, total: Optional[int]) -> None:
        if total is not None:
            self.total = int(total)

    def start_call(self, series: int, estimated_s: float) -> None:
        """A fit call of `series` series, estimated at `estimated_s` core-seconds, began."""
        with self._lock:
            self._call = (series, self._clock(), estimated_s)

    def add(self, n: int) -> Optional[str]:
        """Records n more series (a call ended); returns a line when one is due."""
        with self._lock:
            now = self._clock()
            started = self._call[1] if self._call is not None else self._since
            self._fitting_s += max(now - started, 0.0)
            self._since = now
            self.done += n
            self._call = None
            return self._due()

    def beat(self) -> Optional[str]:
        """A line when one is due and a fit call is running (the heartbeat
        thread's check; an idle process says nothing)."""
        with self._lock:
            return self._due() if self._call is not None else None

    def _due(self) -> Optional[str]:
        now = self._clock()
        if now - self._last < self._every_s:
            return None
        self._last = now
        return self._line(now)

    def _line(self, now: float) -> str:
        elapsed = max(now - self._start, 1e-9)
        where = (f"in process {os.getpid()}" if self._processes == 1 else
                 f"in process {os.getpid()} (one of {self._processes or '?'}; total: the job's)")
        of = f"{self.done}/{self.total}" if self.total is not None else f"{self.done} of ? (not counted yet)"
        if self.done:
            rate = self.done / max(self._fitting_s, 1e-9)
            eta = None
            if self.total is not None and self._processes:
                eta = self._eta(max(self.total / self._processes - self.done, 0.0), rate, now)
            # Two significant digits below 1 series/s: long series fit at
            # minutes each, which two decimals said as "0.00 series/s".
            said = f"{rate:.2f}" if rate >= 1.0 else f"{rate:.2g}"
            pace = f"{said} series/s, ETA " + (f"{eta:.0f} s" if eta is not None
                                                   else "not known")
        else:
            pace = "rate and ETA not known yet (no fit call finished)"
        line = f"gpfit progress: {of} series fitted {where} in {elapsed:.0f} s; {pace}"
        if self._call is not None:
            series, started, estimated = self._call
            line += (f"; a fit call of {series} series running for {now - started:.0f} s "
                     f"(estimated {estimated:.1f} core-s)")
        return line

    def _eta(self, left: float, rate: float, now: float) -> float:
        """Seconds until this process's `left` series are fitted at `rate`
        (series per second of fit calls): the running call's share of them
        is due `series / rate` after it began, which may be soon when it
        has run long (a call of most of the series left)."""
        if self._call is None:
            return left / rate
        series, started, _ = self._call
        running = min(series, left)
        return max(running / rate - (now - started), 0.0) + (left - running) / rate


def start_heartbeat(progress: Progress, log: Callable[[str], None],
                    every_s: float) -> threading.Event:
    """Checks `progress` every every_s seconds (wall clock) on a daemon
    thread and logs its due lines, so that lines come while a fit call
    runs for minutes; the thread ends when the returned event is set or
    `progress` is no longer used (it holds only a weak reference)."""
    stop = threading.Event()
    watched = weakref.ref(progress)
    del progress

    def run():
        while not stop.wait(every_s):
            current = watched()
            if current is None:
                return
            line = current.beat()
            del current
            if line:
                log(line)

    threading.Thread(target=run, name="gpfit-progress", daemon=True).start()
    return stop
