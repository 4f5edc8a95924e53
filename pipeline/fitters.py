"""A process's TensorFlow threads and its fitters, without Beam.

The Beam job's workers (pipeline/transforms.py) and the DataFrame API
(pipeline/frame.py, inside Spark, Dask or Ray tasks) set TF's thread pools
here, once per process, and the DataFrame API keeps its fitters here: one
per configuration, built on first use and reused by every later call in
the process. The cache lives in this importable module on purpose: Dask
and Ray pickle a function defined in `__main__` by value, so a cache kept
beside such a function would be a new, empty one in every task.

GP matrices are small; oversubscribed thread pools make them slower, not
faster (docs/design.md, "Threads" and "Fitters side by side"): a process
with C cores runs C fitters side by side, each with one intra-op thread,
and C inter-op threads.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import os
import threading
import time
from typing import Optional

from gpcore.config import FitConfig
from gpcore.threads import INTER_OP_ENV, INTRA_OP_ENV

BLAS_ENV = "OPENBLAS_NUM_THREADS"  # read by OpenBLAS as numpy loads

_LOG = logging.getLogger(__name__)

_lock = threading.Lock()
_build_lock = threading.Lock()  # held while a fitter is built
_configured: Optional[int] = None
_configured_in: Optional[int] = None  # the pid of the process that configured them


def machine_cores() -> int:
    """This machine's cores (os.cpu_count(), 1 where unknown): the most
    fitters, local workers or TensorFlow threads a count may ask for."""
    return os.cpu_count() or 1


def configure_threads(cores: int) -> int:
    """Sets this process's TF thread pools for `cores` cores, once; returns
    how many fitters it runs side by side (gpcore.build_fitter's copies).

    C cores: C fitters on threads, each with one intra-op thread, and C
    inter-op threads. TF_NUM_INTRAOP_THREADS=k / TF_NUM_INTEROP_THREADS in
    the environment win (the one place gpfit reads them): then C // k
    fitters of k threads. A process whose TF runtime already started keeps
    its pools (TF cannot change them any more) and the first answer.

    Raises:
      RuntimeError: this process is a fork of one that configured them.
    """
    global _configured, _configured_in
    _check_not_forked()
    from gpcore import quiet
    quiet.import_tensorflow(keep_lines=logging.getLogger("gpfit").isEnabledFor(logging.DEBUG))
    import gpcore.threads  # TensorFlow: only where fitting
    with _lock:
        if _configured is not None:
            return _configured
        cores = max(1, int(cores))
        intra, inter = thread_counts_given()
        inter = inter or cores
        try:
            gpcore.threads.configure_threads(intra, inter)
        except RuntimeError as err:
            _LOG.info("gpfit: TensorFlow thread pools left as they are: %s", err)
        gpcore.threads.skip_graph_rewrites()  # start-up: a third of the first fit call
        _configured, _configured_in = max(1, cores // intra), os.getpid()
        _LOG.info("gpfit: TensorFlow threads in process %d: %d intra-op, %d inter-op; "
                  "%d fitter(s) side by side", os.getpid(), intra, inter, _configured)
        return _configured


def _check_not_forked() -> None:
    """Refuses a process forked from one where gpfit started TensorFlow
    (a multiprocessing Pool under Linux's default start method): a fork
    holds no TF threads, only their state, and its first fit waited forever."""
    if _configured_in is not None and _configured_in != os.getpid():
        raise RuntimeError(
            f"gpfit started TensorFlow in process {_configured_in} and this process "
            f"({os.getpid()}) is a fork of it, where TensorFlow's threads do not run (a fit "
            "would wait forever): start the worker processes with multiprocessing's 'spawn' "
            "or 'forkserver' method (multiprocessing.get_context('spawn')), or fit nothing "
            "in the parent before they start")


def thread_counts_given() -> tuple[int, Optional[int]]:
    """TF_NUM_INTRAOP_THREADS (1 if unset) and TF_NUM_INTEROP_THREADS (None if
    unset) from the environment; the command checks them before any work
    where its workers inherit them (runtime.check_thread_counts), as the
    workers read them only once the job runs.

    Raises:
      UsageError: one is set but not a whole number from 1 to the machine's
        cores: 1000000000 sized TensorFlow's pools so that the process
        died (SIGSEGV, exit 139, no word said, its lock left behind).
    """
    cores = machine_cores()
    intra, inter = (_count_in_environment(
        name, cores, f" to this machine's {cores} cores (TensorFlow threads per fitter)")
        for name in (INTRA_OP_ENV, INTER_OP_ENV))
    return intra or 1, inter


def check_blas_threads() -> None:
    """Refuses an OPENBLAS_NUM_THREADS that OpenBLAS reads as one thread per
    core (0, below 0, not a number): the oversubscription gpfit's 1 is there
    to prevent (docs/design.md, "Threads"). A whole number from 1 wins as
    given (OpenBLAS takes at most the cores); none, gpfit's 1
    (gpcore.threads.PROCESS_ENV).

    Raises:
      UsageError: naming the variable, its value and what to set.
    """
    _count_in_environment(BLAS_ENV, float("inf"), " (BLAS threads per process; gpfit's "
                          "default is 1): OpenBLAS reads this value as one thread per core")


def _count_in_environment(name: str, most: float, said: str) -> Optional[int]:
    """The whole number from 1 to `most` in environment variable `name`;
    None where it is unset or empty.

    Raises:
      UsageError: "NAME='value' in the environment must be a whole number
        from 1" + said + "; set it so, or unset it".
    """
    from pipeline.io.errors import UsageError

    value = os.environ.get(name) or ""
    if value and not (value.strip().isdigit() and 1 <= int(value) <= most):
        raise UsageError(f"{name}={value!r} in the environment must be a whole number from "
                         f"1{said}; set it so, or unset it")
    return int(value) if value else None


def build(config: FitConfig, copies: int):
    """A new fitter for config (gpcore.build_fitter), said in one line."""
    from gpcore import build_fitter

    start = time.monotonic()
    fitter = build_fitter(config, copies)
    _LOG.info("gpfit: built the %s fitter in %.1f s (%d side by side)", config.kernel_name,
              time.monotonic() - start, copies)
    return fitter


@dataclasses.dataclass
class Cached:
    """A cached fitter and the lock its callers hold while fitting (a fitter
    holds variables: one call at a time)."""

    fitter: object
    lock: threading.Lock
    calls: int = 0


# Fitters kept, the least recently used let go beyond it: each holds its
# variables and traced graph, 86 MB and 27,000 Python objects for rbf when
# traced (23 MB loaded from the trace cache), so a notebook that tried one
# option after another (restarts, max_points, kernels) grew by that much per
# option set, without end (docs/design.md, "DataFrame API"). A fitter let
# go and asked for again is built anew: its trace is still held by the
# trace cache (gpcore/trace_cache.py, MAX_HELD), so it costs no trace.
# Counted, not weighed by candidates: an auto fitter, one GPFitter per
# candidate, held 120 MB traced against rbf's 86 (mostly what any fitter
# holds), so 8 of them about 1 GB (the same section, *Counted, not weighed*).
MAX_FITTERS = 8
_cache: "collections.OrderedDict[tuple[FitConfig, int], Cached]" = collections.OrderedDict()
_built = 0  # fitters this process built into the cache
_calls_let_go = 0  # calls made with fitters since let go


def cached(config: FitConfig, cores: int = 1) -> Cached:
    """This process's fitter for (config, cores): built on the first call,
    the same one afterwards while it is among the MAX_FITTERS used last.
    The threads are configured on the first call of the process
    (configure_threads)."""
    global _built
    copies = configure_threads(cores)
    key = (config, copies)
    with _lock:
        found = _used(key)
    if found is not None:
        return found
    with _build_lock:  # two threads asking at once build one fitter
        with _lock:
            found = _used(key)
        if found is None:
            found = Cached(build(config, copies), threading.Lock())
            with _lock:
                _cache[key] = found
                _built += 1
                _let_go_beyond(MAX_FITTERS)
        return found


def _used(key) -> Optional[Cached]:
    """The cached fitter for key, marked as used last; under _lock."""
    found = _cache.get(key)
    if found is not None:
        _cache.move_to_end(key)
    return found


def _let_go_beyond(most: int) -> None:
    """Drops the least recently used fitters beyond `most`; under _lock. A
    call still fitting with one keeps it until it returns."""
    global _calls_let_go
    while len(_cache) > most:
        _, gone = _cache.popitem(last=False)
        _calls_let_go += gone.calls


def counts() -> dict:
    """{"built": fitters built into this process's cache, "calls": fit
    calls made with them, "kept": fitters in it now}: how a test (Dask's
    client.run) sees reuse."""
    with _lock:
        return {"built": _built, "kept": len(_cache),
                "calls": _calls_let_go + sum(c.calls for c in _cache.values())}


def warm_up_in_background(config: FitConfig) -> threading.Thread:
    """Starts a daemon thread that readies this process's kept traces of
    config's fitters (GPFitter.warm_up, one per configuration fitted: each
    candidate under auto) while the job reads its input, for a job whose
    fitting runs in this process, after configure_threads. A failure is
    logged and changes nothing: the job's fitters load or trace as they
    would have (docs/design.md, "What a small night costs")."""
    def run() -> None:
        from gpcore import GPFitter
        from gpcore.config import fitted_configs

        start = time.monotonic()
        try:
            readied = [c.kernel_name for c in fitted_configs(config)
                       if GPFitter(c, name="warm_up").warm_up()]
        except Exception as err:  # pylint: disable=broad-except  (the job goes on as it would)
            _LOG.debug("gpfit: kept traces not readied: %s: %s", type(err).__name__, err)
            return
        if readied:
            _LOG.debug("gpfit: kept trace(s) of %s readied in %.2f s", ", ".join(readied),
                       time.monotonic() - start)

    thread = threading.Thread(target=run, name="gpfit-warm-up", daemon=True)
    thread.start()
    return thread
