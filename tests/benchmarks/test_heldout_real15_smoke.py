"""Smoke tests of the fifteenth held-out real set (benchmarks/heldout_real15.py):
as its docstring says, from the data files of bifacialvf and chaosmagpy,
which no other set reads, sharing no series with the tuning sets or the
other held-out sets. Not the quality target, and no fit: the set was built
blind, then scored once (benchmarks/heldout_pooled.py scores it)."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import (assert_shares_nothing, assert_spacings, assert_windows,
                            built_alike)  # noqa: E402

import heldout_real15  # noqa: E402


def test_fifteenth_real_set_comes_from_bifacialvf_and_chaosmagpy_and_shares_nothing():
    series, sources = built_alike(heldout_real15)
    # Every series hourly (in days).
    assert_spacings(series, ((0.999 / 24, 1.001 / 24),))
    assert_windows(series, heldout_real15)
    assert all(abs(np.median(np.diff(s.t)) - 1 / 24) < 1e-6 for s in series)

    def part(prefix):
        return [s for s in series if s.series_id.startswith(prefix)]

    # The weather: 5 variables of 6 typical years (3 TMY3, Richmond's TMY2,
    # 2 IWEC) in 6 windows each, days in the typical year; deg C, %, hPa
    # (the EnergyPlus files' Pa / 100), m/s.
    weather = part("bifacialvf/")
    assert len(weather) == 180 and sources.count("bifacialvf") == 180
    assert all(0 <= s.t[0] and s.t[-1] < 365 for s in weather)
    for kind, count in (("tmy3", 90), ("tmy2", 30), ("iwec", 60)):
        assert len(part(f"bifacialvf/{kind}/")) == count, kind
    for name, low, high in (("temp_air", -30, 50), ("temp_dew", -35, 30),
                            ("relative_humidity", 0, 100), ("pressure", 790, 1045),
                            ("wind_speed", 0, 30)):
        chosen = [s for s in weather if s.series_id.split("/")[3].split("#")[0] == name]
        assert len(chosen) == 36 and all(low <= np.nanmin(s.y) and np.nanmax(s.y) <= high
                                         for s in chosen), name
    # The station pressure at Golden (NREL's site, 1,829 m up) is the lowest.
    golden = [s for s in weather if s.series_id.startswith("bifacialvf/tmy3/724666/pressure")]
    assert all(np.max(s.y) < 850 for s in golden)
    # Cairo's one-hour wind spikes of 20-26 m/s are missing (one in a window).
    cairo = [s for s in weather if s.series_id.startswith("bifacialvf/iwec/623660/wind_speed")]
    assert all(np.nanmax(s.y) < 20 for s in cairo)
    assert sum(int(np.isnan(s.y).sum()) for s in cairo) == 1
    # The RC index: 3 parts in 6 windows of 1997-2026 each, days since 1970, nT.
    rc = part("chaosmagpy/rc_index/")
    assert len(rc) == 18 and sources.count("chaosmagpy") == 18
    assert all(9862 <= s.t[0] and s.t[-1] < 20600 and np.all(np.abs(s.y) < 600) for s in rc)
    # RC is the sum of its two parts, to the file's rounding.
    by_id = {s.series_id: s.y for s in rc}
    for sid, y in by_id.items():
        if sid.startswith("chaosmagpy/rc_index/RC#"):
            suffix = sid.split("#")[1]
            both = by_id[f"chaosmagpy/rc_index/RC_e#{suffix}"] + by_id[f"chaosmagpy/rc_index/RC_i#{suffix}"]
            assert np.allclose(y, both, atol=2e-3)
    # What the docstring leaves out.
    left_out = ("ghi", "dni", "dhi", "illum", "cloud", "sky", "visib", "ceil", "wind_dir",
                "precip", "albedo", "aod", "golden", "nsrdb", "conductivity", "spectrum")
    assert not any(word in s.series_id.lower() for s in series for word in left_out)
    assert_shares_nothing(series, "heldout_real", "heldout_real2", "heldout_real3",
                          "heldout_real4", "heldout_real5", "heldout_real6", "heldout_real7",
                          "heldout_real8", "heldout_real9", "heldout_real10", "heldout_real11",
                          "heldout_real12", "heldout_real13", "heldout_real14",
                          "realdata_tuning", "realdata")
