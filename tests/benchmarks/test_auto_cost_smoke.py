"""Smoke test of benchmarks/auto_cost.py on the held-out real sets
(`--split real`, a spread of 40 series): every series fitted by rbf and by
auto, each candidate's series and Newton evaluations recorded, every
chosen kernel a candidate, and the periodic candidate fitted only on the
series the screen passes. No timing assertions: the ratio is the
benchmark's to print."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import auto_cost  # noqa: E402

from gpcore import FitConfig  # noqa: E402
from gpcore.choice import fits_periodic  # noqa: E402


def test_real_split_on_a_spread_of_series(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    record = tmp_path / "real.json"
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "auto_cost.py"),
                          "--split", "real", "--count", "40", "--out", str(record)],
                         check=True, env=env, capture_output=True, text=True, timeout=900).stdout
    assert out.startswith("40 series of the held-out real sets")
    r = json.loads(record.read_text())
    assert r["series"] == 40 and r["rbf_cpu_s"] > 0 and r["auto_cpu_s"] > 0
    assert set(r["chosen"].values()) <= set(r["candidates"])
    _, series = auto_cost._series("real", 40)
    screened = sum(fits_periodic(FitConfig(kernel="auto"), s) for s in series)
    rows = r["per_candidate"]
    assert rows["matern52"]["series"] == rows["matern12"]["series"] == 40
    assert rows["matern52+periodic"]["series"] == screened > 0
    assert all(row["evaluations_per_series"] > 0 for row in rows.values())
    assert len(auto_cost.REAL_SETS) == 12


def test_a_candidate_the_screen_passes_no_series_to_is_a_row_of_none(tmp_path):
    # The first 2 series of the tune split are not seasonal: the periodic
    # candidate fits none of them, and its row says so.
    _, series = auto_cost._series("tune", 2)
    assert not any(fits_periodic(FitConfig(kernel="auto"), s) for s in series)
    env = dict(os.environ, PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    record = tmp_path / "tune.json"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "auto_cost.py"),
                           "--split", "tune", "--count", "2", "--out", str(record)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| matern52+periodic | 0 |" in done.stdout
    rows = json.loads(record.read_text())["per_candidate"]
    assert rows["matern52+periodic"]["series"] == 0
    assert rows["matern52"]["series"] == rows["matern12"]["series"] == 2
    assert sum(row["chosen"] for row in rows.values()) == 2


def test_a_setting_of_a_constant_gpcore_lacks_is_refused_before_any_fit():
    # Set anyway, a misspelt constant changes nothing, and the report would
    # name it as the lever it measured.
    env = dict(os.environ, PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "auto_cost.py"),
                           "--split", "tune", "--count", "2", "--settings",
                           "starts.FAR_BEHIND=0.5;starts.FAR_BEHIN=0.5"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    assert "--settings 'starts.FAR_BEHIN=0.5': gpcore.starts has no constant 'FAR_BEHIN'" \
        in done.stderr
    assert done.stdout == ""  # no fit, no report


def test_an_unknown_candidate_is_refused_before_any_fit():
    """--candidates matern52,foo stopped with a ValueError traceback after
    the set was read and rbf had fitted it: now a usage error at once."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "auto_cost.py"),
                           "--candidates", "matern52,foo"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "--candidates matern52,foo: candidate kernel 'foo' is not known" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr
