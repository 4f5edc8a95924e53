"""Which series get plotted: named, worst by nll per point, seeded random."""
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
    assert chosen == [("s47", ["worst #1 by nll per point"]),
                      ("s46", ["worst #2 by nll per point"]),
                      ("s45", ["worst #3 by nll per point"])]


def test_random_is_seeded_only_fitted_and_independent_of_batching():
    _, a = picks(rows_(), 100, random=5, seed=11)
    _, b = picks(rows_(), 3, random=5, seed=11)
    _, c = picks(rows_(), 100, random=5, seed=12)
    assert a == b and a != c and len(a) == 5
    assert all(r == ["random"] for _, r in a)
    assert not {"s7", "s49"} & {s for s, _ in a}
    _, everything = picks(rows_(), 9, random=100)
    assert len(everything) == 48  # all fitted series, each once


def test_named_come_first_merge_reasons_and_missing_are_reported():
    sampler, chosen = picks(rows_(), 4, named=["s7", "s47", "nope", "s7"], worst=1)
    assert chosen == [("s7", ["named"]), ("s47", ["named", "worst #1 by nll per point"])]
    assert sampler.missing() == ["nope"]


def test_nothing_asked_nothing_picked():
    sampler, chosen = picks(rows_(), 10)
    assert chosen == [] and sampler.missing() == []
