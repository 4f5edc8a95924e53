"""Running gpfit for the reliability tests: in this process (cheap after the
first run) or as `python -m pipeline` in a subprocess (a real exit code and a
real stderr, where a traceback would show)."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
from typing import Optional

import pyarrow.parquet as pq

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Quiet, one BLAS thread, no GPU probing; subprocesses inherit it.
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
       "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": REPO}


@dataclasses.dataclass
class Run:
    """One gpfit invocation: exit code, what it printed, where it wrote."""

    code: int
    stdout: str
    stderr: str
    output: str

    @property
    def manifest(self) -> Optional[dict]:
        path = os.path.join(self.output, "_SUCCESS.json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)

    def rows(self) -> list[dict]:
        return read_rows(self.output)


def read_rows(folder: str) -> list[dict]:
    """Every row of every params shard, in file order (duplicates kept)."""
    shards = sorted(n for n in os.listdir(folder)
                    if n.startswith("params-") and n.endswith(".parquet"))
    return [row for name in shards
            for row in pq.read_table(os.path.join(folder, name)).to_pylist()]


def listing(folder: str) -> list[str]:
    """Every file and folder under `folder`, relative, folders ending in "/"."""
    found = []
    for root, dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        prefix = "" if rel == "." else rel + "/"
        found += [prefix + d + "/" for d in dirs] + [prefix + f for f in files]
    return sorted(found)


def gpfit_here(input_: str, output: str, *extra: str) -> Run:
    """The gpfit CLI in this process."""
    from pipeline import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(["--input", input_, "--output", output, *extra])
    return Run(code, out.getvalue(), err.getvalue(), output)


def gpfit_command(input_: str, output: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pipeline", "--input", input_, "--output", output, *extra]


def gpfit_subprocess(input_: str, output: str, *extra: str, timeout: float = 300) -> Run:
    """`python -m pipeline ...` in a subprocess."""
    done = subprocess.run(gpfit_command(input_, output, *extra), cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=timeout, check=False)
    return Run(done.returncode, done.stdout, done.stderr, output)
