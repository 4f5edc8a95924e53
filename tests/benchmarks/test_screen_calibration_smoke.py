"""Smoke test of benchmarks/screen_calibration.py at a tiny count: its
tables' shape, rates in [0, 1], and its copy of the screen giving the
screen's own verdicts. Not the benchmark's rates (they would flake)."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import screen_calibration as sc  # noqa: E402


def test_tables_have_every_cell_and_rates_in_the_unit_interval():
    out = sc.run(count=3, seed=1)
    sizes, settings = len(sc.SIZES), len(sc.SETTINGS)
    assert len(out["null"]) == len(sc.NULLS) * sizes * len(sc.LAYOUTS)
    assert len(out["ablation"]) == sizes * len(sc.LAYOUTS)
    assert len(out["cycle"]) == len(sc.SHAPES) * len(sc.CYCLES) * len(sc.SNRS) * sizes
    # The copy of the screen gives the screen's verdict on every series.
    assert out["disagreements"] == 0
    for table, labels, columns in (("null", 3, 2 * settings + 1), ("cycle", 4, 2 * settings + 2),
                                   ("ablation", 2, (len(sc.VARIANTS) + 2) * settings)):
        for row in out[table]:
            verdicts = list(row.values())[labels:]
            assert len(verdicts) == columns
            for v in verdicts:
                assert v.dtype == bool and v.shape == (3,)
                assert 0.0 <= float(np.mean(v)) <= 1.0
    text = sc.report(out, 3)
    # One markdown row per cell, each rate 'r ± se' in percent within [0, 100].
    rows = [line for line in text.splitlines() if line.startswith("| ") and "±" in line]
    assert len(rows) == sum(len(out[k]) for k in ("null", "cycle", "ablation"))
    for line in rows:
        for cell in line.strip("| ").split(" | "):
            if "±" in cell:
                r, se = map(float, cell.split(" ± "))
                assert 0.0 <= r <= 100.0 and se >= 0.0


def test_layouts_are_judged_where_the_docs_say():
    """Missing days and trading days go to the screen's index judgement
    (steps whole multiples of the smallest), regular days are judged as
    they are: no layout passes unjudged."""
    from gpcore import choice
    rng = np.random.default_rng(0)
    for where in sc.LAYOUTS:
        for t, y in sc.layout(where, rng, 2, 60, lambda m: rng.standard_normal((2, m))):
            assert t.size == y.size == 60
            steps = np.diff(t)
            assert choice._index_regular(steps)
            assert (steps.max() > choice.SCREEN_REGULAR) == (where != "regular")
            assert sc.false_alarm_probability(t, y) not in (sc.UNJUDGED, sc.FAILED)


def test_the_command_writes_its_tables_and_refuses_short_sizes(tmp_path, capsys):
    out = tmp_path / "screen.md"
    assert sc.main(["--count", "2", "--sizes", "36", "--no-ablation", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| white | 36 | trading |" in text and "| sine | 3 | 1.0 | 36 |" in text
    with pytest.raises(SystemExit):
        sc.main(["--sizes", "6,24"])
    assert "--sizes must be whole numbers of points, each at least 8" in capsys.readouterr().err


def test_the_sets_table_counts_each_series_once_and_passes_only_judged_ones():
    """`--sets` on one small proof set: each series in one group, passes
    under either rule only among the judged series; the shipped column is
    the screen's own verdict on those series."""
    from gpcore import choice
    import heldout_seasonal4

    rows = sc.on_sets((("heldout_seasonal4", "proof"),))
    cases = heldout_seasonal4.cases()
    assert sum(r["series"] for r in rows) == len(cases)
    for r in rows:
        assert 0 <= r["pass, shipped"] <= r["judged"] <= r["series"]
        assert 0 <= r["pass, phi after its peak"] <= r["judged"]
    judged = [c for c in cases
              if sc.false_alarm_probability(c.series.t, c.series.y) != sc.UNJUDGED]
    assert sum(r["judged"] for r in rows) == len(judged)
    assert sum(r["pass, shipped"] for r in rows) == sum(
        choice.periodic_screen(c.series.t, c.series.y) for c in judged)
    assert sc.sets_markdown(rows).count("\n| heldout_seasonal4 | proof |") == len(rows)
