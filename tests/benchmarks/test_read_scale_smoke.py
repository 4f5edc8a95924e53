"""Smoke test of benchmarks/read_scale.py: each case at two small sizes
through the command, a row per size and its growth against the size."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "read_scale.py")


def test_each_case_runs_the_command_at_two_sizes():
    done = subprocess.run([sys.executable, SCRIPT, "--cases", "one_id,many_ids,long_ids",
                           "--rows_small", "5000", "--rows_large", "10000", "--ids_small", "50",
                           "--ids_large", "100", "--ids_long", "20"],
                          capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr[-3000:]
    rows = re.findall(r"^\| (\w+) \| ([\d,]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]*) \|$",
                      done.stdout, re.M)
    assert [(r[0], r[1]) for r in rows] == [
        ("one_id", "5,000"), ("one_id", "10,000"), ("many_ids", "50"), ("many_ids", "100"),
        ("long_ids", "100"), ("long_ids", "10,000")], done.stdout
    assert all(float(r[3]) > 0 for r in rows)
    assert [bool(r[4]) for r in rows] == [False, True] * 3  # growth on the larger size
