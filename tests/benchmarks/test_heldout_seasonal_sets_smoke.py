"""Smoke tests of the second to fourth held-out seasonal sets
(benchmarks/heldout_seasonal2.py to heldout_seasonal4.py): each is what its
docstring says, shares no series with the other seasonal sets, and its
scoring command runs on a few series. Not the quality targets."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import run, table_rows, values  # noqa: E402

import heldout_seasonal  # noqa: E402
import heldout_seasonal2  # noqa: E402
import heldout_seasonal3  # noqa: E402
import heldout_seasonal4  # noqa: E402
import seasonal  # noqa: E402
import seasonal_tuning  # noqa: E402

SETS = {"heldout_seasonal2.py": heldout_seasonal2, "heldout_seasonal3.py": heldout_seasonal3,
        "heldout_seasonal4.py": heldout_seasonal4}



@pytest.mark.parametrize("script", sorted(SETS))
def test_set_is_deterministic_and_as_described(script):
    module = SETS[script]
    cases, again = module.cases(), module.cases()
    assert len(cases) == module.SEASONAL_COUNT + module.NON_SEASONAL_COUNT
    assert all(np.array_equal(a.series.y, b.series.y, equal_nan=True) for a, b in zip(cases, again))
    seasonal_cases = [c for c in cases if c.seasonal]
    assert len(seasonal_cases) == module.SEASONAL_COUNT
    cycles = np.array([c.cycles for c in seasonal_cases])
    assert cycles.min() >= module.CYCLES[0] - 1e-9 and cycles.max() <= module.CYCLES[1] + 1e-9
    assert 0 < np.mean(cycles < 2) < 0.3  # some the two-cycle bound cannot reach, not most
    shapes = {c.series.series_id.split("/")[3].split("+")[0] for c in seasonal_cases}
    assert shapes == set(module.SHAPES)
    plain = {c.series.series_id.split("/")[3].split("+")[0] for c in cases if not c.seasonal}
    assert plain == set(module.PLAIN_SHAPES)
    for c in cases:
        t, y = c.series.t, c.series.y
        assert np.all(np.diff(t) > 0)
        assert module.POINTS[0] <= np.isfinite(y).sum() <= module.POINTS[1]


@pytest.mark.parametrize("later", [heldout_seasonal3, heldout_seasonal4], ids=lambda m: m.__name__)
def test_a_later_set_shares_nothing_with_the_other_seasonal_sets(later):
    """No shape name of the held-out seasonal sets before it (their SHAPES
    and PLAIN_SHAPES) or of seasonal.py's and seasonal_tuning.py's synthetic
    series (their ids), and no series' values."""
    ours = later.cases()
    names = {c.series.series_id.split("/")[3].split("+")[0] for c in ours}
    earlier = [heldout_seasonal, heldout_seasonal2, heldout_seasonal3]
    earlier = earlier[:earlier.index(later)] if later in earlier else earlier
    for other in earlier:
        assert not names & (set(other.SHAPES) | set(other.PLAIN_SHAPES)), other.__name__
    for other in (seasonal, seasonal_tuning):
        theirs = {c.series.series_id.split("/")[3] for c in other.cases() if not c.real}
        assert theirs and not names & theirs, other.__name__
    for other in (*earlier, seasonal_tuning, seasonal):
        assert not values(ours) & values(other.cases()), f"values shared with {other.__name__}"


@pytest.mark.parametrize("script", sorted(SETS))
def test_check_runs_and_scores(script):
    rows = table_rows(run(script, "--check", "--count", "4", "--fresh", timeout=900))
    assert rows["series (seasonal + non-seasonal)"][0] == "4 (3 + 1)"
    share = float(rows["within 0.01 nats of the oracle or better"][0].rstrip(" %"))
    assert 0 <= share <= 100
