"""SideBySide: copies of a fitter on threads give one fitter's results."""
import threading

import numpy as np
import pytest

import gp_reference as ref
from gpcore import FitConfig, GPFitter, Series, build_fitter
from gpcore.choice import KernelChoice
from gpcore.side_by_side import SideBySide


def _series(rng, count):
    out = []
    for i in range(count):
        n = int(rng.integers(12, 140))
        t, y = ref.sample(rng, "rbf", n, length_scale=rng.uniform(0.3, 2.0),
                          noise_variance=rng.uniform(0.01, 0.3))
        out.append(Series(f"s{i}", t, y))
    out[3] = Series("too-short", np.array([0.0, 1.0]), np.array([1.0, 2.0]))
    return out


def test_copies_fit_every_series_once_in_order_as_one_fitter_does(rng):
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
    assert copies.tracing_count == 1  # one trace for both copies
    assert copies.work["batches"] == sum(f.work["batches"] for f in copies.fitters)
    copies.fit(series[:9])
    assert copies.tracing_count == 1


def test_a_copy_that_raises_makes_the_call_raise_after_the_others_stop(rng):
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


def test_a_call_of_few_series_is_shared_between_the_copies(rng):
    copies = build_fitter(FitConfig(kernel="rbf"), copies=2)
    sizes = []
    for fitter in copies.fitters:
        original = fitter.fit
        fitter.fit = lambda batch, original=original: (sizes.append(len(batch)), original(batch))[1]
    copies.fit(_series(rng, 6))  # far fewer than a chunk of 4 batches of 16
    assert sorted(sizes) == [3, 3]


def test_copies_share_one_trace_and_keep_their_own_variables(rng):
    copies = build_fitter(FitConfig(kernel="rbf"), copies=2)
    first, second = copies.fitters
    assert [f.tracing_count for f in copies.fitters] == [0, 0]
    series = _series(rng, 20)
    fitted = copies.fit(series)  # a small call: both copies take part, one trace
    assert [f.tracing_count for f in copies.fitters] == [1, 1]
    assert first.work["batches"] > 0 and second.work["batches"] > 0
    values = lambda fitter: [v.numpy().copy() for v in fitter.log_parameters]
    before_first, before_second = values(first), values(second)
    alone = second.fit(series[:5])  # the twin alone, on the shared trace
    assert second.tracing_count == 1
    # The twin's .assign landed in its own variables, none in the first's.
    for old, new in zip(before_first, values(first)):
        np.testing.assert_array_equal(old, new)
    assert any(old.shape != new.shape or not np.array_equal(old, new)
               for old, new in zip(before_second, values(second)))
    for a, b in zip(alone, fitted[:5]):
        assert a.status == b.status
        if a.status == "ok":  # other batch companions: float64 round-off
            assert a.nll == pytest.approx(b.nll, rel=1e-9, abs=1e-9)


def test_a_twin_must_be_built_alike():
    first = GPFitter(FitConfig(kernel="rbf"))
    with pytest.raises(ValueError, match="built alike"):
        GPFitter(FitConfig(kernel="matern52"), twin=first)
