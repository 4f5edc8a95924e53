"""Running gpfit for the reliability tests: in this process (cheap after the
first run) or as `python -m pipeline` in a subprocess (a real exit code and a
real stderr, where a traceback would show)."""
from __future__ import annotations

import os
import subprocess
import sys

from gpfit_runs import Run, files_in, gpfit_here, read_rows  # noqa: F401  (re-exported)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Quiet, one BLAS thread, no GPU probing; subprocesses inherit it.
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
       "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": REPO}


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
