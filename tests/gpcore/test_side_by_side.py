"""SideBySide: copies of a fitter on threads give one fitter's results."""
import threading

import numpy as np
import pytest

import gp_reference as ref
from gpcore import FitConfig, GPFitter, Series, build_fitter
from gpcore.choice import KernelChoice
from gpcore import side_by_side
from gpcore.side_by_side import SideBySide


@pytest.fixture
def every_copy_joins(monkeypatch):
    """Cold copies join every call, however small (tests fit little)."""
    monkeypatch.setattr(side_by_side, "COLD_COPY_TRACES", 0)


def _series(rng, count):
    out = []
    for i in range(count):
        n = int(rng.integers(12, 140))
        t, y = ref.sample(rng, "rbf", n, length_scale=rng.uniform(0.3, 2.0),
                          noise_variance=rng.uniform(0.01, 0.3))
        out.append(Series(f"s{i}", t, y))
    out[3] = Series("too-short", np.array([0.0, 1.0]), np.array([1.0, 2.0]))
    return out


def test_copies_fit_every_series_once_in_order_as_one_fitter_does(rng, every_copy_joins):
    config = FitConfig(kernel="rbf", batch_size=4)
    series = _series(rng, 70)  # several chunks of 4 batches of 4
    alone = GPFitter(config).fit(series)
    copies = build_fitter(config, copies=2)
    assert isinstance(copies, SideBySide) and len(copies.fitters) == 2
    seen = set()
    for fitter in copies.fitters:  # which thread fitted what
        original = fitter.fit
        fitter.fit = lambda batch, original=original: (
            seen.add(threading.current_thread().name), original(batch))[1]
    together = copies.fit(series)
    assert len(seen) == 2  # both copies worked
    assert [r.series_id for r in together] == [s.series_id for s in series]
    assert together[3].status == "skipped" and "finite points: 2" in together[3].error
    for a, b in zip(alone, together):
        assert a.status == b.status
        if a.status == "ok":
            # Other batch companions change the padding only: float64 round-off.
            assert b.nll == pytest.approx(a.nll, rel=1e-9, abs=1e-9)
            assert b.length_scale == pytest.approx(a.length_scale, rel=1e-5)
    assert copies.tracing_count == 1  # each copy traced once
    assert copies.work["batches"] == sum(f.work["batches"] for f in copies.fitters)
    copies.fit(series[:9])
    assert copies.tracing_count == 1


def test_a_copy_that_raises_makes_the_call_raise_after_the_others_stop(rng, every_copy_joins):
    copies = build_fitter(FitConfig(kernel="rbf", batch_size=2), copies=2)
    finished = []

    def broken(batch):
        raise RuntimeError("machine trouble")

    original = copies.fitters[0].fit
    copies.fitters[0].fit = lambda batch: (finished.append(len(batch)), original(batch))[1]
    copies.fitters[1].fit = broken
    with pytest.raises(RuntimeError, match="machine trouble"):
        copies.fit(_series(rng, 30))
    assert sum(finished) > 0  # the other copy fitted its chunks before the call raised


def test_one_copy_is_the_plain_fitter_and_auto_copies_kernel_choices():
    assert isinstance(build_fitter(FitConfig(kernel="rbf")), GPFitter)
    auto = build_fitter(FitConfig(kernel="auto", candidates=("rbf", "matern52")), copies=2)
    assert all(isinstance(f, KernelChoice) for f in auto.fitters)
    with pytest.raises(ValueError, match="at least one"):
        SideBySide([])


def test_a_call_of_few_series_is_shared_between_the_copies(rng, every_copy_joins):
    copies = build_fitter(FitConfig(kernel="rbf"), copies=2)
    sizes = []
    for fitter in copies.fitters:
        original = fitter.fit
        fitter.fit = lambda batch, original=original: (sizes.append(len(batch)), original(batch))[1]
    copies.fit(_series(rng, 6))  # far fewer than a chunk of 4 batches of 16
    assert sorted(sizes) == [3, 3]


def test_a_copy_not_traced_yet_joins_only_a_call_that_repays_its_trace(rng, monkeypatch):
    copies = build_fitter(FitConfig(kernel="rbf"), copies=2)
    small = _series(rng, 20)  # well under a second of work: 4 traces are 6 s
    copies.fit(small)
    assert [f.tracing_count for f in copies.fitters] == [1, 0]
    copies.fit(small)  # still small: the traced copy alone
    assert [f.tracing_count for f in copies.fitters] == [1, 0]
    monkeypatch.setattr(side_by_side, "TRACE_SECONDS", 1e-4)  # now it repays
    copies.fit(small)
    assert [f.tracing_count for f in copies.fitters] == [1, 1]
