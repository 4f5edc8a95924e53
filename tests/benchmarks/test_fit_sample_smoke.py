"""Smoke test of benchmarks/fit_sample.py as its docstring runs it: a run
written to JSON, then a second run compared against it (the same tree: no
nll moves), and a set it does not know refused by name."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "fit_sample.py")
ENV = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")


def _run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], env=ENV, capture_output=True,
                          text=True, timeout=600)


def test_a_run_then_a_comparison_on_a_sample(tmp_path):
    before = tmp_path / "before.json"
    done = _run("--kernel", "rbf", "--every", "40", "--out", str(before))
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(before.read_text())
    assert run["series"] == len(run["nll"]) > 0 and run["evaluations"] > 0
    done = _run("--kernel", "rbf", "--every", "40", "--compare", str(before))
    assert done.returncode == 0, done.stderr[-3000:]
    # One tree, one process each: the fits are deterministic.
    assert f"over {run['series']} series (0 by > 0.01)" in done.stdout


def test_a_set_it_does_not_know_is_refused_naming_the_sets():
    done = _run("--set", "seasnal")
    assert done.returncode == 2
    assert "argument --set: no set 'seasnal'; give one of seasonal, tuning" in done.stderr
    assert "Traceback" not in done.stderr
