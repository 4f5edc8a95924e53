"""Thread counts and process settings, in one place: the environment every
gpfit process starts with, and TensorFlow's thread pools and graph rewrites.

GP matrices here are small (tens to a few thousand points); oversubscribed
thread pools make them slower, not faster (docs/design.md, "Measured facts",
"Threads"). Grappler's graph rewrites lengthen the fitter's first call and buy
nothing after it (docs/design.md, "Start-up").

PROCESS_ENV is read, never copied: the `gpfit` command (pipeline/cli.py) and
the benchmarks set it with set_process_env before numpy loads, the Makefile
exports it, and the image's ENV lines carry it (the Dockerfile cannot import
Python; tests/pipeline/test_runtime.py holds them equal). TensorFlow's thread
counts are not in it: they are derived per process from its share of the
cores (pipeline/fitters.py), and INTRA_OP_ENV / INTER_OP_ENV, where a user
sets them, win. This module imports nothing heavy at its top, so that it can
run before numpy and TensorFlow load.
"""
from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
from typing import MutableMapping

# name -> value; a value already in the environment wins, but an empty one
# (a scheduler's template: NAME= with no value), read as unset.
PROCESS_ENV = {
    # One BLAS thread: numpy's and scikit-learn's small matrices (docs/design.md,
    # "Threads"). Read by OpenBLAS when numpy first loads.
    "OPENBLAS_NUM_THREADS": "1",
    # TensorFlow's C++ INFO lines off; gpcore/quiet.py filters the rest.
    "TF_CPP_MIN_LOG_LEVEL": "2",
    # tf-keras (which TFP imports anyway) instead of all of Keras 3 at
    # TensorFlow's import; gpfit uses no Keras (docs/design.md, "Start-up").
    "TF_USE_LEGACY_KERAS": "1",
}

# A user's TensorFlow thread counts: they win over the derived ones
# (pipeline/fitters.py). Not set by gpfit, in the image or anywhere else.
INTRA_OP_ENV, INTER_OP_ENV = "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"


def set_process_env(environ: MutableMapping[str, str] = os.environ) -> MutableMapping[str, str]:
    """Puts PROCESS_ENV into `environ` where it has no value of its own (or
    an empty one: OpenBLAS read OPENBLAS_NUM_THREADS= as a thread per core);
    returns it. For this process, call it before numpy and TensorFlow load
    (worker processes inherit it)."""
    for name, value in PROCESS_ENV.items():
        if not environ.get(name):
            environ[name] = value
    return environ


def configure_threads(intra_op: int | None = None, inter_op: int | None = None) -> None:
    """Sets TF's intra-op and inter-op thread counts.

    Must run before TensorFlow starts its runtime (before the first op);
    afterwards TF refuses, and this raises RuntimeError unless the requested
    counts are already in force. None leaves that count as it is. The caller
    decides the counts (the pipeline lets INTRA_OP_ENV / INTER_OP_ENV win:
    pipeline/fitters.py).
    """
    import tensorflow as tf

    for value, getter, setter in (
        (intra_op, tf.config.threading.get_intra_op_parallelism_threads,
         tf.config.threading.set_intra_op_parallelism_threads),
        (inter_op, tf.config.threading.get_inter_op_parallelism_threads,
         tf.config.threading.set_inter_op_parallelism_threads),
    ):
        if value is None or getter() == value:
            continue
        try:
            setter(value)
        except RuntimeError as err:
            raise RuntimeError(
                "TensorFlow thread counts must be set before TensorFlow runs its "
                f"first op (wanted {value}, in force {getter()})") from err


def skip_graph_rewrites() -> None:
    """Turns off Grappler, TensorFlow's graph optimiser, for this process.

    The fitter's first call (trace, rewrite and run) is shorter without
    the rewrites, and a fit afterwards takes the same CPU either way
    (its ops are already large, fused by hand where it matters): measured in
    docs/design.md, "Start-up". Any time before TensorFlow builds a graph.
    """
    import tensorflow as tf

    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


_pause = {"blocks": 0, "was_enabled": False}
_pause_lock = threading.Lock()


@contextlib.contextmanager
def collection_paused(importing: str | None = None):
    """Python's cyclic garbage collector off while the block runs (nested
    and concurrent blocks: until the last ends), then the objects made so
    far moved out of its way (gc.freeze), and it is on again if it was.
    importing: the module the block imports; if it is loaded already, the
    block runs as it is: a freeze later in a process would keep whatever
    cyclic garbage it held then for good (a worker reaches the imports at
    every DoFn set-up).

    For the imports of TensorFlow, TFP and Beam: they allocate hundreds of
    thousands of objects that live as long as the process, and the
    collections their allocation triggered, each walking every object made
    so far, took about a fifth of the imports' CPU (docs/design.md,
    "Start-up"). Frozen, those objects are not walked again by the
    collections of the run that follows; the run's own cycles are
    collected as before.
    """
    if importing is not None and importing in sys.modules:
        yield
        return
    with _pause_lock:
        if _pause["blocks"] == 0:
            _pause["was_enabled"] = gc.isenabled()
            gc.disable()
        _pause["blocks"] += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pause["blocks"] -= 1
            if _pause["blocks"] == 0:
                gc.freeze()
                if _pause["was_enabled"]:
                    gc.enable()
