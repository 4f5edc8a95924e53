"""Smoke tests of the ninth held-out real set (benchmarks/heldout_real9.py):
as its docstring says, from the data files of nitime, aquacrop, skyfield
and seglearn, which no other set reads, sharing no series with the tuning
sets or the other held-out sets. Not the quality target, and no fit: the
set was built to be scored once, later."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import (assert_shares_nothing, assert_spacings, assert_windows,
                            built_alike)  # noqa: E402

import heldout_real9  # noqa: E402


def test_ninth_real_set_comes_from_its_four_wheels_and_shares_nothing():
    series, sources = built_alike(heldout_real9)
    # A mix, not one source: no package more than two fifths of the set.
    assert max(sources.count(p) for p in heldout_real9.PACKAGES) / len(series) <= 0.4
    # Mixed spacings: the two scans' repetition times (1.89 s, 2 s) and the
    # watch's 1/50 s, in seconds; a day; half a year (Delta T, in years).
    assert_spacings(series, ((1.889, 1.891), (1.999, 2.001), (0.0199, 0.0201), (0.999, 1.001),
                            (0.49, 0.51)))
    assert_windows(series, heldout_real9)
    # The weather: one value a day, none missing, in deg C a station can
    # reach; the resting scan: all 31 regions, 250 volumes cut in two.
    weather = [s for s in series if s.series_id.startswith("aquacrop/")]
    assert weather and all(np.allclose(np.diff(s.t), 1.0) for s in weather)
    assert all(-40 < np.min(s.y) and np.max(s.y) < 50 for s in weather)
    resting = [s for s in series if s.series_id.startswith("nitime/resting/")]
    assert len(resting) == 62 and all(s.t.size == 125 for s in resting)
    # Delta T: 1657-1984, tens of seconds.
    delta_t = [s for s in series if s.series_id.startswith("skyfield/")]
    assert delta_t and all(1656 < s.t[0] and s.t[-1] < 1985 for s in delta_t)
    assert all(np.ptp(s.y) < 60 for s in delta_t)
    # What the docstring leaves out: the generated stimulus, spike times,
    # event codes, precipitation, computed ET, gridded files, projections,
    # the IERS finals.
    left_out = ("grasshopper", "spike", "events", "prcp", "et0", "cordoba", "suffolk",
                "norfolk", "cambridge", "lincoln", "york", "northumberland", "cmip", "rcp",
                "ssp", "co2", "iers", "ut1")
    assert not any(word in s.series_id.lower() for s in series for word in left_out)
    assert_shares_nothing(series, "heldout_real", "heldout_real2", "heldout_real3",
                          "heldout_real4", "heldout_real5", "heldout_real6", "heldout_real7",
                          "heldout_real8", "realdata_tuning", "realdata")
