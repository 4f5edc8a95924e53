"""Warm starts: a previous fit's parameters as an extra batch member."""
import dataclasses

import numpy as np
import pytest

import gp_reference as ref
from gpcore import FitConfig, Series
from warm_starts import appended_nights  # benchmarks/, on the path by conftest.py


@pytest.fixture(scope="module")
def fitter(fitter_for):
    return fitter_for(FitConfig(kernel="rbf+periodic"))


@pytest.fixture(scope="module")
def nights():
    """Each series' first night and the same series with 8 new points."""
    rng = np.random.default_rng(11)
    first, second = [], []
    for i in range(6):
        t, y, _ = ref.seasonal(rng, 158)
        first.append(Series(f"s{i}", t[:150], y[:150]))
        second.append(Series(f"s{i}", t, y))
    return first, second


def test_next_night_starts_warm_and_is_never_worse_than_cold(fitter, nights):
    first, second = nights
    previous = fitter.fit(first)
    cold = fitter.fit(second)
    warm = fitter.fit([dataclasses.replace(s, warm_start=p.params)
                       for s, p in zip(second, previous)])
    assert not any(c.warm_started for c in cold)
    assert all(w.warm_started for w in warm)
    for c, w in zip(cold, warm):
        # The usual starts run too and the best member is kept; members
        # stop within the optimiser's tolerance (1e-4 nats) of an optimum.
        assert w.nll <= c.nll + 10 * fitter.config.tolerance


def test_far_or_foreign_warm_starts_change_nothing(fitter, nights):
    series = nights[1][:3]
    cold = fitter.fit(series)
    far = dict(cold[0].params, components=[
        dict(cold[0].components[0], length_scale=1e9),
        dict(cold[0].components[1], period=1e-9)])
    foreign = {"kernel": "rbf", "mean": 0.0, "amplitude": 1.0, "length_scale": 3.0,
               "period": None, "noise_variance": 0.1}
    got = fitter.fit([dataclasses.replace(series[0], warm_start=far),
                      dataclasses.replace(series[1], warm_start=foreign), series[2]])
    assert [g.warm_started for g in got] == [True, False, False]
    for c, g in zip(cold, got):
        assert g.nll <= c.nll + 10 * fitter.config.tolerance


def test_a_fit_result_warm_starts_as_its_params_and_other_values_are_refused(fitter_for):
    """A FitResult given as the warm start (predict takes one too) failed
    the fit with "'FitResult' object has no attribute 'get'"; it now starts
    from its params, and a value that is no mapping skips the series with
    a reason naming warm_start."""
    fitter = fitter_for(FitConfig())
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0.0, 10.0, 40))
    series = Series("w", t, np.sin(t) + 0.1 * rng.standard_normal(40))
    previous = fitter.fit([series])[0]
    by_result, by_params, listed, unfitted = fitter.fit([
        dataclasses.replace(series, warm_start=previous),
        dataclasses.replace(series, warm_start=previous.params),
        dataclasses.replace(series, series_id="l", warm_start=[1.0, 2.0]),
        dataclasses.replace(series, warm_start=fitter.fit([Series("x", [], [])])[0])])
    assert by_result.status == "ok" and by_result.warm_started
    fields = ("nll", "mean", "amplitude", "length_scale", "noise_variance")
    # The same fit; only round-off differs with the batch it was padded in.
    np.testing.assert_allclose([getattr(by_result, f) for f in fields],
                               [getattr(by_params, f) for f in fields], rtol=1e-9)
    assert listed.status == "skipped"
    assert "warm_start must be a mapping" in listed.error and "list" in listed.error
    assert unfitted.status == "ok" and not unfitted.warm_started  # nothing to start from


def test_a_row_of_the_output_read_by_pandas_warm_starts(fitter, nights):
    """A pandas row of the output table (as predict takes it) failed the
    fit: "The truth value of a Series is ambiguous"; a row of itertuples()
    (a namedtuple, which predict takes too) was skipped, "warm_start must be
    a mapping ...; got a Pandas"."""
    pa = pytest.importorskip("pyarrow")
    first, second = nights
    previous = fitter.fit(first[:1])[0]
    table = pa.Table.from_pylist([previous.to_row()]).to_pandas()
    by_row, by_tuple, by_params = fitter.fit([
        dataclasses.replace(second[0], warm_start=table.iloc[0]),
        dataclasses.replace(second[0], warm_start=next(table.itertuples(index=False))),
        dataclasses.replace(second[0], warm_start=previous.params)])
    assert by_row.status == "ok" and by_row.warm_started and by_params.warm_started
    assert by_tuple.status == "ok" and by_tuple.warm_started, by_tuple.error
    np.testing.assert_allclose([by_row.nll, by_tuple.nll], by_params.nll, rtol=1e-9)


def test_a_warm_start_at_another_basin_leaves_the_cold_search_as_it_was(fitter):
    # Three series of benchmarks/warm_starts.py (seed 0) whose
    # warm-started fits ended 4.3, 5.5 and 8.3 nats above their cold fits
    # while a sum's probe rounds went round the series' best member, the
    # warm start, instead of the cold starts' best (docs/design.md, "Warm
    # starts").
    chosen = [appended_nights(0, 9)[i] for i in (3, 6, 8)]
    previous = fitter.fit([first for first, _ in chosen])
    cold = fitter.fit([second for _, second in chosen])
    warm = fitter.fit([dataclasses.replace(second, warm_start=p.params)
                       for (_, second), p in zip(chosen, previous)])
    assert all(w.warm_started for w in warm)
    for c, w in zip(cold, warm):
        assert w.nll <= c.nll + 10 * fitter.config.tolerance, (c.series_id, w.nll - c.nll)
