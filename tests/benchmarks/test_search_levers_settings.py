"""benchmarks/search_levers.py's NAME=VALUE settings: one that names no
constant of gpcore/starts.py (or kernels.NAME of gpcore/kernels.py), or
whose VALUE is not of the constant's type, is refused naming it, before
any set's series or peer fits are loaded."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("args, message", [
    (["--set", "workload_a", "--count", "2", "FAR_PROBE_LENGHTS="],
     "'FAR_PROBE_LENGHTS=': give NAME=VALUE with NAME a constant of gpcore/starts.py"),
    (["--set", "tuning", "PROBE_LENGTHS=0.5", "kernels.LENGTH_GRID_SIZE=1.5"],
     "'kernels.LENGTH_GRID_SIZE=1.5': VALUE must be int, as in LENGTH_GRID_SIZE = 10"),
])
def test_a_wrong_setting_is_refused_before_any_set_loads(args, message):
    env = dict(os.environ, PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "search_levers.py"),
                           *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert message in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # nothing loaded, fitted or printed
