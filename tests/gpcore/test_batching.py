"""gpcore.batching: the padding and bucket policy, and the cost, per-kernel
figures and the figures against the fitter's own work counters on real fits."""
from __future__ import annotations

import numpy as np
import pytest

from gpcore import Batching, FitConfig, Series
from gpcore.batching import (COST_FIGURES, DEAREST, FLOOR_SECONDS, FLOPS_PER_SECOND,
                             LENGTH_QUANTUM, SECONDS_PER_CALL, SECONDS_PER_SERIES,
                             SLOW_CHOLESKY_SIDE,
                             cost_figures, expected_starts, finite_points, flops_per_grid,
                             flops_per_newton_evaluation, flops_per_value, padded_length,
                             structure)
from gpcore import starts
from gpcore.kernels import kernel as kernel_named
from seasonal_data import seasonal_series


def test_lengths_pad_to_the_quantum_and_share_a_bucket_up_to_a_power_of_two():
    assert [padded_length(n) for n in (1, LENGTH_QUANTUM, LENGTH_QUANTUM + 1)] == [
        LENGTH_QUANTUM, LENGTH_QUANTUM, 2 * LENGTH_QUANTUM]
    # Never a side on which the Cholesky is slow: the next quantum instead.
    assert [padded_length(n) for n in (249, 256, 257, 1020, 1024, 1536)] == [
        256 + LENGTH_QUANTUM, 256 + LENGTH_QUANTUM, 264, 1024 + LENGTH_QUANTUM,
        1024 + LENGTH_QUANTUM, 1536 + LENGTH_QUANTUM]
    assert all(padded_length(n) % SLOW_CHOLESKY_SIDE for n in range(1, 5000))
    batching = Batching(FitConfig())
    assert batching.bucket(33) == batching.bucket(64) != batching.bucket(65)
    assert batching.bucket(1) == batching.bucket(0) != batching.bucket(2)


def test_a_call_is_full_at_its_seconds_and_they_must_be_positive():
    batching = Batching(FitConfig())
    assert batching.seconds_per_call == SECONDS_PER_CALL
    assert batching.is_full(SECONDS_PER_CALL) and not batching.is_full(0.99 * SECONDS_PER_CALL)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="seconds_per_call must be > 0"):
            Batching(FitConfig(), seconds_per_call=bad)


def _by_hand(name: str, n: int) -> float:
    """The documented model, written out: factor x (grid + starts x
    evaluations x Newton flops) / FLOPS_PER_SECOND, at least the
    structure's FLOOR_SECONDS, + SECONDS_PER_SERIES."""
    config = FitConfig(kernel=name)
    kernel = kernel_named(name)
    evaluations, factor = COST_FIGURES.get(structure(kernel), COST_FIGURES[DEAREST])
    n = padded_length(n)
    flops = factor * (flops_per_grid(kernel, n) + expected_starts(kernel, config.restarts)
                      * evaluations * flops_per_newton_evaluation(n, len(kernel.parameters) + 1))
    floor = FLOOR_SECONDS.get(structure(kernel), FLOOR_SECONDS[DEAREST])
    return max(flops / FLOPS_PER_SECOND, floor) + SECONDS_PER_SERIES


@pytest.mark.parametrize("name", ["rbf", "matern52", "periodic", "rbf+periodic",
                                  "rbf+rbf+periodic"])
def test_cost_is_the_per_structure_model(name):
    for n in (8, 20, 48, 200, 1000):
        assert Batching(FitConfig(kernel=name)).cost(n) == pytest.approx(_by_hand(name, n))


def test_short_series_cost_their_floor_and_long_ones_their_flops():
    """A series of a few points costs its structure's floor (the fixed work
    of a compiled batch's steps), not its flops, which were a twelfth of
    its CPU under auto; by 200 points the flops are above every floor."""
    for name in ("rbf", "periodic", "linear+rbf", "matern52+periodic", "linear+rbf+periodic"):
        batching = Batching(FitConfig(kernel=name))
        floor = FLOOR_SECONDS[structure(kernel_named(name))]
        assert batching.cost(8) == pytest.approx(floor + SECONDS_PER_SERIES), name
        assert batching.cost(200) > floor + SECONDS_PER_SERIES, name
    assert max(FLOOR_SECONDS.values()) == FLOOR_SECONDS[DEAREST]
    # auto on 8 points: its three candidates' floors, about 16 ms of CPU
    # measured where its screen passes the series (8-40 points).
    auto = Batching(FitConfig(kernel="auto"))
    assert auto.cost(8, True) == pytest.approx(
        SECONDS_PER_SERIES + 2 * FLOOR_SECONDS[(1, False)] + FLOOR_SECONDS[(2, True)])


def test_structures_follow_the_kernel_and_unmeasured_ones_take_the_dearest():
    assert structure(kernel_named("matern32")) == (1, False)
    assert structure(kernel_named("periodic")) == (1, True)
    assert structure(kernel_named("matern52+periodic")) == (2, True)
    assert cost_figures(kernel_named("rbf+rbf+periodic")) == COST_FIGURES[DEAREST]
    assert max(COST_FIGURES.values()) == COST_FIGURES[DEAREST]
    # A sum costs tens of times a single kernel (it was costed at 5
    # evaluations per start like rbf, and its calls ran 20-30x the target).
    ratio = Batching(FitConfig(kernel="rbf+periodic")).cost(200) / Batching(FitConfig()).cost(200)
    assert ratio > 10


def test_a_fit_without_the_far_probes_is_costed_without_them():
    # Each far probe is one likelihood value on the whole series.
    n = 200
    on, off = (Batching(FitConfig(kernel="matern52", far_probes=f)).cost(n) for f in (True, False))
    evaluations, factor = cost_figures(kernel_named("matern52"))
    spared = factor * len(starts.FAR_PROBE_LENGTHS) * flops_per_value(padded_length(n))
    assert on - off == pytest.approx(spared / FLOPS_PER_SECOND)
    # A sum's far probes are its alias, short and smooth-length shape
    # probes, each one value on the whole series (the periodic grid is
    # scored whole: one piece).
    sum_ = kernel_named("matern52+periodic")
    on, off = (Batching(FitConfig(kernel=sum_, far_probes=f)).cost(n) for f in (True, False))
    evaluations, factor = cost_figures(sum_)
    count = (starts.far_probe_count(sum_) + starts.probe_count(sum_)
             - starts.probe_count(sum_, far_probes=False))
    assert count == (len(starts.ALIAS_PROBES) + len(starts.short_probes(sum_))
                     + 2 * len(starts.SHAPE_PROBE_LENGTHS))
    assert on - off == pytest.approx(factor * count * flops_per_value(padded_length(n))
                                     / FLOPS_PER_SECOND)


def test_auto_costs_the_sum_of_its_candidates():
    """Each candidate as auto fits it: the periodic one, started from its
    smooth part's fit, without the jumps and at their figures."""
    from gpcore.batching import NO_JUMP_FIGURES
    from gpcore.config import fitted_configs
    auto = FitConfig(kernel="auto")
    parts = sum(Batching(c).cost(150) - SECONDS_PER_SERIES for c in fitted_configs(auto))
    assert Batching(auto).cost(150) == pytest.approx(parts + SECONDS_PER_SERIES)
    started = fitted_configs(auto)[-1]
    assert not started.jumps
    assert cost_figures(started.kernel, False) == NO_JUMP_FIGURES[(2, True)]
    assert Batching(started).cost(150) < Batching(FitConfig(kernel=started.kernel)).cost(150)


def _cyclic_and_walk() -> tuple[Series, Series]:
    """Six cycles of a sine in noise (the screen passes it) and a random
    walk (it fails it), 120 points each."""
    rng = np.random.default_rng(11)
    t = np.linspace(0.0, 10.0, 120)
    return (Series("cycle", t, np.sin(2 * np.pi * 0.6 * t) + 0.3 * rng.standard_normal(t.size)),
            Series("walk", np.arange(120.0), np.cumsum(rng.standard_normal(120))))


def test_auto_charges_its_periodic_candidate_only_where_it_fits_it():
    """auto fits its periodic candidate only on the series its screen
    passes (gpcore.choice.fits_periodic): a series the screen fails costs
    the smooth candidates' sum, one it passes every candidate's, and an
    unknown answer (None) charges every candidate too, the safe side."""
    from gpcore.choice import fits_periodic, periodic_screen
    from gpcore.config import fitted_configs
    auto = FitConfig(kernel="auto")
    batching = Batching(auto)
    configs = fitted_configs(auto)
    assert any(c.kernel.has_period for c in configs) and not all(
        c.kernel.has_period for c in configs)
    smooth = sum(Batching(c).cost(150) - SECONDS_PER_SERIES for c in configs
                 if not c.kernel.has_period)
    assert batching.cost(150, False) == pytest.approx(smooth + SECONDS_PER_SERIES)
    assert batching.cost(150, True) == batching.cost(150, None) == batching.cost(150)
    # The periodic candidate's fits are most of auto's flops.
    assert batching.cost(150, True) > 3 * batching.cost(150, False)
    # Of a Series, by the screen's answer.
    cycle, walk = _cyclic_and_walk()
    assert (periodic_screen(cycle.t, cycle.y), periodic_screen(walk.t, walk.y)) == (True, False)
    assert (fits_periodic(auto, cycle), fits_periodic(auto, walk)) == (True, False)
    assert batching.cost_of(cycle) == batching.cost(120, True)
    assert batching.cost_of(walk) == batching.cost(120, False)
    # Candidates all periodic: no screen, every series fits them all.
    periodic_only = FitConfig(kernel="auto", candidates=("periodic", "rbf+periodic"))
    assert Batching(periodic_only).cost_of(walk) == Batching(periodic_only).cost(120)
    # Other kernels: the length's cost, a periodic kernel's whatever the answer.
    for name in ("rbf", "rbf+periodic"):
        single = Batching(FitConfig(kernel=name))
        assert single.cost_of(walk) == single.cost(120) == single.cost(120, False)


@pytest.mark.parametrize("name", ["rbf", "rbf+periodic"])
def test_evaluations_per_start_match_the_fitters_counters(fitter_for, name):
    """On the seasonal test series, the figure is within 3x of the Newton
    evaluations per start the fitter counts (the figures are means over a few
    hundred real series; 6 series vary more than that)."""
    series = [Series(k, t, y) for k, (t, y) in seasonal_series().items() if k != "short"]
    config = FitConfig(kernel=name)
    assert len(series) <= config.batch_size  # one compiled batch, as in batches of 8
    fitter = fitter_for(config)  # the counters only grow: this fit's are the difference
    before = fitter.work.get("member_evaluations", 0)
    fitter.fit(series)
    kernel = kernel_named(name)
    per_start = (fitter.work["member_evaluations"] - before) / (
        len(series) * expected_starts(kernel, config.restarts))
    evaluations, _ = cost_figures(kernel)
    assert evaluations / 3 <= per_start <= 3 * evaluations, (per_start, evaluations)
    assert np.isfinite(per_start)


def test_markov_kernels_cost_linear_time_above_the_dense_limit():
    """Above MARKOV_ABOVE a Markov kernel's cost is the O(n) path's, linear
    in n; a kernel without a state-space form costs only its skip."""
    from gpcore.batching import markov_seconds
    from gpcore.config import MARKOV_ABOVE
    batching = Batching(FitConfig(kernel="matern32"))
    n = 10 * MARKOV_ABOVE
    assert batching.cost(n) == pytest.approx(markov_seconds(kernel_named("matern32"), n)
                                             + SECONDS_PER_SERIES)
    from gpcore.batching import MARKOV_SECONDS_WINDOW
    fixed = SECONDS_PER_SERIES + MARKOV_SECONDS_WINDOW
    assert batching.cost(10 * n) - fixed == pytest.approx(10 * (batching.cost(n) - fixed))
    assert Batching(FitConfig(kernel="rbf")).cost(n) == pytest.approx(SECONDS_PER_SERIES)


def test_a_series_is_costed_by_its_finite_points_as_the_fitter_counts_them():
    """Missing values do not count: 5,000 rows of which 1,000 are NaN are
    4,000 points, which the dense path fits (MARKOV_ABOVE) and a dense
    kernel does not skip (max_points 4,096); costed as 5,000 they were an
    O(n) fit of a few seconds or a skip, and a call held many of them."""
    rng = np.random.default_rng(0)
    t = np.arange(5000.0)
    y = rng.normal(size=t.size)
    y[rng.choice(t.size, 1000, replace=False)] = np.nan
    t_missing = t.copy()
    t_missing[:10] = np.nan  # a missing time drops its point too
    for name in ("matern32", "rbf"):
        batching = Batching(FitConfig(kernel=name))
        # White noise: rough (is_rough), at the dense path's rough figures.
        assert batching.cost_of(Series("s", t, y)) == batching.cost(4000, rough=True), name
        assert batching.cost_of(Series("s", t_missing, y)) == batching.cost(
            int((np.isfinite(t_missing) & np.isfinite(y)).sum()), rough=True), name
        assert batching.cost(4000) > 5 * batching.cost(5000), name


def test_every_long_sum_fills_a_fit_call_alone():
    """A sum of Markov kernels over MARKOV_ABOVE points is estimated above
    the default seconds per call (the smallest: two matern12 just over the
    limit), so its cost factor cannot pack two such series into one call."""
    from gpcore.config import MARKOV_ABOVE
    for name in ("matern12+matern12", "matern32+matern12", "matern52+matern12"):
        batching = Batching(FitConfig(kernel=name))
        assert batching.is_full(batching.cost(MARKOV_ABOVE + 1)), name


def test_a_long_series_is_not_batched_with_short_ones(fitter_for, rng):
    """A compiled batch pads every member to its longest: 15 series of 5-8
    points batched with one of 400 would each cost the long one's fit, about
    15x what Batching.cost charged the call. The fitter cuts a batch where
    a series would pad its members to more than twice their length, so the
    call's work is its series' work fitted apart (the results: the same)."""
    def series(name, n):
        t = np.sort(rng.uniform(0.0, 10.0, n))
        return Series(name, t, np.sin(t) + 0.1 * rng.standard_normal(n))

    short = [series(f"short{i}", int(rng.integers(5, 9))) for i in range(15)]
    long = series("long", 400)
    fitter = fitter_for(FitConfig())

    def flops_and_results(batch):
        before = fitter.work["flops"]
        results = fitter.fit(batch)
        return fitter.work["flops"] - before, results

    apart = flops_and_results(short)[0] + flops_and_results([long])[0]
    together, results = flops_and_results(short + [long])
    assert together <= 1.01 * apart, together / apart
    assert [r.series_id for r in results] == [s.series_id for s in short + [long]]
    assert all(r.status == "ok" for r in results)


def test_a_series_is_costed_at_its_finite_points():
    """The fitter fits a series' finite points; a series of 4,000 and 200
    missing values was costed at 4,200 points, over rbf's max_points: as a
    skip (1 ms), so thousands of them would go into one fit call of hours.
    Missing points also set its bucket, and under a Matérn the O(n) path
    for a series the dense fitter fits."""
    t = np.arange(4200.0)
    y = np.sin(t / 50.0)
    y[::21] = np.nan
    t[1::21] = np.inf
    series = Series("gappy", t, y)
    finite = int((np.isfinite(t) & np.isfinite(y)).sum())
    assert finite < 4096 < t.size
    for name in ("rbf", "matern32"):
        batching = Batching(FitConfig(kernel=name))
        assert batching.cost_of(series) == batching.cost(finite), name
    assert finite_points(series) == finite  # what sets its bucket too (BatchByLength)


def test_compiled_batches_cut_by_size_padding_and_room():
    """Both fitters' compiled batches (the dense path pads to padded_length
    and bounds members by memory; the O(n) path to quantised_length and
    points): consecutive, in order, none empty, each within batch_size,
    within MAX_PADDING_RATIO of its first's padded length, and within the
    room its longest member leaves."""
    from types import SimpleNamespace

    from gpcore.batching import MAX_PADDING_RATIO, compiled_batches, padded_length
    lengths = [10, 12, 16, 20, 33, 40, 70, 300, 301, 302, 303, 304, 2000]
    ready = [(i, SimpleNamespace(n_points=n)) for i, n in enumerate(lengths)]
    room = lambda n_max: 2 if n_max > 200 else 100  # noqa: E731
    batches = [[i for i, _ in b] for b in compiled_batches(ready, 4, padded_length, room)]
    assert [i for b in batches for i in b] == list(range(len(lengths)))
    for b in batches:
        padded = [padded_length(lengths[i]) for i in b]
        assert 1 <= len(b) <= 4 and max(padded) <= MAX_PADDING_RATIO * padded[0]
        assert len(b) <= max(1, room(max(padded)))
    # Padded 16,16,16,24 | 40,40,72 (304 > 2 x 40) | 304 x 5, two a batch
    # (their room) | 2000 alone (> 2 x 304).
    assert batches == [[0, 1, 2, 3], [4, 5, 6], [7, 8], [9, 10], [11], [12]]
    # Padded to exactly MAX_PADDING_RATIO times the first's (8 and 16): kept.
    pair = [(0, SimpleNamespace(n_points=8)), (1, SimpleNamespace(n_points=16))]
    assert [len(b) for b in compiled_batches(pair, 4, padded_length, room)] == [2]


def test_a_series_is_rough_where_its_neighbouring_values_are_nearly_uncorrelated():
    """is_rough: the lag-one correlation of the finite values in time
    order under ROUGH_BELOW; white noise and small counts are, smooth
    draws, walks and cycles are not, whatever the order of the rows."""
    from gpcore.batching import ROUGH_BELOW, is_rough, lag_one_correlation
    rng = np.random.default_rng(0)
    t = np.arange(200.0)
    noise, counts = rng.standard_normal(200), rng.poisson(2.0, 200).astype(float)
    walk, cycle = np.cumsum(rng.standard_normal(200)), np.sin(t / 5.0)
    assert [is_rough(Series("s", t, y)) for y in (noise, counts, walk, cycle)] == [
        True, True, False, False]
    assert lag_one_correlation(Series("s", t, cycle)) > 0.9 > ROUGH_BELOW
    # Rows in any order: sorted by time first; missing points left out.
    order = rng.permutation(200)
    assert not is_rough(Series("s", t[order], cycle[order]))
    gappy = cycle.copy()
    gappy[::3] = np.nan
    assert not is_rough(Series("s", t, gappy))
    # Nothing to correlate: not rough (the estimate as before).
    for y in (np.ones(200), np.array([1.0, 2.0])):
        assert lag_one_correlation(Series("s", np.arange(float(y.size)), y)) == 1.0


def test_the_lag_one_correlation_of_values_near_float64s_limits_warns_nothing():
    """Values of 1e308 overflowed its mean and sums: numpy's warnings, an
    error under PYTHONWARNINGS=error, in the cost estimate of every run."""
    import warnings

    from gpcore.batching import lag_one_correlation
    t = np.arange(200.0)
    cycle = np.sin(t / 5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for scale in (1.5e308, 1e-310):
            assert lag_one_correlation(Series("s", t, scale * cycle)) == pytest.approx(
                lag_one_correlation(Series("s", t, cycle)), rel=1e-9)


def test_a_rough_series_runs_every_restart_at_the_rough_figures():
    """A single kernel with a length-scale grid on a rough series is charged
    ROUGH_EVALUATIONS per start on every restart (its grid shows other
    basins on each); other structures, the O(n) path and a skip are
    charged as before, and under auto only its single candidates change."""
    from gpcore.batching import ROUGH_EVALUATIONS
    from gpcore.config import MARKOV_ABOVE, fitted_configs
    for name in ("rbf", "matern12", "matern32", "matern52"):
        config = FitConfig(kernel=name)
        kernel = kernel_named(name)
        batching = Batching(config)
        evaluations, factor = COST_FIGURES[(1, False)]
        assert ROUGH_EVALUATIONS > evaluations
        for n in (100, 200, 1000):
            dense = padded_length(n)
            by_hand = factor * (flops_per_grid(kernel, dense) + config.restarts * ROUGH_EVALUATIONS
                                * flops_per_newton_evaluation(dense, len(kernel.parameters) + 1))
            assert batching.cost(n, rough=True) == pytest.approx(
                max(by_hand / FLOPS_PER_SECOND, FLOOR_SECONDS[(1, False)]) + SECONDS_PER_SERIES)
            assert batching.cost(n, rough=True) > 2.5 * batching.cost(n)
        assert batching.cost(n) == batching.cost(n, rough=False)
    # The O(n) path and a skip: as before.
    for name, n in (("matern32", MARKOV_ABOVE + 1), ("rbf", MARKOV_ABOVE + 1)):
        batching = Batching(FitConfig(kernel=name))
        assert batching.cost(n, rough=True) == batching.cost(n)
    for name in ("periodic", "rbf+periodic", "linear+rbf", "linear+rbf+periodic"):
        batching = Batching(FitConfig(kernel=name))
        assert batching.cost(150, rough=True) == batching.cost(150), name
    auto = FitConfig(kernel="auto")
    batching = Batching(auto)
    rise = sum(Batching(c).cost(150, rough=True) - Batching(c).cost(150)
               for c in fitted_configs(auto))
    assert rise > 0
    assert batching.cost(150, False, True) - batching.cost(150, False) == pytest.approx(rise)


def test_cost_of_charges_a_rough_series_where_it_is_fitted_dense():
    """cost_of asks is_rough of the series itself: white noise at the rough
    figures, a smooth series of the same length as before."""
    rng = np.random.default_rng(1)
    t = np.arange(150.0)
    noise, smooth = Series("noise", t, rng.standard_normal(150)), Series("smooth", t, np.sin(t / 9))
    for name in ("rbf", "matern52", "periodic"):
        batching = Batching(FitConfig(kernel=name))
        assert batching.cost_of(noise) == batching.cost(150, rough=True), name
        assert batching.cost_of(smooth) == batching.cost(150), name
