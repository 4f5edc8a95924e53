"""benchmarks/heldout_pooled.py: the proof sets scored one by one and pooled.
The bars on made-up gaps, then the command on a few series of two sets,
whose pooled row must add up from its set rows. Not the quality target."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import heldout_pooled  # noqa: E402
import quality  # noqa: E402
from heldout_checks import run, table_rows  # noqa: E402


def _gaps(name: str, values) -> quality.GapMeasures:
    g = quality.GapMeasures()
    g.ids = [f"{name}#{i}" for i in range(len(values))]
    g.gaps = np.asarray(values, float)
    return g


def test_one_miss_fails_its_set_but_not_the_pool():
    # 200 series each; set a: one 1.5-nat miss; set b: one oracle failure
    # (NaN, not judged) and one 0.02-nat gap; set c: clean, some better.
    a = _gaps("a", [0.0] * 199 + [1.5])
    b = _gaps("b", [np.nan, 0.02] + [0.001] * 198)
    c = _gaps("c", [-0.5] * 100 + [0.0] * 100)
    assert not heldout_pooled.meets_per_set(a)
    assert heldout_pooled.meets_per_set(b) and heldout_pooled.meets_per_set(c)
    whole = heldout_pooled.pooled([a, b, c])
    assert len(whole.ids) == 600 and whole.worse_than_bad_gap == 1
    # 599 judged; 597 within 0.01 nats (the miss and the 0.02 gap are not).
    assert whole.share_within == 597 / 599
    assert heldout_pooled.bad_share(whole) == 1 / 599
    assert heldout_pooled.meets_pooled(whole)
    # The same miss in a pool of 100 judged series is 1 %: above the 0.5 %.
    assert not heldout_pooled.meets_pooled(_gaps("d", [0.0] * 99 + [1.5]))
    # Two sets' table: a row each and the pooled one.
    rows = table_rows("\n".join(heldout_pooled.table("thorough", {"a": a, "c": c})))
    assert rows["a"][-1] == "per set: no" and rows["c"][-1] == "per set: yes"
    assert rows["pooled (2 sets)"][:3] == ["400", "99.75 %", "1 (0.25 %)"]
    assert rows["pooled (2 sets)"][-1] == "pooled: yes"


def test_the_command_pools_the_rows_it_prints():
    out = run("heldout_pooled.py", "--sets", "heldout_real5,heldout_real10",
              "--count", "3", "--searches", "quick")
    assert out.startswith("**quick**")
    rows = table_rows(out)
    sets = [rows["heldout_real5"], rows["heldout_real10"]]
    whole = rows["pooled (2 sets)"]
    assert [r[0] for r in sets] == ["3", "3"] and whole[0] == "6"
    within = sum(float(r[1].rstrip(" %")) for r in sets) / 2
    assert abs(float(whole[1].rstrip(" %")) - within) < 0.01  # no oracle failure on these
    assert int(whole[2].split()[0]) == sum(int(r[2].split()[0]) for r in sets)
    assert "Per-set bar" in out and "pooled bar" in out


def test_every_real_set_is_a_tuning_set_or_a_proof_set_never_both():
    # A set that a lever was tuned on proves nothing, and a proof set left
    # out of the pool would go unscored (docs/design.md, "Held-out sets").
    import glob

    import search_levers

    modules = {os.path.basename(p)[:-3]
               for p in glob.glob(os.path.join(ROOT, "benchmarks", "heldout_real*.py"))}
    tuning, proof = set(search_levers.STUDIED), set(heldout_pooled.PROOF_SETS)
    assert not tuning & proof
    assert tuning | proof == modules
