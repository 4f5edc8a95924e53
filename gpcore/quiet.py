"""TensorFlow started without its start-up lines on stderr.

Loading TensorFlow 2.21 on a machine without a GPU writes 5-7 lines from
C++ straight to file descriptor 2, before and outside Python's logging and
whatever TF_CPP_MIN_LOG_LEVEL says: "All log messages before
absl::InitializeLog() ...", "oneDNN custom operations are on", "Could not
find cuda drivers", and at the first device query "failed call to cuInit".
TF_CPP_MIN_LOG_LEVEL=3 hides only the last, TF_ENABLE_ONEDNN_OPTS=0 one
more but changes the arithmetic (docs/design.md, "Runners and quiet runs").
So the import and the first device query run with descriptor 2 sent to a
file, and what came is written back but for those known lines: any other
line still shows.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import threading
import warnings

from gpcore import threads

_LOG = logging.getLogger(__name__)
_lock = threading.Lock()

# TFP checks TensorFlow's version with distutils' LooseVersion, which warns
# that it is deprecated, at the first use of each of its lazily loaded
# packages, inside gpfit's fitter: under a user's PYTHONWARNINGS=error or
# -W error::DeprecationWarning (a test suite's) that warning was raised, and
# every fit failed. It is TFP's to fix, not the user's.
warnings.filterwarnings("ignore", message="distutils Version classes are deprecated",
                        category=DeprecationWarning)
_done = False

# Lines TensorFlow writes at start-up on a CPU-only machine; nothing in them
# is for gpfit's user.
START_UP = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called"
    r"|oneDNN custom operations are on"
    r"|Could not find cuda drivers"
    r"|failed call to cuInit"
    r"|Unable to register cu(DNN|FFT|BLAS) factory"
    r"|computation placer already registered"
    r"|This TensorFlow binary is optimized to use available CPU instructions"
    r"|To enable the following instructions: .* rebuild TensorFlow"
    r"|TF-TRT Warning: Could not find TensorRT")


def import_tensorflow(keep_lines: bool = False):
    """Imports TensorFlow and TFP and lists the devices, once per process,
    dropping their start-up lines (START_UP) from stderr; keep_lines: leave
    stderr alone (gpfit's --log_level debug). Returns the tensorflow module.
    """
    global _done
    with _lock:
        if _done or keep_lines or "tensorflow" in sys.modules:
            _done = True
            with threads.collection_paused("tensorflow"):
                return _import()
        _done = True
        with threads.collection_paused("tensorflow"):
            said = _captured(_start)
    for line in said.splitlines():
        if START_UP.search(line):
            _LOG.debug("TensorFlow: %s", line)
        else:
            print(line, file=sys.stderr)
    import tensorflow as tf
    return tf


def _start() -> None:
    tf = _import()
    tf.config.list_physical_devices()  # the CUDA probe; thread pools can still be set


def _import():
    """TensorFlow, with TFP imported first. TFP imported after TensorFlow
    loads its `experimental` and `layers` packages at once (tf_keras with
    them), to register them with TensorFlow and Keras; imported before,
    they stay lazy, as the rest of TFP is, and load if used: gpcore uses
    neither, and they cost 0.45 s of every process (docs/design.md,
    "Start-up")."""
    import tensorflow_probability  # noqa: F401
    import tensorflow as tf
    return tf


def _captured(work) -> str:
    """Runs work() with file descriptor 2 sent to a temporary file; -> what
    was written there (also when work raises)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            work()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            said = sink.read().decode("utf-8", "replace")
    return said
