"""Kernel "auto"'s guard against spurious cycles: the periodogram screen,
the BIC margin a periodic candidate must win by, and KernelChoice fitting
periodic candidates only on the series the screen passes."""
import dataclasses

import numpy as np
import pytest

from gpcore import FitConfig, KernelChoice, Series
from gpcore.choice import (START_MULTIPLES, START_PERIODIC_LENGTH, _judged, _screen, choose_fit,
                           fits_periodic, periodic_screen, periodic_starts, screen_period)
from gpcore.config import PERIODIC_MARGIN, SCREEN_FALSE_ALARM, SCREEN_MIN_CYCLES, fitted_configs
from gpcore.result import FAILED, OK, SKIPPED, FitResult

N = 120
SEEDS = range(20)


def _sine(rng, cycles=6.0, noise=0.5, n=N):
    t = np.linspace(0.0, 10.0, n)
    return t, np.sin(2 * np.pi * cycles * t / np.ptp(t) + rng.uniform(0, 2 * np.pi)) \
        + noise * rng.standard_normal(n)


def _walk(rng, n=N):
    return np.arange(n, dtype=float), np.cumsum(rng.standard_normal(n))


def _trend(rng, n=N):
    """A straight line plus AR(1) noise (coefficient 0.8): a macro series'
    look, where BIC found 4-26-year cycles."""
    e = np.zeros(n)
    for i in range(1, n):
        e[i] = 0.8 * e[i - 1] + rng.standard_normal()
    return np.arange(n, dtype=float), 0.3 * np.arange(n) + e


def test_the_screen_passes_repeated_cycles():
    """6 cycles of a sine at signal-to-noise sd 0.7 over 1: every seed."""
    passed = [periodic_screen(*_sine(np.random.default_rng(s))) for s in SEEDS]
    assert all(passed)


@pytest.mark.parametrize("draw", [_walk, _trend])
def test_the_screen_rejects_walks_and_trends(draw):
    """Without a cycle the screen passes 1-2 % of white noise, walks and
    AR(1) noise at about this length at SCREEN_FALSE_ALARM 0.01
    (benchmarks/screen_calibration.py: the peak is taken over an
    oversampled band); prewhitening makes walks and trends + AR(1) noise
    nearly white, so of 20 seeds at most 2 pass (the binomial tail of 3
    or more at p = 0.02 is 0.007; a test without prewhitening passes most
    of them: their low-frequency power is large)."""
    assert SCREEN_FALSE_ALARM <= 0.01
    passed = [periodic_screen(*draw(np.random.default_rng(s))) for s in SEEDS]
    assert sum(passed) <= 2, passed


def test_the_screen_judges_a_series_alike_at_any_scale():
    """y's squares overflowed: a cycle around 1e190 or 1e200 was judged a
    line (and one around 1e-200 too, its squares 0); its verdict and period
    are now those of the same series scaled by 1e-190 (or 1e190)."""
    rng = np.random.default_rng(5)
    for t, y, passes in ((*_sine(rng), True), (*_walk(rng), False)):
        for big in (1e190, 1e200, 1e300, 1e-200):
            scaled = y * big
            ordinary = scaled / 1e190 if big > 1 else scaled * 1e190
            assert periodic_screen(t, scaled) == periodic_screen(t, ordinary) == passes, big
            if passes:
                assert screen_period(t, scaled) == pytest.approx(screen_period(t, ordinary),
                                                                 rel=1e-9)


def test_the_screens_scaling_moves_no_ordinary_verdict():
    """The screen divides y by a power of two near max |y|, exact in
    float64: on ordinary series, cyclic, walks, trends and gapped, at
    ordinary scales, its verdict and period are those of y as given, to
    the bit."""
    rng = np.random.default_rng(9)
    series = [_sine(rng), _sine(rng, cycles=4.0, noise=1.5), _walk(rng), _trend(rng),
              (np.r_[np.arange(40.0), 60 + np.arange(40.0)], rng.standard_normal(80))]
    for t, y in series:
        for scale in (1.0, 37.5, 1e-3, 2e6):
            ours = _screen(t, scale * y)
            given = _judged(t, scale * y, SCREEN_FALSE_ALARM, SCREEN_MIN_CYCLES)
            assert ours == given, (ours, given)


def test_the_screen_wants_cycles_repeated_in_the_span():
    """1.5 cycles is not a cycle seen SCREEN_MIN_CYCLES times; the same
    shape at 4 cycles is."""
    rng = np.random.default_rng(7)
    assert not periodic_screen(*_sine(rng, cycles=1.5, noise=0.1))
    assert periodic_screen(*_sine(rng, cycles=4.0, noise=0.1))


def test_the_screen_on_degenerate_series():
    assert not periodic_screen(np.arange(5.0), np.sin(np.arange(5.0)))  # too short to judge
    assert not periodic_screen(np.arange(50.0), np.ones(50))  # constant
    assert not periodic_screen(np.arange(50.0), 3.0 * np.arange(50.0))  # a line


@pytest.mark.parametrize("scale, offset", [(1e-3, 1e9), (1e-4, 1e9), (1e-6, 1e3), (-1e-3, -1e9)])
def test_the_screen_is_unchanged_by_an_offset_in_y(scale, offset):
    """y -> a y + b changes no verdict and no period while the cycle is
    resolved at b: a cycle of 1e-3 on 1e9 (float64 steps of 1.2e-7 there,
    so about 10^4 levels; a reading of a counter or a balance) passed as y
    and failed as y + 1e9, where a bound of 1e-12 max|y| took the rest for
    a line's rounding. An exact line stays a line at any offset."""
    for seed in range(3):
        t, y = _sine(np.random.default_rng(seed), noise=0.3)
        assert periodic_screen(t, y)
        assert periodic_screen(t, scale * y + offset)
        assert screen_period(t, scale * y + offset) == screen_period(t, y)
    line = offset + scale * np.arange(50.0)
    assert not periodic_screen(np.arange(50.0), line)


def test_kernel_choice_is_unchanged_by_an_offset_in_y():
    """The same choice, and BIC and nll moved by n log|a| (the Jacobian of
    y -> a y + b), on a cycle of 1e-3 around 1e9. Tolerance 1e-2 nats:
    the values carry float64's rounding at 1e9, 1.2e-7, about 1e-4 of the
    noise's sd, which moves the nll by about n x 1e-4 (120 points)."""
    t, y = _sine(np.random.default_rng(4), noise=0.3)
    chooser = KernelChoice(FitConfig(kernel="auto", candidates=("rbf", "rbf+periodic")))
    plain, offset = chooser.fit([Series("y", t, y), Series("1e9 + 1e-3 y", t, 1e9 + 1e-3 * y)])
    assert plain.kernel == offset.kernel == "rbf+periodic"
    jacobian = N * np.log(1e-3)
    assert offset.nll == pytest.approx(plain.nll + jacobian, abs=1e-2)
    assert offset.bic_margin == pytest.approx(plain.bic_margin, abs=2e-2)


def test_the_screen_remembers_verdicts_by_content(monkeypatch):
    """A command asks the screen about one series up to four times; the
    verdict is computed once per content (t, y) and settings, a changed
    value or setting is judged afresh, and the memory keeps at most
    SCREEN_MEMORY verdicts; the trace cache's key does not see them."""
    import gpcore.choice as choice
    monkeypatch.setattr(choice._screened, "most", 3)
    choice.forget_screens()
    judged = []
    real = choice._judged
    monkeypatch.setattr(choice, "_judged", lambda *a: judged.append(1) or real(*a))
    rng = np.random.default_rng(3)
    t, y = _sine(rng)
    assert periodic_screen(t, y) and periodic_screen(t.copy(), y.copy())
    assert screen_period(t, y) == screen_period(t, y)
    assert len(judged) == 1
    flat = y.copy()
    flat[:] = 1.0
    assert not periodic_screen(t, flat)  # new content, judged
    assert len(judged) == 2
    monkeypatch.setattr(choice, "SCREEN_OVERSAMPLE", 8)  # other settings, judged again
    assert periodic_screen(t, y) and len(judged) == 3
    from gpcore import trace_cache
    before = trace_cache.live_parts()
    for seed in range(4):
        periodic_screen(*_walk(np.random.default_rng(seed)))
    assert trace_cache.live_parts() == before
    assert len(choice._screened) == 3
    choice.forget_screens()
    assert len(choice._screened) == 0


def test_the_screen_does_not_judge_irregular_times():
    """Prewhitening at the index lag needs near-regular steps: a walk on
    random times, or with steps of 1 and 2 in equal share, passes unjudged,
    so its periodic candidates are fitted as before the screen; every
    other point missing is regular again (step 2), and judged."""
    rng = np.random.default_rng(2)
    assert periodic_screen(np.sort(rng.uniform(0, 100, N)), np.cumsum(rng.standard_normal(N)))
    t, y = _walk(rng)
    alternating = np.where(np.arange(N) % 3 == 1, np.nan, y)  # steps 2, 1, 2, 1, ...
    assert periodic_screen(t, alternating)
    assert not periodic_screen(t, np.where(np.arange(N) % 2 == 1, np.nan, y))


def test_the_screen_judges_trading_days_at_their_index():
    """Weekdays only (steps of 1 and 3 days, 4 of 5 single): regular in the
    index, so judged there: walks fail as on regular times (at most 2 of 20
    seeds, as test_the_screen_rejects_walks_and_trends), and a cycle of 6
    per span passes on every seed."""
    days = np.array([d for d in range(2 * N) if d % 7 < 5][:N], dtype=float)
    walks = [periodic_screen(days, _walk(np.random.default_rng(s))[1]) for s in SEEDS]
    assert sum(walks) <= 2, walks
    assert all(periodic_screen(days, _sine(np.random.default_rng(s))[1]) for s in SEEDS)
    # Months (28-31 days) are regular enough to judge in time.
    rng = np.random.default_rng(3)
    days = np.cumsum(np.resize([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], N)).astype(float)
    assert not periodic_screen(days, np.cumsum(rng.standard_normal(N)))


def _fit(kernel, bic, status=OK):
    return FitResult("s", status, kernel, 100, bic=bic)


def test_a_periodic_candidate_must_win_by_the_default_margin():
    assert PERIODIC_MARGIN == 6.0
    fits = [_fit("matern52", 100.0), _fit("matern52+periodic", 100.0 - 0.9 * PERIODIC_MARGIN)]
    assert choose_fit(fits).kernel == "matern52"
    fits[1] = _fit("matern52+periodic", 100.0 - 1.1 * PERIODIC_MARGIN)
    assert choose_fit(fits).kernel == "matern52+periodic"
    # Exactly the margin below is not enough: the simpler fit stays.
    fits[1] = _fit("matern52+periodic", 100.0 - PERIODIC_MARGIN)
    chosen = choose_fit(fits)
    assert (chosen.kernel, chosen.bic_margin) == ("matern52", -PERIODIC_MARGIN)


def test_a_periodic_candidate_must_win_by_the_margin():
    fits = [_fit("rbf", 100.0), _fit("rbf+periodic", 95.0)]
    chosen = choose_fit(fits, margin=10.0)
    assert (chosen.kernel, chosen.bic_margin) == ("rbf", -5.0)
    chosen = choose_fit(fits, margin=0.0)
    assert (chosen.kernel, chosen.bic_margin) == ("rbf+periodic", 5.0)
    # Non-periodic candidates compete on BIC alone, whatever the margin.
    chosen = choose_fit([_fit("rbf", 100.0), _fit("matern12", 99.0)], margin=10.0)
    assert (chosen.kernel, chosen.bic_margin) == ("matern12", 1.0)


def test_choose_fit_without_an_ok_fit_reports_the_first_reason():
    chosen = choose_fit([_fit("rbf", None, SKIPPED), _fit("rbf+periodic", None, SKIPPED)])
    assert (chosen.status, chosen.kernel) == (SKIPPED, "auto")
    # Only periodic fits ok (the non-periodic one failed): the periodic one.
    assert choose_fit([_fit("rbf", None, SKIPPED), _fit("rbf+periodic", 90.0)]).kernel \
        == "rbf+periodic"


def test_the_candidates_order_decides_no_choice():
    """An exact BIC tie went to the candidate listed first, and a series no
    candidate fitted took the first one's reason: --candidates a,b and b,a
    differed there, and the nightly fingerprint held the order, so
    reordering them refitted every series. Both go to the kernel name that
    sorts first."""
    tie = [_fit("matern52", 100.0), _fit("matern12", 100.0), _fit("rbf", 101.0)]
    for fits in (tie, tie[::-1], tie[1:] + tie[:1]):
        chosen = choose_fit(fits)
        assert (chosen.kernel, chosen.bic_margin) == ("matern12", 0.0)
    failed = [dataclasses.replace(_fit("rbf", None, FAILED), error="rbf's reason"),
              dataclasses.replace(_fit("matern12", None, SKIPPED), error="matern12's reason")]
    for fits in (failed, failed[::-1]):
        chosen = choose_fit(fits)
        assert (chosen.kernel, chosen.status, chosen.error) == ("auto", SKIPPED,
                                                                 "matern12's reason")


def test_kernel_choice_fits_periodic_candidates_only_where_the_screen_passes():
    rng = np.random.default_rng(11)
    cyclic = [Series(f"cycle{i}", *_sine(rng, noise=0.3)) for i in range(2)]
    plain = [Series(f"walk{i}", *_walk(rng)) for i in range(3)]
    assert all(periodic_screen(s.t, s.y) for s in cyclic)
    assert not any(periodic_screen(s.t, s.y) for s in plain)
    chooser = KernelChoice(FitConfig(kernel="auto", candidates=("rbf", "rbf+periodic")))
    fits = chooser.fit(cyclic + plain)
    assert [f.series_id for f in fits] == [s.series_id for s in cyclic + plain]
    assert [f.kernel for f in fits] == ["rbf+periodic"] * 2 + ["rbf"] * 3
    # The walks had one candidate: no runner-up.
    assert [f.bic_margin for f in fits[2:]] == [None] * 3
    assert all(f.bic_margin > 0 for f in fits[:2])
    rbf, periodic = chooser.fitters
    assert (rbf.work["members"] > 0, periodic.tracing_count) == (True, 1)
    # The periodic fitter saw the 2 cyclic series only, each from its
    # smooth fit's starts (p, 2p, 3p) and its grid's best point: at most 4
    # members each, where the 3 walks would have added at least 3 more.
    assert periodic.work["members"] <= 2 * (len(START_MULTIPLES) + 1)
    assert chooser.tracing_count == 2


def test_rows_with_a_missing_time_do_not_count_against_the_periodic_limit():
    """A series of 4,096 observations (the periodic candidates' max_points)
    plus 10 rows whose time is missing: those rows are not observations
    (the fit drops them), but their values were counted, 4,106 > 4,096, and
    its periodic candidates were never fitted; without them they were."""
    config = FitConfig(kernel="auto")
    longest = min(c.max_points for c in fitted_configs(config) if c.kernel.has_period)
    t, y = _sine(np.random.default_rng(8), cycles=40.0, n=longest)
    assert fits_periodic(config, Series("s", t, y))
    untimed = Series("s", np.r_[t, np.full(10, np.nan)], np.r_[y, np.ones(10)])
    assert fits_periodic(config, untimed)
    assert not fits_periodic(config, Series("s", np.r_[t, t[-1] + 1.0], np.r_[y, 0.0]))


def test_kernel_choice_skips_a_bad_series_and_fits_the_others():
    """As GPFitter.fit, a bad series comes back skipped with the reason: t
    and y of different lengths, values that are not numbers, or none. Under
    "auto" the periodic screen ran on them first and raised (a broadcast
    ValueError, "could not convert string to float", an IndexError), so no
    series of the call got a result."""
    t = np.arange(40.0)
    bad = [Series("lengths", t, np.sin(t[:30])), Series("strings", t, np.array(["a"] * 40)),
           Series("none", t, None)]
    good = Series("good", *_sine(np.random.default_rng(9)))
    chooser = KernelChoice(FitConfig(kernel="auto", candidates=("rbf", "rbf+periodic")))
    fits = chooser.fit(bad + [good])
    assert [f.status for f in fits] == [SKIPPED] * 3 + [OK]
    assert "t has 40 values but y has 30" in fits[0].error
    assert "y is not numeric" in fits[1].error and "y is not numeric (None)" in fits[2].error


def test_kernel_choice_of_periodic_candidates_only_fits_every_series():
    """No non-periodic candidate to fall back on: the screen is not applied."""
    rng = np.random.default_rng(12)
    walk = Series("walk", *_walk(rng))
    fits = KernelChoice(FitConfig(kernel="auto", candidates=("periodic", "rbf+periodic"))).fit(
        [walk])
    assert fits[0].status == OK and fits[0].kernel in ("periodic", "rbf+periodic")



def test_periodic_starts_are_the_smooth_fit_beside_the_peak_period_and_its_multiples():
    rng = np.random.default_rng(5)
    t, y = _sine(rng, cycles=8.0, noise=0.3)
    smooth = FitResult("s", OK, "rbf", N, mean=0.1, noise_variance=0.09,
                       components=[{"kernel": "rbf", "amplitude": 1.2, "length_scale": 0.4,
                                    "period": None}])
    period = screen_period(t, y)
    assert period == pytest.approx(10.0 / 8.0, rel=0.02)  # the screen's grid: 1/4 cycle steps
    starts = periodic_starts(Series("s", t, y), smooth, "rbf+periodic")
    # p, 2p and 3p are all at most half the span (5).
    assert [s["components"][1]["period"] for s in starts] == [m * period for m in START_MULTIPLES]
    for start in starts:
        assert start["kernel"] == "rbf+periodic"
        assert (start["mean"], start["noise_variance"]) == (0.1, 0.09)
        assert start["components"][0] == smooth.components[0]
        assert start["components"][1]["amplitude"] == 1.2
        assert start["components"][1]["length_scale"] == START_PERIODIC_LENGTH
    # Only multiples up to half the span: 4 cycles leave p and 2p (2.5, 5.0).
    t4, y4 = _sine(rng, cycles=4.0, noise=0.1)
    assert len(periodic_starts(Series("s", t4, y4), smooth, "rbf+periodic")) == 2
    # No smooth fit, or a screen that fails: the fitter's own grid.
    assert periodic_starts(Series("s", t, y), _fit("rbf", None, SKIPPED), "rbf+periodic") is None
    walk_t, walk_y = _walk(rng)
    assert periodic_starts(Series("w", walk_t, walk_y), smooth, "rbf+periodic") is None


def test_a_line_firsts_periodic_start_takes_no_slope_as_its_amplitude():
    """Under a linear-first smooth part (linear+rbf+periodic from
    linear+rbf) the periodic start took the line's amplitude, a slope's
    variance in y^2 per unit of t squared: 86400^2 times smaller with t in
    seconds than in days. It takes the first stationary part's amplitude,
    or with the line alone its noise variance: the same in either unit."""
    rng = np.random.default_rng(7)
    t, y = _sine(rng, cycles=8.0, noise=0.3)
    per_day = 86400.0
    starts = {}
    for unit, scale in (("days", 1.0), ("seconds", per_day)):
        line = {"kernel": "linear", "amplitude": 0.01 / scale ** 2, "length_scale": None,
                "period": None}
        rbf = {"kernel": "rbf", "amplitude": 1.2, "length_scale": 0.4 * scale, "period": None}
        both = FitResult("s", OK, "linear+rbf", N, mean=0.1, noise_variance=0.09,
                         components=[line, rbf])
        alone = FitResult("s", OK, "linear", N, mean=0.1, noise_variance=0.5,
                          components=[line])
        series = Series("s", t * scale, y)
        starts[unit] = ([s["components"][2]["amplitude"]
                         for s in periodic_starts(series, both, "linear+rbf+periodic")],
                        [s["components"][1]["amplitude"]
                         for s in periodic_starts(series, alone, "linear+periodic")])
    assert starts["days"] == starts["seconds"]
    assert set(starts["days"][0]) == {1.2} and set(starts["days"][1]) == {0.5}


def test_kernel_choice_finds_a_cycle_whose_top_peak_is_its_second_harmonic():
    """A cycle whose second harmonic is twice as strong as its fundamental:
    the screen's peak is half the period, the start at 2p finds the
    period; the periodic candidate starts from the smooth fit and its
    grid's best point (no restarts), one trace."""
    rng = np.random.default_rng(8)
    t = np.linspace(0.0, 12.0, 144)
    period = 2.0
    phase = 2 * np.pi * t / period
    y = 0.5 * np.sin(phase) + np.sin(2 * phase + 1.0) + 0.2 * rng.standard_normal(t.size)
    assert screen_period(t, y) == pytest.approx(period / 2, rel=0.05)
    chooser = KernelChoice(FitConfig(kernel="auto", candidates=("rbf", "rbf+periodic")))
    fit, = chooser.fit([Series("harmonic", t, y)])
    assert fit.kernel == "rbf+periodic"
    assert fit.components[1]["period"] == pytest.approx(period, rel=0.02)
    periodic = chooser.fitters[1]
    # Starts at p, 2p, 3p (<= 6, half the span) and the grid's best point,
    # none of its restarts.
    assert periodic.work["members"] == 3 + 1
    assert chooser.tracing_count == 2


def test_auto_runs_its_started_candidate_without_the_jumps():
    """The periodic candidate started from its smooth part's fit (p, 2p, 3p
    among its starts) skips the sums' jumps; a sum fitted alone, or a
    periodic candidate with no smooth candidate to start from, keeps them,
    and an explicit setting holds for every candidate."""
    from gpcore.config import fitted_configs, is_started
    from gpcore.kernels import kernel as kernel_named

    assert FitConfig(kernel="rbf+periodic").jumps is True
    auto = FitConfig(kernel="auto")
    by_kernel = {c.kernel_name: c.jumps for c in fitted_configs(auto)}
    assert by_kernel == {"matern52": True, "matern12": True, "matern52+periodic": False}
    assert is_started(kernel_named("matern52+periodic"), auto.candidates)
    lone = FitConfig(kernel="auto", candidates=("matern12", "rbf+periodic"))
    assert [c.jumps for c in fitted_configs(lone)] == [True, True]
    forced = FitConfig(kernel="auto", jumps=True)
    assert all(c.jumps for c in fitted_configs(forced))
    chooser = KernelChoice(auto)
    assert [f.config.jumps for f in chooser.fitters] == [True, True, False]


def test_auto_stops_its_started_candidates_starts_that_fall_behind():
    """Only the started candidate stops its starts that fall behind
    (FitConfig.stop_behind); a kernel fitted alone never does, and an
    explicit setting holds for every candidate."""
    from gpcore.config import STARTED_STOP_BEHIND, fitted_configs

    assert STARTED_STOP_BEHIND > 0
    assert FitConfig(kernel="rbf+periodic").stop_behind == FitConfig().stop_behind == 0.0
    by_kernel = {c.kernel_name: c.stop_behind for c in fitted_configs(FitConfig(kernel="auto"))}
    assert by_kernel == {"matern52": 0.0, "matern12": 0.0,
                         "matern52+periodic": STARTED_STOP_BEHIND}
    lone = FitConfig(kernel="auto", candidates=("matern12", "rbf+periodic"))
    assert [c.stop_behind for c in fitted_configs(lone)] == [0.0, 0.0]
    forced = FitConfig(kernel="auto", stop_behind=0.0)
    assert [c.stop_behind for c in fitted_configs(forced)] == [0.0] * 3
    with pytest.raises(ValueError, match="stop_behind"):
        FitConfig(stop_behind=-1.0)


def test_auto_fits_its_candidates_without_the_far_probes():
    """Under auto every candidate fits without the far probes
    (FitConfig.far_probes, config.AUTO_FAR_PROBES); a kernel fitted alone
    keeps them, and an explicit setting holds for every candidate."""
    from gpcore.config import AUTO_FAR_PROBES, fitted_configs

    assert AUTO_FAR_PROBES is False
    assert FitConfig().far_probes is True and FitConfig(kernel="matern12").far_probes is True
    assert FitConfig(kernel="auto").far_probes is None
    assert [c.far_probes for c in fitted_configs(FitConfig(kernel="auto"))] == [False] * 3
    forced = FitConfig(kernel="auto", far_probes=True)
    assert [c.far_probes for c in fitted_configs(forced)] == [True] * 3
    with pytest.raises(ValueError, match="far_probes must be True, False or None"):
        FitConfig(far_probes="no")


def test_the_started_candidate_fits_few_series_per_call():
    """Its batches carry about four members a series of a sum's matrices:
    at most STARTED_BATCH_SIZE series a compiled call, or the caller's
    smaller batch_size; the other candidates keep the caller's."""
    from gpcore.config import STARTED_BATCH_SIZE, fitted_configs

    assert STARTED_BATCH_SIZE < FitConfig().batch_size
    sizes = [c.batch_size for c in fitted_configs(FitConfig(kernel="auto"))]
    assert sizes == [16, 16, STARTED_BATCH_SIZE]
    assert [c.batch_size for c in fitted_configs(FitConfig(kernel="auto", batch_size=1))] == [1] * 3
    loose = FitConfig(kernel="auto", candidates=("rbf", "matern52+periodic"))
    assert [c.batch_size for c in fitted_configs(loose)] == [16, 16]  # not started
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 10, 60))
    cycles = [Series(f"s{i}", t, np.sin(2 * np.pi * t / 2.5) + 0.1 * rng.normal(size=t.size))
              for i in range(5)]
    chooser = KernelChoice(FitConfig(kernel="auto"))
    chooser.fit(cycles)
    periodic = chooser.fitters[-1]
    assert periodic.work["batches"] == -(-len(cycles) // STARTED_BATCH_SIZE)


def test_without_the_jumps_a_cycle_taken_at_a_third_of_its_period_stays_there():
    """The switch is real: on an ExpSineSquared draw with a short length
    scale (6.2 cycles; benchmarks/heldout_seasonal.py) a sum fitted from
    its grid without the jumps settles at a third of the period, and with
    them reaches it, over 5 nats lower (docs/design.md, "Sums of
    kernels")."""
    import heldout_seasonal
    from gpcore import GPFitter

    case = next(c for c in heldout_seasonal.cases()
                if c.series.series_id == "heldout/seasonal/28/expsinsq_short+walk/regular")
    fits = {jumps: GPFitter(FitConfig(kernel="rbf+periodic", jumps=jumps)).fit([case.series])[0]
            for jumps in (True, False)}
    period = lambda r: r.components[1]["period"]
    assert period(fits[True]) == pytest.approx(case.period, rel=0.1)
    assert period(fits[False]) == pytest.approx(case.period / 3, rel=0.1)
    assert fits[True].nll < fits[False].nll - 5.0


def test_length_groups_keep_each_compiled_batch_within_its_work_ratio():
    """Every index once, shortest first; within a group the longest padded
    length cubed is at most GROUP_WORK_RATIO x the shortest's, and a new
    group starts only where the next series would break that."""
    from gpcore.batching import padded_length
    from gpcore.choice import GROUP_WORK_RATIO, length_groups

    lengths = [240, 54, 76, 240, 128, 130, 186, 177, 12, 240, 195]
    groups = length_groups(lengths)
    assert sorted(k for g in groups for k in g) == list(range(len(lengths)))
    flat = [lengths[k] for g in groups for k in g]
    assert flat == sorted(lengths)
    work = lambda k: padded_length(lengths[k]) ** 3
    for g in groups:
        assert max(map(work, g)) <= GROUP_WORK_RATIO * min(map(work, g))
    for before, after in zip(groups, groups[1:]):
        assert work(after[0]) > GROUP_WORK_RATIO * work(before[0])
    assert [[lengths[k] for k in g] for g in groups][-1] == [240, 240, 240]
    assert length_groups([]) == []
