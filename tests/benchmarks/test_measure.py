"""benchmarks/measure.py: a process tree's wall time, ended when it is
reaped, and its memory; a timeout kills the tree. Lower bounds only: the
machine's load can only lengthen a run."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from measure import run_measured  # noqa: E402


def _run(tmp_path, code: str, **kwargs):
    return run_measured([sys.executable, "-c", code], dict(os.environ), str(tmp_path),
                        str(tmp_path / "log"), **kwargs)


def test_a_process_is_timed_to_its_exit_and_its_memory_sampled(tmp_path):
    measured = _run(tmp_path, "import time; block = bytearray(200 << 20); time.sleep(0.6)")
    assert (measured.returncode, measured.timed_out) == (0, False)
    assert measured.wall_s >= 0.6
    assert measured.tree_peak_mb >= 150 and measured.largest_process_mb >= 200


def test_exit_codes_pass_through_and_a_timeout_kills_the_tree(tmp_path):
    assert _run(tmp_path, "raise SystemExit(3)").returncode == 3
    measured = _run(tmp_path, "import time; time.sleep(30)", timeout_s=0.3)
    assert (measured.returncode, measured.timed_out) == (-9, True)
    assert 0.3 <= measured.wall_s < 30
