"""gpfit.fit_frame called again and again in one long-lived process (a
notebook's kernel), with options varied between calls: the fitters it keeps
are bounded, the ones in use are reused, and a refused call leaves the next
one as it was (docs/design.md, "DataFrame API")."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpfit
from pipeline import fitters


def _frame(points: int = 8) -> pd.DataFrame:
    t = np.arange(float(points))
    return pd.DataFrame({"series_id": np.repeat(["a", "b"], points), "t": np.tile(t, 2),
                         "y": np.concatenate([np.sin(t), np.cos(t)])})


def test_fitters_of_options_tried_one_after_another_are_bounded(monkeypatch):
    """Each option set builds a fitter (86 MB when traced); beyond
    MAX_FITTERS the least recently used is let go, so trying option after
    option no longer grows the process without end. The set used last is
    still reused, one let go is built again."""
    monkeypatch.setattr(fitters, "MAX_FITTERS", 2)
    frame, tried = _frame(), [dict(kernel="matern12", max_points=90 + i) for i in range(4)]
    before = fitters.counts()
    for options in tried:
        gpfit.fit_frame(frame, **options)
    assert fitters.counts()["kept"] <= 2
    gpfit.fit_frame(frame, **tried[-1])  # kept: reused
    assert fitters.counts()["built"] - before["built"] == 4
    gpfit.fit_frame(frame, **tried[0])  # let go: built again
    after = fitters.counts()
    assert (after["built"] - before["built"], after["calls"] - before["calls"]) == (5, 6)


@pytest.mark.parametrize("bad", [dict(data=_frame().drop(columns="y")), dict(restarts=0)])
def test_a_refused_call_between_good_ones_leaves_the_fitter_to_the_next(bad):
    """Input checks that raise mid-sequence hold no lock and build nothing:
    the next call reuses the fitter the last good one built."""
    options = dict(kernel="matern12", max_points=80)
    first = gpfit.fit_frame(_frame(), **options)
    before = fitters.counts()
    with pytest.raises(ValueError):  # InputError is a ValueError
        gpfit.fit_frame(**{"data": _frame(), **options, **bad})
    again = gpfit.fit_frame(_frame(), **options)
    after = fitters.counts()
    assert (after["built"] - before["built"], after["calls"] - before["calls"]) == (0, 1)
    pd.testing.assert_frame_equal(again, first, check_exact=True)
