"""Smoke test of benchmarks/auto_choice.py: fits of two kernels on a few
tune series cached, then the table scored from them, where `auto` over
both must equal, series by series, the lower-BIC kernel's forecast. Not
the forecast targets; no timing assertions."""
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import auto_choice  # noqa: E402


def test_fit_then_table_on_a_few_series(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    script = os.path.join(ROOT, "benchmarks", "auto_choice.py")
    common = ["--set", "tune", "--every", "6", "--cache", str(tmp_path)]
    subprocess.run([sys.executable, script, "fit", "--kernels", "rbf,matern52", *common],
                   check=True, env=env, capture_output=True, timeout=900)
    fits = {}
    for k in ("rbf", "matern52"):
        with open(tmp_path / f"tune.every6.{k}.json") as f:
            fits[k] = json.load(f)
        assert len(fits[k]["rows"]) == 6 and fits[k]["seconds"] > 0
        assert all(r["status"] == "ok" and r["scores"] is not None for r in fits[k]["rows"])
    out = subprocess.run([sys.executable, script, "table", "--settings", "rbf, m52", *common],
                         check=True, env=env, capture_output=True, text=True, timeout=900).stdout
    (row,) = [line for line in out.splitlines() if line.startswith("| rbf, m52; none")]
    # The lower BIC's MASE per series, averaged by hand.
    mase = [min((fits[k]["rows"][i] for k in fits), key=lambda r: r["bic"])["scores"]["mase"]
            for i in range(6)]
    assert abs(float(row.split("|")[2]) - np.mean(mase)) <= 0.0005 + 1e-9  # printed to 3 places
    assert "rbf, m52" in auto_choice.CANDIDATE_SETS
