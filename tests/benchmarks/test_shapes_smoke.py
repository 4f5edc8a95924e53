"""Smoke test of benchmarks/shapes.py: a few series of one shape fitted in
the calls BatchByLength forms, their CPU against the estimate printed, and
the records re-estimated by --model without fitting."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "shapes.py")
ROW = r"^\| rough_rbf \| 3 \| 4 \| (\d+) \| ([\d.]+) \| (\d+) \| ([\d.]+), ([\d.]+) \| ([\d.]+), ([\d.]+) \|"


def test_a_shape_is_fitted_in_calls_and_its_records_re_estimated(tmp_path):
    out = tmp_path / "shapes.json"
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, SCRIPT, "--shapes", "rough_rbf", "--count", "4",
                           "--seed", "3", "--seconds_per_fit_call", "0.05", "--predict", "3",
                           "--out", str(out)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    row = re.search(ROW, done.stdout, re.M)
    assert row, done.stdout
    calls = json.loads(out.read_text())["calls"]
    assert int(row[3]) == len(calls) >= 1
    assert sum(len(c["lengths"]) for c in calls) == 4
    # AR(1) draws of phi 0 and 0.2: white noise and nearly so, rough.
    assert int(row[1]) == sum(sum(c["rough"]) for c in calls) >= 2
    assert float(row[2]) > 0  # Newton evaluations per series
    # The forecasts after each call, timed apart from it.
    assert re.search(r"^forecasts, rough_rbf: [\d.]+ CPU ms a series, [\d.]+ % of the fit",
                     done.stdout, re.M), done.stdout
    assert all(c["predict_cpu_s"] >= 0 for c in calls)
    again = subprocess.run([sys.executable, SCRIPT, "--model", str(out)],
                           capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert re.search(ROW, again.stdout, re.M)[0] == row[0]
