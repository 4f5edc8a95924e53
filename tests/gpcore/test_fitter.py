"""GPFitter: build once, trace once, report in the caller's units."""
import dataclasses
import os
import re
import threading

import numpy as np
import pytest
import tensorflow as tf

import gp_reference as ref
from gpcore import Batching, FitConfig, GPFitter, Series, build_fitter
from gpcore.batching import padded_length
from gpcore.config import (MARKOV_ABOVE, batch_bytes, check_dense_memory, check_memory, dense_bytes,
                           fitted_configs, fitted_starts, takes_markov_path)
from gpcore.result import FIELDS
from gpcore.fitter import JITTERS
from gpcore.kernels import components
from gpcore.kernels import kernel as kernel_named
from gpcore.search import Search, hessian_dtype


@pytest.fixture(scope="module")
def rbf_fitter(fitter_for):
    return fitter_for(FitConfig(kernel="rbf"))


def _random_series(rng, count, low, high, kernel="rbf"):
    out = []
    for i in range(count):
        n = int(rng.integers(low, high + 1))
        period = 3.0 if kernel == "periodic" else None
        t, y = ref.sample(rng, kernel, n, amplitude=rng.uniform(0.5, 2.0),
                          length_scale=rng.uniform(0.5, 2.0),
                          noise_variance=rng.uniform(0.01, 0.2), mean=rng.normal(),
                          period=period)
        out.append(Series(f"s{i}", t, y))
    return out


def test_hundreds_of_series_of_many_shapes_trace_once_and_keep_their_variables(rng):
    # Trace count is independent of the iterations run, so cap them for speed.
    # What could retrace is a new shape: 300 series of 20-300 points in
    # batches of 16 are 19 compiled calls per fit of as many padded lengths
    # and two batch sizes, more shapes than 1000 series in batches of 64
    # (16 calls) gave, at a third of the series' cost.
    fitter = GPFitter(FitConfig(kernel="matern32", max_iterations=2, batch_size=16))
    variables = list(fitter.variables)
    first = fitter.fit(_random_series(rng, 300, 20, 300))
    assert len({r.n_points for r in first}) > 100  # many lengths, many batch sizes
    assert all(r.status == "ok" for r in first)
    assert fitter.tracing_count == 1
    fitter.fit(_random_series(rng, 300, 20, 300))
    assert fitter.tracing_count == 1
    assert len(fitter.variables) == len(variables)
    assert all(a is b for a, b in zip(fitter.variables, variables))


@pytest.mark.parametrize("kernel", ["rbf", "matern32", "matern52", "periodic"])
def test_reported_nll_is_that_of_the_raw_points_under_reported_params(rng, fitter_for, kernel):
    fitter = fitter_for(FitConfig(kernel=kernel, restarts=2))
    series = _random_series(rng, 5, 40, 90, kernel)
    # Raw units far from standard: the fitter standardises internally.
    series = [Series(s.series_id, 1000.0 + 86400.0 * s.t, 5e3 + 300.0 * s.y) for s in series]
    series[0].y[[3, 7]] = np.nan  # missing values are dropped
    for s, r in zip(series, fitter.fit(series)):
        assert r.status == "ok", r.error
        assert r.kernel == kernel and r.n_points == np.isfinite(s.y).sum()
        assert (r.period is not None) == (kernel == "periodic")
        expected = ref.nll(kernel, s.t, s.y, r.mean, r.amplitude, r.length_scale,
                           r.noise_variance, r.period)
        # Reported values are float64 rounded once; the nll is a sum of ~100
        # terms of size ~10, so 1e-6 relative is far above round-off.
        assert r.nll == pytest.approx(expected, rel=1e-6)
        row = r.to_row()
        assert row["iterations"] >= 1 and row["converged"] is True
        assert row["stop_reason"] == "converged" and row["at_bound"] is False


def test_recovers_known_parameters_from_long_series(rng, fitter_for):
    # 300 points over 30 length scales: the likelihood is sharp enough that
    # the estimates sit within ~20% of the truth; 35% allows for the draw.
    fitter = fitter_for(FitConfig(kernel="rbf", restarts=2))
    truth = dict(amplitude=1.5, length_scale=0.5, noise_variance=0.04, mean=2.0)
    series = [Series(i, *ref.sample(rng, "rbf", 300, span=15.0, **truth)) for i in range(6)]
    results = fitter.fit(series)
    ls = np.array([r.length_scale for r in results])
    noise = np.array([r.noise_variance for r in results])
    assert all(r.converged for r in results)
    np.testing.assert_allclose(np.median(ls), truth["length_scale"], rtol=0.15)
    np.testing.assert_allclose(np.median(noise), truth["noise_variance"], rtol=0.2)
    np.testing.assert_allclose(ls, truth["length_scale"], rtol=0.35)
    np.testing.assert_allclose(noise, truth["noise_variance"], rtol=0.35)


def test_a_series_fitted_in_a_batch_equals_it_fitted_alone(rng, rbf_fitter):
    # Members that converge leave the batch inside the compiled loop; the
    # others go on with their own state, so batch-mates cannot matter.
    series = _random_series(rng, 12, 30, 90)
    fitter = rbf_fitter
    together = fitter.fit(series)
    iterations = {r.iterations for r in together}
    assert len(iterations) > 1  # some members left the batch before others
    for s, r in zip(series, together):
        (alone,) = fitter.fit([s])
        # Padding differs (to this series' own length), so round-off differs.
        # The Hessian's float32 products (6e-8 relative) scale Newton's last
        # step, at most 2 log units, so parameters may differ by about 1e-7
        # (docs/design.md, "The Hessian's products in float32"); the nll is
        # stationary there.
        assert alone.nll == pytest.approx(r.nll, rel=1e-9, abs=1e-9)
        assert alone.length_scale == pytest.approx(r.length_scale, rel=1e-6)
        assert alone.noise_variance == pytest.approx(r.noise_variance, rel=1e-6)
        assert alone.iterations == r.iterations


def test_a_noise_free_series_moves_with_its_padding_within_newtons_tolerance(rbf_fitter):
    # Exact sines: the noise ends at its floor (at_bound) and the covariance
    # is near singular, so a batch-mate that pads it further changes the
    # round-off of every Newton step and the fit stops elsewhere on the
    # plateau inside Newton's tolerance, not to 1e-9 (README, "Running
    # locally"; docs/design.md, "What batch companions move").
    t = np.arange(20.0)
    other = np.linspace(0.0, 40.0, 31)
    (alone,) = rbf_fitter.fit([Series("a", t, np.sin(t))])
    padded = rbf_fitter.fit([Series("a", t, np.sin(t)), Series("b", other, np.cos(other / 3))])[0]
    assert alone.at_bound and padded.at_bound and alone.converged and padded.converged
    assert padded.nll == pytest.approx(alone.nll, abs=FitConfig().tolerance)
    for name in ("amplitude", "length_scale", "noise_variance"):
        assert getattr(padded, name) == pytest.approx(getattr(alone, name), rel=0.01), name


def test_a_series_on_a_slow_cholesky_side_is_padded_past_it_and_keeps_its_optimum(
        rng, rbf_fitter):
    # 256 points pad to 264 (gpcore.batching.SLOW_CHOLESKY_SIDE): eight
    # masked rows more, which add nothing to the likelihood.
    assert padded_length(256) == 264
    t, y = ref.sample(rng, "rbf", 256, amplitude=1.2, length_scale=0.8, noise_variance=0.05,
                      mean=0.3, span=20.0)
    (alone,) = rbf_fitter.fit([Series("a", t, y)])
    assert alone.status == "ok" and alone.converged
    # The numpy reference at the reported parameters: float64 values rounded
    # once, a sum of ~256 terms of size ~1, so 1e-6 relative is far above
    # round-off.
    assert alone.nll == pytest.approx(ref.nll("rbf", t, y, alone.mean, alone.amplitude,
                                              alone.length_scale, alone.noise_variance),
                                      rel=1e-6)
    # Beside a 264-point series the batch pads to 264 as well: the same
    # matrices, the same fit to round-off.
    t2, y2 = ref.sample(rng, "rbf", 264, amplitude=1.0, length_scale=0.5, noise_variance=0.1,
                        mean=0.0, span=20.0)
    together = rbf_fitter.fit([Series("a", t, y), Series("b", t2, y2)])[0]
    assert together.nll == pytest.approx(alone.nll, rel=1e-9, abs=1e-9)
    assert together.length_scale == pytest.approx(alone.length_scale, rel=1e-6)


def test_fits_say_why_they_stopped(rng):
    series = _random_series(rng, 4, 60, 80)
    for r in GPFitter(FitConfig(max_iterations=1)).fit(series):
        assert r.status == "ok" and r.iterations == 1
        assert not r.converged and r.stop_reason == "max_iterations"


def test_flat_likelihoods_end_on_a_bound_and_say_so(rng, rbf_fitter):
    # A nearly noise-free straight line: the likelihood keeps improving as
    # the noise ratio falls (and the length scale grows), so the fit is
    # held at a bound of its search box, and flagged.
    t = np.linspace(0.0, 50.0, 60)
    trend = Series("trend", t, 3.0 + 0.2 * t + 1e-3 * rng.normal(size=60))
    assert FitConfig() == rbf_fitter.config  # the defaults
    (r,) = rbf_fitter.fit([trend])
    assert r.status == "ok" and r.converged and r.at_bound, r


def test_non_numeric_times_are_skipped_not_raised(rbf_fitter):
    days = np.arange("2026-01-01", "2026-02-20", dtype="datetime64[D]")
    results = rbf_fitter.fit([Series("dates", days, np.sin(np.arange(days.size))),
                              Series("words", np.array(["a", "b", "c"]), np.ones(3)),
                              Series("objects", np.array([object()] * 3), np.ones(3))])
    for r in results:
        assert r.status == "skipped" and "not numeric" in r.error, r


def test_bad_series_are_reported_not_raised(rbf_fitter, rng):
    t = np.linspace(0.0, 10.0, 50)
    y = np.sin(t)
    cases = {
        "too_few": Series("too_few", t[:2], y[:2]),
        "no_finite": Series("no_finite", t, np.full(50, np.nan)),
        "inf_only_two_finite": Series("inf_only_two_finite", t[:4], np.array([np.inf, 1.0, -np.inf, 2.0])),
        "constant": Series("constant", t, np.full(50, 3.0)),
        "same_time": Series("same_time", np.full(10, 2.0), rng.normal(size=10)),
        "offset_time": Series("offset_time", 1e17 + t, y),
        "too_long": Series("too_long", np.arange(5000.0), rng.normal(size=5000)),
        "length_mismatch": Series("length_mismatch", t, y[:-1]),
        "unsorted_dupes": Series("unsorted_dupes", np.r_[t[::-1], t[:5]],
                                 np.r_[y[::-1], y[:5] + 0.01]),
        "with_inf": Series("with_inf", t, np.where(np.arange(50) % 7 == 0, np.inf, y)),
    }
    results = {r.series_id: r for r in rbf_fitter.fit(list(cases.values()))}
    assert set(results) == set(cases)
    for name in ("too_few", "no_finite", "inf_only_two_finite"):
        assert results[name].status == "skipped"
        assert "finite points" in results[name].error
    assert results["constant"].status == "skipped" and "equal" in results["constant"].error
    assert results["same_time"].status == "skipped" and "time" in results["same_time"].error
    assert results["offset_time"].status == "skipped" and "offset" in results["offset_time"].error
    assert results["too_long"].status == "skipped" and "max_points" in results["too_long"].error
    assert results["length_mismatch"].status == "skipped"
    assert results["unsorted_dupes"].status == "ok" and results["unsorted_dupes"].n_points == 55
    assert results["with_inf"].status == "ok" and results["with_inf"].n_points == 42
    for r in results.values():
        assert tuple(r.to_row()) == FIELDS
        if r.status != "ok":
            assert r.to_row()["nll"] is None and r.error


def test_numerical_trouble_fails_one_series_not_the_batch(rbf_fitter, rng):
    t = np.linspace(0.0, 1.0, 40)
    good = Series("good", t, np.sin(6 * t) + 0.05 * rng.normal(size=40))
    huge = Series("huge", t, 1e300 * np.sin(6 * t))  # its square overflows
    tiny = Series("tiny", t, 1e-12 * np.sin(6 * t) + 1e-14 * rng.normal(size=40))
    dense = Series("dense", np.r_[t, t + 1e-12], np.r_[np.sin(6 * t), np.sin(6 * t)])
    results = {r.series_id: r for r in rbf_fitter.fit([good, huge, tiny, dense])}
    assert results["good"].status == "ok"
    assert results["tiny"].status == "ok" and results["tiny"].amplitude < 1e-10
    assert results["dense"].status == "ok"
    assert results["huge"].status == "skipped" and "rescale" in results["huge"].error
    assert fitter_skips_denormals(rbf_fitter)
    assert float(rbf_fitter.jitter.numpy()) == JITTERS[0]


def test_concurrent_callers_are_serialised(rbf_fitter, rng):
    series = _random_series(rng, 8, 30, 60)
    expected = [r.nll for r in rbf_fitter.fit(series)]
    outputs = [None] * 4

    def work(k):
        outputs[k] = [r.nll for r in rbf_fitter.fit(series)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for out in outputs:
        np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="kernel must be one of"):
        FitConfig(kernel="quadratic")  # linear is a kernel now
    with pytest.raises(ValueError, match="restarts"):
        FitConfig(restarts=0)
    # Each bound at its edge: one point has no likelihood to profile, a zero
    # tolerance is never met, and max_points may equal min_points.
    with pytest.raises(ValueError, match="min_points must be >= 2; got 1"):
        FitConfig(min_points=1)
    with pytest.raises(ValueError, match="tolerance must be a number > 0; got 0"):
        FitConfig(tolerance=0.0)
    with pytest.raises(ValueError, match=r"max_points \(4\) must be >= min_points \(5\)"):
        FitConfig(min_points=5, max_points=4)
    assert FitConfig(min_points=5, max_points=5).max_points == 5
    # Under auto each candidate's default, checked when the config is made,
    # not when the candidate's fitter is built.
    with pytest.raises(ValueError, match=r"max_points \(4096, rbf's default\) must be >= "
                       r"min_points \(5000\); raise max_points or lower min_points"):
        FitConfig(kernel="auto", candidates=("rbf", "matern12"), min_points=5000)


@pytest.mark.parametrize("name, points, markov", [
    ("matern32", MARKOV_ABOVE, False),  # "longer than MARKOV_ABOVE": the dense path
    ("matern32", MARKOV_ABOVE + 1, True),
    ("matern52+matern12", MARKOV_ABOVE + 1, True),
    ("matern32+rbf", MARKOV_ABOVE + 1, False),  # every part needs a state-space form
    ("rbf", MARKOV_ABOVE + 1, False),
])
def test_only_series_longer_than_markov_above_of_markov_kernels_take_the_o_n_path(
        name, points, markov):
    assert takes_markov_path(kernel_named(name), points) is markov


@pytest.mark.parametrize("settings, message", [
    # Accepted before, then a TypeError from the batching, the graph or
    # the grid, or every series "failed" with TensorFlow's int32 message.
    ({"batch_size": 2.5}, "batch_size must be a whole number >= 1; got 2.5"),
    ({"restarts": "3"}, "restarts must be a whole number >= 1; got '3'"),
    ({"max_iterations": 2.5}, "max_iterations must be a whole number"),
    ({"min_points": 3.5}, "min_points must be a whole number"),
    ({"max_points": True}, "max_points must be a whole number"),
    ({"tolerance": "1e-3"}, "tolerance must be a number > 0; got '1e-3'"),
    ({"stop_behind": "x"}, "stop_behind must be a number >= 0; got 'x'"),
])
def test_config_names_a_setting_of_the_wrong_type(settings, message):
    with pytest.raises(ValueError, match=message):
        FitConfig(**settings)


def test_max_iterations_past_int32_is_refused_rather_than_wrapped():
    """The graph counts steps in int32: max_iterations=2**31 (meant as no
    limit) wrapped to a negative bound, and every fit stopped after one
    Newton step, status "ok", stop_reason "max_iterations"."""
    assert FitConfig(max_iterations=2**31 - 1).max_iterations == 2**31 - 1
    with pytest.raises(ValueError, match=r"max_iterations must be at most 2147483647 "
                                         r"\(int32\); got 2147483648"):
        FitConfig(max_iterations=2**31)


# The command's limits (tests/pipeline/test_options.py): each start is a
# batch member held in memory, and one past the grid's points repeats one.
@pytest.mark.parametrize("kernel, most, whose", [
    ("rbf", 40, "rbf's start grid has"), ("periodic", 24, "periodic's start grid has"),
    ("rbf+periodic", 96, "rbf+periodic's start grid has"),
    ("auto", 96, "the largest of the candidates' start grids has")])
def test_restarts_past_the_start_grid_are_refused_by_the_config(kernel, most, whose):
    """FitConfig(restarts=2**31) was taken, and build_fitter's first fit of
    one 20-point series used 16 GB within a minute."""
    assert FitConfig(kernel=kernel, restarts=most).restarts == most
    for restarts in (most + 1, 2**31):
        with pytest.raises(ValueError, match=rf"^restarts= \({restarts}\) must be at most "
                                             rf"{most}: {re.escape(whose)} {most} points, and a start past "
                                             rf"them repeats one; give restarts={most} or fewer$"):
            FitConfig(kernel=kernel, restarts=restarts)


# auto's matern52+periodic, started from matern52's fit, runs 4 starts a
# series whatever its 3 restarts (config.fitted_starts).
@pytest.mark.parametrize("kernel, named, starts", [
    ("rbf", "rbf", 3), ("rbf+periodic", "rbf+periodic", 3), ("auto", "matern52+periodic", 4)])
def test_a_max_points_whose_dense_fit_outgrows_the_machine_is_refused(kernel, named, starts):
    """max_points=100000 on a dense kernel let one series' fit ask for
    terabytes (~7 N x N float64 matrices a start): the process aborted
    with std::bad_alloc under a memory limit, or the OOM killer took it."""
    need = dense_bytes(kernel_named(named), starts, 100_000) / 2**30
    with pytest.raises(ValueError, match=rf"^max_points \(100000\) would let one series' "
                                         rf"{re.escape(named)} fit need about {need:,.1f} GiB "
                                         rf"\({starts} start\(s\): ~\d+ 100000 x 100000 float64 "
                                         r"matrices a series\), more than this machine's "
                                         r"[\d.]+ GiB; "
                                         r"give max_points \d+ or less"):
        build_fitter(FitConfig(kernel=kernel, max_points=100_000))
    # Asked where the fit runs, not by the config: a Dataflow launcher's
    # memory says nothing of its workers'.
    assert FitConfig(kernel=kernel, max_points=100_000).max_points == 100_000


def test_a_config_copied_with_its_default_max_points_is_not_held_to_the_memory_bound():
    """dataclasses.replace passes the default max_points (4096) on as if
    given: FitConfig(kernel="rbf+periodic", restarts=96) copied with
    far_probes=False (fit_frame's search=) was refused at ~241 GiB."""
    config = FitConfig(kernel="rbf+periodic", restarts=96)
    assert dataclasses.replace(config, far_probes=False).max_points == 4096
    assert FitConfig(kernel="rbf+periodic", restarts=96, max_points=4096).restarts == 96
    check_memory(dataclasses.replace(config, far_probes=False))
    check_memory(FitConfig(kernel="rbf+periodic", restarts=96, max_points=4096))
    with pytest.raises(ValueError, match=r"^max_points \(4097\) would let"):
        check_memory(dataclasses.replace(config, max_points=4097))


@pytest.mark.parametrize("kernel, max_points", [
    ("rbf", 4000), ("rbf+periodic", 3000), ("matern12", 200_000),
    ("matern32+matern52", 5000), ("matern52", 2_000_000), ("auto", 3000)])
def test_a_max_points_at_or_below_the_defaults_dense_size_is_not_refused(kernel, max_points,
                                                                          tmp_path, monkeypatch):
    """A given max_points that lets no series fit densely at more points
    than the kernel's default asks no more memory than the default run,
    which is not checked: under a 2 GiB cgroup limit rbf's 4,000 (below its
    4,096), a Markov kernel's 200,000 (its dense fit stops at MARKOV_ABOVE
    either way) and auto's 3,000 were refused, while the same run without
    --max_points went on."""
    import gpcore.config as config_module

    _cgroups(tmp_path, "0::/\n", {"memory.max": str(2 * 2**30)})
    monkeypatch.setattr(config_module, "PROC_ROOT", str(tmp_path / "proc"), raising=False)
    monkeypatch.setattr(config_module, "CGROUP_ROOT", str(tmp_path / "sys" / "fs" / "cgroup"),
                        raising=False)
    assert config_module.machine_memory() == 2 * 2**30
    check_memory(FitConfig(kernel=kernel, max_points=max_points))
    # One point past a dense kernel's default is still checked.
    with pytest.raises(ValueError, match=r"^max_points \(4097\) would let one series' rbf fit"):
        check_memory(FitConfig(kernel="rbf", max_points=4097))


def test_the_dense_memory_bound_names_the_most_points_that_fit():
    """The points it advises fit in the memory; one more does not. A
    Markov kernel's fit past MARKOV_ABOVE points is O(n): any max_points."""
    rbf = kernel_named("rbf")
    memory = 8 * 2**30
    with pytest.raises(ValueError, match=r"give max_points (\d+) or less") as refused:
        check_dense_memory(100_000, rbf, 3, memory)
    fits = int(re.search(r"give max_points (\d+)", str(refused.value)).group(1))
    assert dense_bytes(rbf, 3, fits) <= memory < dense_bytes(rbf, 3, fits + 1)
    check_dense_memory(fits, rbf, 3, memory)
    assert 5000 < fits < 8000  # ~28 N x N float64 matrices: 7 for the series, 7 a start
    check_dense_memory(1_000_000, kernel_named("matern32"), 3, memory)
    # The defaults are not refused, nor asked to fit this machine.
    check_memory(FitConfig(kernel="rbf+periodic"), memory)
    check_memory(FitConfig(kernel="rbf", max_points=4096), memory)


def test_the_memory_bound_counts_the_given_starts_of_autos_started_candidate():
    """auto's matern52+periodic, started from matern52's fit, runs the grid's
    best point and a start at each of the screen's period multiples
    (gpcore/choice.py's periodic_starts): 4 members a series, where the
    bound counted its 3 restarts, 64 N x N matrices. Measured 83 over the
    process's own at 2,048 points, 85 at 3,000 and 82 at 4,096 with
        python benchmarks/worker_memory.py --kernel auto --points 2048 \\
            --series 1 --cycle 50 --limit_s 300
    (benchmarks/RESULTS.md, "Memory at the default `--max_points`"): a
    machine one matrix short of the measured 2,048-point peak is refused."""
    rng = np.random.default_rng(3)
    t = np.arange(300.0)
    choice = build_fitter(FitConfig(kernel="auto"))
    fitted = choice.fit([Series("cycled", t, rng.standard_normal(300)
                                + 2 * np.sin(2 * np.pi * t / 50))])
    assert fitted[0].kernel == "matern52+periodic"
    started = choice.fitters[-1]
    members = started.work["members"] // started.work["series"]
    assert (started.config.kernel.name, started.config.restarts, members) == (
        "matern52+periodic", 3, 4)
    n = padded_length(5000)
    with pytest.raises(ValueError, match=r"^max_points \(5000\) would let one series' "
                                         r"matern52\+periodic fit need about .* \(4 start\(s\): "
                                         r"~(\d+) 5000 x 5000") as refused:
        check_memory(FitConfig(kernel="auto", max_points=5000), memory=82 * n * n * 8)
    assert int(re.search(r"~(\d+) 5000", str(refused.value)).group(1)) >= 83


# Peak RSS (MB, 2^20 bytes) of a gpfit worker process fitting one rough
# series, measured with
#     python benchmarks/worker_memory.py --kernel K --points N --series 1 \
#         [--cycle 50] --limit_s 300
# (benchmarks/RESULTS.md, "Memory at the default `--max_points`"); auto with
# --cycle 50 kept matern52+periodic, started from matern52's fit.
_WORKER_PEAKS_MB = [("rbf+periodic", 2048, 2750), ("linear+rbf+periodic", 2048, 3111),
                    ("auto", 1500, 2197), ("auto", 2048, 3546), ("auto", 3000, 6766),
                    ("auto", 4096, 11357)]
# The worker's own before any fit (TensorFlow, the traced fitter): the
# peak of the runs whose series were skipped.
_WORKER_OWN_MB = 893


@pytest.mark.parametrize("kernel, points, peak_mb", _WORKER_PEAKS_MB)
def test_the_dense_memory_estimate_is_not_below_a_workers_measured_peak(kernel, points,
                                                                        peak_mb):
    """A sum's start counted 19 N x N matrices: linear+rbf+periodic's 3
    starts held 69 at 2,048 points over the process's own, counted 64, and
    auto's started matern52+periodic's 4 held 85 at 3,000, counted 83. The
    estimate of one series (for auto its periodic candidate's) is now at
    least each peak measured over the process's own."""
    config = FitConfig(kernel=kernel)
    fitted, starts = fitted_starts(config)[-1]
    assert fitted.kernel.has_period and len(components(fitted.kernel)) > 1
    assert dense_bytes(fitted.kernel, starts, points) >= (peak_mb - _WORKER_OWN_MB) * 2**20


# Measures, in a fresh process, the peak RSS a warmed fitter (kernel
# argv[1], argv[3] restarts, batch_size 16) adds to fit argv[4] (default 1)
# series of argv[2] white-noise points: every start runs on such a rough
# series, the most a series holds.
_MEASURES_PEAKS = pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"),
                                     reason="needs Linux's /proc/self/clear_refs")
_PEAK_SCRIPT = """
import json, sys
import numpy as np
from gpcore import FitConfig, GPFitter, Series
def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))
fitter = GPFitter(FitConfig(kernel=sys.argv[1], restarts=int(sys.argv[3]), max_points=4096))
rng = np.random.default_rng(0)
fitter.fit([Series("warm", np.arange(40.0), rng.standard_normal(40))])
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak so far (tracing's, which may pass the fit's) forgotten
before = status("VmRSS:")
n, count = int(sys.argv[2]), int(sys.argv[4]) if len(sys.argv) > 4 else 1
results = fitter.fit([Series(f"rough{i}", np.arange(float(n)), rng.standard_normal(n))
                      for i in range(count)])
print(json.dumps({"status": sorted({r.status for r in results}), "bytes": status("VmHWM:") - before,
                  "restarts": fitter.config.restarts}))
"""


@_MEASURES_PEAKS
@pytest.mark.parametrize("kernel, restarts", [("matern52", 1), ("rbf", 3)])
def test_the_dense_memory_estimate_follows_a_series_measured_peak(kernel, restarts):
    """dense_bytes counted ten N x N matrices a start: a 1,000-point
    matern52 fit with one start measured 1.24x that, so that the bound let
    through a max_points the machine could not hold, and rbf's 3 starts 0.7x.
    It now counts the matrices measured per series and per start: the peak
    of a series whose every start runs is 0.6-1.0 of the estimate (above:
    the machine runs out; far below: fits that would run are refused)."""
    import json
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    n = 1000
    done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, kernel, str(n), str(restarts)],
                          cwd=root, capture_output=True, text=True, check=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="2"))
    measured = json.loads(done.stdout.splitlines()[-1])
    assert measured["status"] == ["ok"] and measured["restarts"] == restarts
    # One estimate for rbf and the Materns: rbf's peaks are the lower, 0.68-0.8
    # of it over runs (the allocator, what else the process holds), matern52's
    # 0.89-0.94.
    ratio = measured["bytes"] / dense_bytes(kernel_named(kernel), restarts, n)
    assert 0.6 <= ratio <= 1.0, ratio


@_MEASURES_PEAKS
def test_the_memory_bound_counts_a_compiled_batch_and_the_fitters_side_by_side():
    """The bound counted one series per machine: a fit call holds a batch
    of series (16 rough 500-point rbf series peaked at 387 MB, 6.8x one
    series' estimate), and a machine runs a fitter per core, each with its
    batch at once. It now counts the batch the longest series allow and the
    fitters: the measured batch is under it, and a machine that holds two
    such fitters is not refused, one that holds one is."""
    import json
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, "rbf", "500", "3", "16"],
                          cwd=root, capture_output=True, text=True, check=True, timeout=900,
                          env=dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="2"))
    measured = json.loads(done.stdout.splitlines()[-1])
    assert measured["status"] == ["ok"]
    rbf = kernel_named("rbf")
    bound = batch_bytes(rbf, 3, 500, 16)
    # A bound: shorter series fill a batch to MAX_BATCH_ELEMENTS, not only
    # these; 0.5-1.0 of it measured here.
    assert measured["bytes"] > 5 * dense_bytes(rbf, 3, 500)
    assert 0.5 * bound <= measured["bytes"] <= bound, (measured["bytes"], bound)
    check_dense_memory(500, rbf, 3, memory=2 * bound, batch_size=16, fitters=2)
    with pytest.raises(ValueError, match=r"^max_points \(500\) would let a compiled batch of "
                                         r"rbf fits \(up to 16 series\) in each of 2 fitters "
                                         r"side by side need about 1\.\d GiB .*; give "
                                         r"max_points \d+ or less, fewer fitters side by side"):
        check_dense_memory(500, rbf, 3, memory=2 * bound - 1, batch_size=16, fitters=2)
    with pytest.raises(ValueError, match=r"give max_points (\d+) or less") as refused:
        check_dense_memory(500, rbf, 3, memory=bound - 1, batch_size=16)
    fits = int(re.search(r"give max_points (\d+)", str(refused.value)).group(1))
    check_dense_memory(fits, rbf, 3, memory=bound - 1, batch_size=16)
    # check_memory asks it only of a max_points past the kernel's default:
    # 500 holds no more than the default run, which goes on unchecked.
    check_memory(FitConfig(kernel="rbf", max_points=500), memory=bound - 1, fitters=2)


def _cgroups(root, own: str, limits: dict) -> None:
    """A /proc/self/cgroup and cgroup tree under root: limits maps a
    file under sys/fs/cgroup to its contents."""
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "cgroup").write_text(own)
    for name, value in limits.items():
        (root / "sys" / "fs" / "cgroup" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "sys" / "fs" / "cgroup" / name).write_text(value + "\n")


@pytest.mark.parametrize("own, limits", [
    # cgroup v1 (Docker, Kubernetes, Amazon Linux 2, CentOS 7 hosts): the
    # container's limit in memory/memory.limit_in_bytes, its path in
    # /proc/self/cgroup not mounted as such in the container.
    ("5:cpu:/\n4:memory:/docker/abc\n0::/\n",
     {"memory/memory.limit_in_bytes": str(2 * 2**30)}),
    ("4:memory:/job\n", {"memory/memory.limit_in_bytes": str(2**63 - 4096),
                          "memory/job/memory.limit_in_bytes": str(2 * 2**30)}),
    # cgroup v2 without a namespace (systemd-run -p MemoryMax=2G, a
    # service's MemoryMax): the limit at its own cgroup, or a parent's.
    ("0::/user.slice/run-1.scope\n", {"user.slice/run-1.scope/memory.max": "max",
                                       "user.slice/memory.max": str(2 * 2**30)}),
    # cgroup v2 in a container's namespace: at the root, as before.
    ("0::/\n", {"memory.max": str(2 * 2**30)}),
])
def test_the_machines_memory_is_its_cgroups_limit_v1_or_v2(own, limits, tmp_path, monkeypatch):
    """A container's memory limit bounds max_points, as the fit is killed
    there: under cgroup v1, or a v2 cgroup below the root, the machine's
    whole memory was taken (25 GiB for a 2 GiB container)."""
    import gpcore.config as config_module

    _cgroups(tmp_path, own, limits)
    monkeypatch.setattr(config_module, "PROC_ROOT", str(tmp_path / "proc"), raising=False)
    monkeypatch.setattr(config_module, "CGROUP_ROOT", str(tmp_path / "sys" / "fs" / "cgroup"),
                        raising=False)
    assert config_module.machine_memory() == 2 * 2**30
    with pytest.raises(ValueError, match=r"more than this machine's 2\.0 GiB"):
        check_memory(FitConfig(kernel="rbf", max_points=6000))


def test_the_machines_memory_without_cgroups_is_all_of_it(tmp_path, monkeypatch):
    """No /proc (macOS), no limit ("max", unlimited v1): the machine's."""
    import gpcore.config as config_module

    whole = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    monkeypatch.setattr(config_module, "PROC_ROOT", str(tmp_path / "no-proc"), raising=False)
    assert config_module.machine_memory() == whole
    _cgroups(tmp_path, "4:memory:/a\n0::/\n", {"memory/a/memory.limit_in_bytes": str(2**63 - 4096),
                                               "memory.max": "max"})
    monkeypatch.setattr(config_module, "PROC_ROOT", str(tmp_path / "proc"), raising=False)
    monkeypatch.setattr(config_module, "CGROUP_ROOT", str(tmp_path / "sys" / "fs" / "cgroup"),
                        raising=False)
    assert config_module.machine_memory() == whole


def test_auto_candidates_keep_the_restarts_asked_within_their_own_grids(fitter_for):
    """Under auto the restarts asked are bounded by the largest candidate's
    grid, and each candidate keeps at most its own grid's: linear held 40
    for its 4 points, 36 batch members a series that never ran (a start
    past the grid is never active), 10 times the members and 8 compiled
    calls for 3 on 32 series, and Batching charged it 40 starts. Its fits
    are the same, to the bit."""
    config = FitConfig(kernel="auto", candidates=("linear", "rbf"), restarts=40)
    assert [(c.kernel_name, c.restarts) for c in fitted_configs(config)] == [
        ("linear", 4), ("rbf", 40)]
    with pytest.raises(ValueError, match=r"^restarts= \(41\) must be at most 40: the largest"):
        FitConfig(kernel="auto", candidates=("linear", "rbf"), restarts=41)

    linear = fitted_configs(config)[0]
    before = dataclasses.replace(linear, restarts=4)
    object.__setattr__(before, "restarts", 40)  # as fitted_configs built it
    rng = np.random.default_rng(3)
    series = [Series(f"s{i}", t, 0.3 * t + np.sin(t * (1 + i / 10)) + 0.2 * rng.normal(size=60))
              for i, t in enumerate(np.sort(rng.uniform(0, 10, (20, 60)), axis=1))]
    now, then = fitter_for(linear), GPFitter(before)
    assert now.fit(series) == then.fit(series)
    assert now.work["members"] * 10 == then.work["members"]
    assert Batching(linear).cost(60) < Batching(before).cost(60)


def test_config_takes_numpy_whole_numbers():
    assert FitConfig(batch_size=np.int64(4), restarts=np.int32(2)) == \
        FitConfig(batch_size=4, restarts=2)


class _IndefiniteBelow(Search):
    """A search whose covariance of series "bad" is indefinite unless the
    jitter reaches `threshold`: the case a failed Cholesky produces."""

    threshold = JITTERS[-1]

    def newton_terms(self, x, feature, y, mask):
        nll, gradient, hessian, aux = super().newton_terms(x, feature, y, mask)
        # Series "bad" has 37 points; the others have 40.
        bad = tf.equal(tf.reduce_sum(mask, axis=-1), 37.0) & (self.jitter < self.threshold)
        return tf.where(bad, tf.constant(np.nan, tf.float64), nll), gradient, hessian, aux


class _IndefiniteFitter(GPFitter):
    search_type = _IndefiniteBelow


@pytest.mark.parametrize("threshold, status", [(JITTERS[-1], "ok"), (1.0, "failed")])
def test_jitter_escalates_for_the_failing_series_only(rng, threshold, status):
    fitter = _IndefiniteFitter(FitConfig(kernel="rbf"))
    fitter.search.threshold = threshold
    t = np.linspace(0.0, 5.0, 40)
    good = [Series(f"g{i}", t, np.sin(t + i) + 0.1 * rng.normal(size=40)) for i in range(3)]
    bad = Series("bad", t[:37], np.cos(t[:37]) + 0.1 * rng.normal(size=37))
    results = {r.series_id: r for r in fitter.fit(good + [bad])}
    assert all(results[s.series_id].status == "ok" for s in good)
    assert results["bad"].status == status
    if status == "ok":
        assert results["bad"].noise_variance > JITTERS[-1] * results["bad"].amplitude ** 2 * 0.99
    else:
        assert "not positive definite even with jitter 0.01" in results["bad"].error
    assert float(fitter.jitter.numpy()) == JITTERS[0]


def fitter_skips_denormals(fitter):
    t = np.linspace(0.0, 1.0, 30)
    (result,) = fitter.fit([Series("denormal", t, 1e-320 * np.arange(30.0))])
    return result.status == "skipped" and "rescale" in result.error


class _ExactHessian(Search):
    exact_hessian = True


class _ExactHessianFitter(GPFitter):
    search_type = _ExactHessian


@pytest.mark.parametrize("kernel", ["rbf", "matern52"])
def test_float32_hessian_products_reach_the_float64_optimum(rng, kernel):
    # Both stop within Newton's tolerance (1e-4 nats predicted decrease) of
    # the same optimum; the Hessian only steers, so the optima agree to it.
    series = [Series(f"s{i}", t, np.sin(t / (0.5 + i % 4)) + (0.05 + 0.1 * (i % 3))
                     * rng.normal(size=t.size))
              for i, t in enumerate(np.sort(rng.uniform(0, 10, size=(12, 60)), axis=1))]
    fast = {r.series_id: r for r in GPFitter(FitConfig(kernel=kernel)).fit(series)}
    exact = {r.series_id: r for r in _ExactHessianFitter(FitConfig(kernel=kernel)).fit(series)}
    for s in series:
        assert fast[s.series_id].status == exact[s.series_id].status == "ok"
        assert fast[s.series_id].nll == pytest.approx(exact[s.series_id].nll, abs=1e-4)


def test_only_kernels_without_a_ridge_take_float32_hessian_products():
    assert hessian_dtype(kernel_named("rbf")) == tf.float32
    assert hessian_dtype(kernel_named("matern12")) == tf.float32
    for name in ("periodic", "rbf+periodic", "linear+rbf"):
        assert hessian_dtype(kernel_named(name)) is None


@pytest.mark.parametrize("kernel", ["rbf", "matern12", "auto"])
def test_fit_says_it_takes_a_list_of_series(fitter_for, kernel):
    """fit(Series(...)) raised "object of type 'Series' has no len()", and
    a (t, y) pair in the list "'tuple' object has no attribute 'series_id'";
    a generator of Series raised too, though it is as good as a list."""
    from gpcore import build_fitter

    fitter = build_fitter(FitConfig(kernel=kernel)) if kernel == "auto" else \
        fitter_for(FitConfig(kernel=kernel))
    t = np.linspace(0.0, 1.0, 20)
    one = Series("a", t, np.sin(5.0 * t))
    with pytest.raises(TypeError, match="fit takes a list of Series; got one Series: pass \\[series\\]"):
        fitter.fit(one)
    with pytest.raises(TypeError, match="item 1 is a tuple, not a gpcore.Series"):
        fitter.fit([one, (t, t)])
    assert [r.status for r in fitter.fit(s for s in [one])] == ["ok"]


@pytest.mark.parametrize("make", ["GPFitter", "KernelChoice", "build_fitter"])
@pytest.mark.parametrize("config", ["rbf", {"kernel": "auto"}])
def test_a_fitter_says_it_takes_a_fit_config(make, config):
    """GPFitter("rbf") raised "'str' object has no attribute 'kernel'"."""
    import gpcore

    with pytest.raises(TypeError, match=f"config must be a FitConfig, e.g. {make}\\(FitConfig"
                                        f"\\(kernel=.*\\)\\); got a {type(config).__name__}"):
        getattr(gpcore, make)(config)


@pytest.mark.parametrize("copies", [0, -1, 2.5, "2", True])
def test_build_fitter_refuses_copies_that_are_no_count(copies):
    """copies=0 or -1 built one fitter without a word; 2.5 and "2" raised
    TypeErrors from range and <=."""
    from gpcore import build_fitter

    with pytest.raises(ValueError, match=f"copies must be a whole number >= 1 .*; got {copies!r}"):
        build_fitter(FitConfig(), copies)


@pytest.mark.parametrize("path", ["dense", "markov"])
def test_an_error_in_a_fits_python_is_reported_with_its_traceback_once(rng, monkeypatch, caplog,
                                                                       path):
    """A fit's Python raising (a bug or a race in gpfit, such as the trace
    key's "dictionary changed size during iteration") came back as the
    series' failure, its last line only: counted with bad data, the
    traceback lost. It still fails only its series, and the first such
    error of a process is logged at warning level with its traceback."""
    import logging

    from gpcore import result

    monkeypatch.setattr(result, "_REPORTED", set(), raising=False)
    if path == "dense":
        fitter = GPFitter(FitConfig(kernel="rbf", batch_size=4))
        inner = fitter
        t = np.linspace(0.0, 10.0, 30)
    else:
        fitter = GPFitter(FitConfig(kernel="matern32", batch_size=4))
        inner = fitter.long_fitter
        t = np.linspace(0.0, 10.0, MARKOV_ABOVE + 10)

    def bug(batch):
        raise RuntimeError("dictionary changed size during iteration")

    monkeypatch.setattr(inner, "_fit_batch", bug)
    series = [Series(f"s{i}", t, np.sin(t + i) + 0.1 * rng.standard_normal(t.size))
              for i in range(2)]
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        results = fitter.fit(series) + fitter.fit(series)
    assert [r.status for r in results] == ["failed"] * 4
    assert all("dictionary changed size during iteration" in r.error for r in results)
    reported = [r for r in caplog.records if "an error in gpfit" in r.getMessage()]
    assert len(reported) == 1, caplog.messages
    # The traceback goes with it; under the command's one-line log filter
    # (installed by a pipeline test run earlier in this process), at
    # --log_level debug.
    assert ((reported[0].exc_info or [None])[0] is RuntimeError
            or "(traceback: --log_level debug)" in reported[0].getMessage())
    assert "RuntimeError: dictionary changed size" in reported[0].getMessage()
