"""Per-worker-process concerns: TensorFlow thread pools and progress lines.

GP matrices are small; oversubscribed thread pools make them slower, not
faster (DESIGN.md, "Measured"). N worker processes on C cores therefore get
max(1, C // N) intra-op threads each, set before TensorFlow starts.
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Callable, Optional

from apache_beam.options.pipeline_options import (DebugOptions, DirectOptions,
                                                  PipelineOptions, StandardOptions)

_LOG = logging.getLogger(__name__)
_configure_lock = threading.Lock()
_configured: Optional[int] = None

LOCAL_RUNNERS = (None, "DirectRunner", "SwitchingDirectRunner", "FnApiRunner")


def processes_per_machine(options: PipelineOptions) -> Optional[int]:
    """How many SDK worker processes share one machine's cores.

    Returns:
      N for the local runner (N = --direct_num_workers in multi_processing
      mode, else 1: threads share one process); None where the runner starts
      one process per core (Dataflow's default for Python) or is unknown.
    """
    runner = options.view_as(StandardOptions).runner
    if runner in LOCAL_RUNNERS:
        direct = options.view_as(DirectOptions)
        if direct.direct_running_mode != "multi_processing":
            return 1
        return direct.direct_num_workers or (os.cpu_count() or 1)
    experiments = options.view_as(DebugOptions).experiments or []
    if "no_use_multiple_sdk_containers" in experiments:
        return 1
    return None


def intra_op_threads(cores: int, processes: Optional[int]) -> int:
    """TF intra-op threads for one of `processes` processes on `cores` cores
    (None: one process per core)."""
    return max(1, cores // (processes or cores))


def configure_tf_threads(processes: Optional[int]) -> Optional[int]:
    """Sets this process's TF thread pools, once; returns the intra-op count.

    TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS in the environment win.
    A process whose TF runtime already started (a second pipeline in one
    test process) keeps its pools: TF cannot change them any more.
    """
    global _configured
    import gpcore.threads  # TensorFlow: only on workers, only when fitting

    with _configure_lock:
        if _configured is not None:
            return _configured
        intra = int(os.environ.get("TF_NUM_INTRAOP_THREADS")
                    or intra_op_threads(os.cpu_count() or 1, processes))
        # One inter-op thread: a fit is one chain of dependent ops, and more
        # pools than cores only adds contention.
        inter = int(os.environ.get("TF_NUM_INTEROP_THREADS") or 1)
        try:
            gpcore.threads.configure_threads(intra, inter)
        except RuntimeError as err:
            _LOG.info("gpfit: TensorFlow thread pools left as they are: %s", err)
        _configured = intra
        _LOG.info("gpfit: TensorFlow threads in process %d: %d intra-op, %d inter-op",
                  os.getpid(), intra, inter)
        return intra


class Progress:
    """Counts series fitted in this process; says so every `every_s` seconds.

    The clock is injected so that tests can drive it.
    """

    def __init__(self, clock: Callable[[], float], every_s: float = 30.0):
        self._clock = clock
        self._every_s = every_s
        self._start = clock()
        self._last = self._start
        self.done = 0

    def add(self, n: int) -> Optional[str]:
        """Records n more series; returns a progress line when one is due."""
        self.done += n
        now = self._clock()
        if now - self._last < self._every_s:
            return None
        self._last = now
        rate = self.done / max(now - self._start, 1e-9)
        return (f"gpfit progress: {self.done} series fitted in process {os.getpid()} "
                f"in {now - self._start:.0f} s ({rate:.1f} series/s)")
