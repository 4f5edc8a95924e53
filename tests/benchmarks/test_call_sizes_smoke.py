"""Smoke test of benchmarks/call_sizes.py: the command on a few drawn short
series, its fit calls' figures read back from the manifest."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "call_sizes.py")


def test_the_command_on_short_series_reports_its_calls_against_the_target():
    done = subprocess.run([sys.executable, SCRIPT, "--series", "40", "--kernels", "rbf",
                           "--seconds_per_fit_call", "0.02"], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "40 generated short series (seed 1), --seconds_per_fit_call 0.02" in done.stdout
    row = re.search(r"^\| rbf \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", done.stdout, re.M)
    assert row, done.stdout
    # 40 series of 8-40 points at a floor of 3.5 ms each: calls of about
    # 6 series, over the three length buckets.
    calls, largest, ratio = int(row[1]), float(row[3]), float(row[4])
    assert calls >= 3
    assert ratio == pytest.approx(largest / 0.02, abs=0.006)  # printed to 2 places
