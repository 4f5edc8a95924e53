"""A series' fingerprint (pipeline.io.fingerprint): what changes it, what does not."""
from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from gpcore import FitConfig, Series
from gpcore.calibration import forecast
from pipeline.io import fingerprint

REPO = Path(__file__).resolve().parents[3]
KEY = fingerprint.options_key(FitConfig())


def test_order_missing_points_and_negative_zero_do_not_matter():
    t, y = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, -0.0, 2.0, 5.0])
    same = fingerprint.of_points(KEY, t, y)
    shuffled = [3, 0, 2, 1]
    assert fingerprint.of_points(KEY, t[shuffled], y[shuffled]) == same
    assert fingerprint.of_points(KEY, np.append(t, 4.0), np.append(y, np.nan)) == same
    assert fingerprint.of_points(KEY, np.append(t, np.inf), np.append(y, 1.0)) == same
    assert fingerprint.of_points(KEY, t, np.abs(y)) == same
    # Repeated times: their values in either order (rows of a split input).
    t2, y2 = np.array([0.0, 1.0, 1.0, 2.0]), np.array([4.0, 3.0, 1.0, 2.0])
    assert fingerprint.of_points(KEY, t2, y2) == fingerprint.of_points(KEY, t2, y2[[0, 2, 1, 3]])


def test_a_point_a_value_an_option_or_the_version_changes_it(monkeypatch):
    t, y = np.arange(5.0), np.array([1.0, 2.0, 0.5, 3.0, 2.5])
    base = fingerprint.of_points(KEY, t, y)
    changed = {fingerprint.of_points(KEY, np.append(t, 5.0), np.append(y, 1.0)),
               fingerprint.of_points(KEY, t, y + np.array([0, 0, 1e-12, 0, 0])),
               fingerprint.of_points(KEY, t * 2, y)}
    for option in ({"kernel": "matern52"}, {"restarts": 2}, {"max_points": 100},
                   {"tolerance": 1e-6}, {"stop_behind": 1.0}, {"far_probes": False}):
        config = dataclasses.replace(FitConfig(), **option)
        changed.add(fingerprint.of_points(fingerprint.options_key(config), t, y))
    monkeypatch.setattr(fingerprint, "VERSION", "9.9.9")
    changed.add(fingerprint.of_points(fingerprint.options_key(FitConfig()), t, y))
    assert base not in changed and len(changed) == 10
    # Their defaults (stop_behind 0, or None under auto; far_probes on for a
    # lone kernel) key as before the options existed.
    assert "stop_behind" not in json.loads(KEY)["options"]
    assert "far_probes" not in json.loads(KEY)["options"]
    # auto's candidates fit without the far probes: its rows refit once.
    auto = json.loads(fingerprint.options_key(FitConfig(kernel="auto")))["options"]
    assert "far_probes" in auto and auto["far_probes"] is None


def test_the_transform_the_holdout_and_the_probe_check_change_it_and_their_defaults_do_not():
    # Each changes what is fitted (the data's scale, its last K points, the
    # search): a row fitted under another must not be reused.
    t, y = np.arange(5.0), np.array([1.0, 2.0, 0.5, 3.0, 2.5])
    keys = [KEY, fingerprint.options_key(FitConfig(), "log"),
            fingerprint.options_key(FitConfig(), "log1p"),
            fingerprint.options_key(FitConfig(), holdout=3),
            fingerprint.options_key(FitConfig(), holdout=4),
            fingerprint.options_key(dataclasses.replace(FitConfig(), probe_check=True))]
    assert len({fingerprint.of_points(key, t, y) for key in keys}) == len(keys)
    assert fingerprint.options_key(FitConfig(), "none", 0) == KEY


def test_batch_size_and_unused_candidates_do_not_change_a_fit():
    """A lone kernel carries the default candidates, which it does not fit
    (others are refused: FitConfig), and its key holds none."""
    t, y = np.arange(5.0), np.arange(5.0) ** 2
    key = fingerprint.options_key(FitConfig(batch_size=64))
    assert fingerprint.of_points(key, t, y) == fingerprint.of_points(KEY, t, y)
    assert "candidates" not in json.loads(KEY)["options"]
    auto = [fingerprint.options_key(FitConfig(kernel="auto", candidates=c))
            for c in (("rbf", "matern32"), ("rbf", "matern52"))]
    assert auto[0] != auto[1]


def test_a_kernel_object_and_its_name_key_alike_by_the_name():
    from gpcore.kernels import RBF, Periodic

    key = fingerprint.options_key(FitConfig(kernel=RBF() + Periodic()))
    assert key == fingerprint.options_key(FitConfig(kernel="rbf+periodic"))
    assert json.loads(key)["options"]["kernel"] == "rbf+periodic"  # as before kernels were objects


def test_the_version_is_the_one_pyproject_toml_reads():
    # The built package's version is this one (tests/deploy checks the
    # sdist's PKG-INFO); pyproject.toml holds no copy of it.
    with open(REPO / "pyproject.toml", "rb") as f:
        meta = tomllib.load(f)
    assert "version" not in meta["project"] and "version" in meta["project"]["dynamic"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "pipeline.io.fingerprint.VERSION"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", fingerprint.VERSION)


def test_a_series_refused_unassembled_is_fingerprinted_by_its_reason():
    reasons = ("2000 input rows is more than --max_rows=1000", "3 times but 4 values")
    found = {fingerprint.of_reason(KEY, r) for r in reasons}
    found.add(fingerprint.of_reason(fingerprint.options_key(FitConfig(restarts=2)), reasons[0]))
    assert len(found) == 3 and fingerprint.of_reason(KEY, reasons[0]) in found


def test_a_stamped_series_carries_its_fingerprint_and_is_not_hashed_again(monkeypatch):
    series = Series("a", np.arange(4.0), np.array([1.0, 3.0, 2.0, 5.0]),
                    warm_start={"kernel": "rbf"})
    stamped = fingerprint.stamped(KEY, series)
    assert stamped.fingerprint == fingerprint.of_points(KEY, series.t, series.y)
    assert (stamped.series_id, stamped.warm_start) == ("a", {"kernel": "rbf"})
    assert np.array_equal(stamped.t, series.t) and np.array_equal(stamped.y, series.y)
    # From here on, nothing hashes the points again: not a second stamp, not
    # the row (of_series), not after a warm start is set.
    monkeypatch.setattr(fingerprint, "of_points", _refuse)
    assert fingerprint.stamped(KEY, stamped) is stamped
    warm = dataclasses.replace(stamped, warm_start=None)
    assert fingerprint.of_series(KEY, warm) == stamped.fingerprint
    with pytest.raises(AssertionError, match="hashed again"):
        fingerprint.of_series(KEY, series)  # a plain Series is hashed


def _refuse(*args):
    raise AssertionError("hashed again")


def test_t_retyped_keeps_the_fingerprint_where_design_md_says_and_a_unit_does_not():
    """docs/design.md, "Fingerprint": after the conversion to days, a date's
    type, a time zone and an integer's width do not matter; a timestamp's
    unit rounds differently (us against ns, hourly times)."""
    import pyarrow as pa

    from pipeline.io.columns import as_float

    days = np.arange(19_000, 19_040, dtype=np.int32)
    y = np.cos(days / 7.0)
    same = fingerprint.of_points(KEY, days.astype(np.float64), y)
    dates = pa.array(days).cast(pa.date32())
    midnight = pa.array(days.astype(np.int64) * 86_400_000_000).cast(pa.timestamp("us"))
    for t in (dates, dates.cast(pa.date64()), midnight, midnight.cast(pa.timestamp("ns", "UTC")),
              midnight.cast(pa.timestamp("s", "Europe/Paris")), pa.array(days),
              pa.array(days.astype(np.int64))):
        assert fingerprint.of_points(KEY, as_float(t), y) == same, t.type
    hours = pa.array(1_700_000_000_000_000 + 3_600_000_000 * np.arange(40)).cast(
        pa.timestamp("us"))
    assert (fingerprint.of_points(KEY, as_float(hours), y)
            != fingerprint.of_points(KEY, as_float(hours.cast(pa.timestamp("ns"))), y))


# The --holdout scores' 95 % interval (lower, upper) on one fixed series
# and parameters, as each revision of its formula gives it: a change of
# gpcore.calibration that moves it must bump fingerprint.HOLDOUT_SCORES and
# add its line here, so that reused rows are rescored (revision 1, the
# fitted Q / n: lower -1.5303 -2.1107 -2.4974, upper 0.0624 1.0830 1.9764).
SCORED_INTERVALS = {2: ([-1.57862833671923, -2.2075647330286596, -2.6330891793814923],
                        [0.110672830844736, 1.1799126868318732, 2.1121361120670126])}


def test_a_holdout_run_carries_its_scores_revision_and_other_runs_do_not():
    # A reused row keeps the scores of its night: rows scored with an
    # earlier interval formula must not be reused by a --holdout run.
    with_holdout = json.loads(fingerprint.options_key(FitConfig(), holdout=3))["options"]
    assert with_holdout["holdout_scores"] == fingerprint.HOLDOUT_SCORES
    assert "holdout_scores" not in json.loads(KEY)["options"]


def test_the_scores_interval_is_its_revisions():
    t = np.arange(12.0)
    y = np.sin(t / 2) + 0.1 * np.cos(3 * t)
    params = {"kernel": "rbf", "mean": 0.0, "amplitude": 1.0, "length_scale": 2.0,
              "noise_variance": 0.01}
    found = forecast(Series("a", t[:9], y[:9]), params, t[9:], horizon=3)
    lower, upper = SCORED_INTERVALS[fingerprint.HOLDOUT_SCORES]
    # 1e-9: BLAS round-off of 9-point solves is ~1e-14; revisions differ by 3e-2.
    np.testing.assert_allclose(found.interval(0.95), (lower, upper), rtol=1e-9, atol=1e-12)
