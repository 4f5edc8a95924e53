"""Smoke tests of the twelfth held-out real set (benchmarks/heldout_real12.py):
as its docstring says, from the data files of richardsonpy,
sunkit_instruments and pyphysio, which no other set reads, sharing no series
with the tuning sets or the other held-out sets. Not the quality target, and
no fit: the set was built to be scored once, later."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import (assert_shares_nothing, assert_spacings, assert_windows,
                            built_alike)  # noqa: E402

import heldout_real12  # noqa: E402


def test_twelfth_real_set_comes_from_its_three_wheels_and_shares_nothing():
    series, sources = built_alike(heldout_real12)
    # A mix: the hourly weather (richardsonpy) is the largest part, but under half.
    assert max(sources.count(p) for p in heldout_real12.PACKAGES) / len(series) < 0.5
    # Mixed spacings: an hour (in days); RHESSI's 4 s; the recording's
    # thinned 128, 32 and 8 Hz (in seconds).
    assert_spacings(series, ((0.999 / 24, 1.001 / 24), (3.99, 4.01), (0.99 / 128, 1.01 / 128),
                            (0.99 / 32, 1.01 / 32), (0.99 / 8, 1.01 / 8)))
    assert_windows(series, heldout_real12)

    def part(prefix):
        return [s for s in series if s.series_id.startswith(prefix)]

    # The weather: 2010 in days since 1970; deg C, hPa, %, m/s, W/m^2.
    weather = part("richardsonpy/try/")
    assert len(weather) == 80 and all(14610 <= s.t[0] and s.t[-1] < 14976 for s in weather)
    for name, low, high in (("temperature", -30, 40), ("pressure", 900, 1050),
                            ("humidity", 1, 100), ("wind", 0, 40),
                            ("diffuse_irradiance", 0, 600)):
        chosen = [s for s in weather if s.series_id.split("/")[3].split("#")[0] == name]
        assert len(chosen) == 16 and all(low <= np.min(s.y) and np.max(s.y) <= high
                                         for s in chosen), name
    # RHESSI: log10 counts/s in eight bands, seconds of one day.
    rhessi = part("sunkit_instruments/rhessi_20110404/")
    assert len(rhessi) == 64 and all(0 <= np.nanmin(s.y) and np.nanmax(s.y) < 6
                                     and 0 <= s.t[0] and s.t[-1] < 86400 for s in rhessi)
    # The recording: 120 s from its start.
    recording = part("pyphysio/medical/")
    assert len(recording) >= 28 and all(0 <= s.t[0] and s.t[-1] < 120 for s in recording)
    # What the docstring leaves out: the other weather columns, the tables,
    # RHESSI's top band and its other extensions, GOES, LYRA, fNIRS.
    left_out = ("cloud", "direction", "vapour", "direct", "longwave", "weather_code",
                "appliance", "bulb", "occupancy", "7000-20000", "variance", "ephemeris",
                "pointing", "roll", "flag", "goes", "lyra", "fnirs")
    assert not any(word in s.series_id.lower().split("/", 1)[1] for s in series
                   for word in left_out)
    assert_shares_nothing(series, "heldout_real", "heldout_real2", "heldout_real3",
                          "heldout_real4", "heldout_real5", "heldout_real6", "heldout_real7",
                          "heldout_real8", "heldout_real9", "heldout_real10", "heldout_real11",
                          "realdata_tuning", "realdata")
