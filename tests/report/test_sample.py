"""Which series get plotted: named, worst by standardised nll per point, seeded random."""
import numpy as np
import pyarrow as pa

from report_helpers import params_row
from pipeline.report.sample import Sampler
from pipeline.io.schema import OUTPUT_SCHEMA


def rows_():
    rows = [params_row(f"s{i}", n_points=10, nll=float(i)) for i in range(50)]
    rows[7] = params_row("s7", status="failed", error="x")
    rows[49] = params_row("s49", status="skipped", n_points=1, error="few")
    rows[48]["nll"] = float("nan")
    return rows


def picks(rows, size, **kwargs):
    sampler = Sampler(**kwargs)
    for batch in pa.Table.from_pylist(rows, schema=OUTPUT_SCHEMA).to_batches(size):
        sampler.add(batch)
    return sampler, [(p.series_id, p.reasons) for p in sampler.picks()]


def test_worst_by_nll_per_point_among_fitted_series():
    _, chosen = picks(rows_(), 100, worst=3)
    # s49 is skipped and s48's nll is NaN: the worst fitted are s47, s46, s45.
    assert chosen == [("s47", ["worst #1 by standardised nll per point"]),
                      ("s46", ["worst #2 by standardised nll per point"]),
                      ("s45", ["worst #3 by standardised nll per point"])]


def test_random_is_seeded_only_fitted_and_independent_of_batching():
    _, a = picks(rows_(), 100, random=5, seed=11)
    _, b = picks(rows_(), 3, random=5, seed=11)
    _, c = picks(rows_(), 100, random=5, seed=12)
    assert a == b and a != c and len(a) == 5
    assert all(r == ["random"] for _, r in a)
    assert not {"s7", "s49"} & {s for s, _ in a}
    _, everything = picks(rows_(), 9, random=100)
    assert len(everything) == 48  # all fitted series, each once


def test_any_non_negative_seed_draws():
    """The draw's key is the seed hashed: a seed of 65 digits or more, which
    --seed takes, raised "maximum key length is 64 bytes" as blake2b's key."""
    _, huge = picks(rows_(), 100, random=5, seed=10 ** 70)
    _, other = picks(rows_(), 7, random=5, seed=10 ** 70 + 1)
    assert len(huge) == len(other) == 5 and huge != other


def test_tied_worst_go_to_the_smaller_id_in_any_row_order():
    # s3, s5 and s8 fit equally badly; the two worst are s3 and s5 whichever
    # comes first in the files, and however they are batched.
    rows = [params_row(f"s{i}", n_points=10, nll=40.0 if i in (3, 5, 8) else float(i))
            for i in range(10)]
    chosen = [picks(order, size, worst=2)[1] for order in (rows, rows[::-1]) for size in (2, 10)]
    assert all(c == chosen[0] for c in chosen)
    assert [s for s, _ in chosen[0]] == ["s3", "s5"]


def test_named_come_first_merge_reasons_and_missing_are_reported():
    sampler, chosen = picks(rows_(), 4, named=["s7", "s47", "nope", "s7"], worst=1)
    assert chosen == [("s7", ["named"]), ("s47", ["named", "worst #1 by standardised nll per point"])]
    assert sampler.missing() == ["nope"]


def test_nothing_asked_nothing_picked():
    sampler, chosen = picks(rows_(), 10)
    assert chosen == [] and sampler.missing() == []


def test_worst_does_not_depend_on_the_units_of_y():
    # s0..s9 fit alike; "big" is s3's fit in units 1000x smaller (y x 1000:
    # nll + n log 1000, amplitude x 1000, noise x 10^6), "bad" fits worse.
    rows = [params_row(f"s{i}", n_points=10, nll=10.0) for i in range(10)]
    rows.append(params_row("big", n_points=10, nll=10.0 + 10 * np.log(1000.0),
                           amplitude=1000.0, noise_variance=0.1e6))
    rows.append(params_row("bad", n_points=10, nll=25.0))
    _, chosen = picks(rows, 4, worst=1)
    assert chosen == [("bad", ["worst #1 by standardised nll per point"])]


def test_worst_by_holdout_mase_when_the_run_has_a_backtest():
    rows = [params_row(f"s{i}", n_points=10, nll=float(i), holdout_points=3,
                       holdout_mase=1.0 / (i + 1), holdout_coverage_95=1.0, holdout_scale=1.0)
            for i in range(10)]
    _, chosen = picks(rows, 3, worst=2)
    assert chosen == [("s0", ["worst #1 by holdout_mase"]), ("s1", ["worst #2 by holdout_mase"])]
