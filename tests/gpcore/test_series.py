"""Cleaning a series before a fit: what is kept, and why a series is skipped."""
import numpy as np
import pytest

from gpcore.series import Series, clean


def test_sorts_and_drops_missing_points_keeping_repeated_times():
    t = np.array([3.0, 1.0, 2.0, 2.0, np.nan, 5.0])
    y = np.array([30.0, 10.0, 20.0, 21.0, 1.0, np.inf])
    cleaned, n, reason = clean(Series("s", t, y), min_points=3, max_points=10)
    assert reason is None and n == 4 and cleaned.n_points == 4
    np.testing.assert_array_equal(cleaned.t, [1.0, 2.0, 2.0, 3.0])
    np.testing.assert_array_equal(cleaned.y, [10.0, 20.0, 21.0, 30.0])  # stable for repeats


@pytest.mark.parametrize("t, y, words", [
    (np.arange(3.0), np.ones(4), "t has 3 values but y has 4"),
    (np.arange(4.0), np.array([1.0, np.nan, np.nan, 2.0]), "too few finite points: 2 (of 4); "),
    # Missing times said so: a time column of nulls (a failed parse) read
    # as "too few finite points: 0 (of 4)" beside values all present.
    (np.full(4, np.nan), np.arange(4.0), "too few finite points: 0 (of 4; 4 without a finite "
     "time); "),
    (np.array([0.0, np.inf, np.nan, 3.0]), np.array([1.0, 2.0, 3.0, np.nan]),
     "too few finite points: 1 (of 4; 2 without a finite time); "),
    (np.arange(20.0), np.arange(20.0), "more than max_points=10"),
    (np.full(5, 7.0), np.arange(5.0), "all observation times are equal"),
    (1e15 + np.arange(5.0), np.arange(5.0), "subtract an offset"),
    (np.arange(5.0), np.full(5, 2.5), "all 5 values are equal (2.5); nothing to fit"),
    # int64 values of 2^62 +- 100 are one float64: "all equal" alone named
    # values the file does not hold.
    (np.arange(5.0), np.full(5, 2.0**62), "all 5 values are equal (4.61169e+18 as float64, "
     "which resolves only steps of 1024 there); nothing to fit: if they differ by less, give "
     "y from an offset (e.g. less the series' first value)"),
    (np.arange(5.0), 1e200 * np.arange(5.0), "rescale the series"),
    # One missing-value code among ordinary values: named, and what to do.
    (np.arange(5.0), np.array([0.3, 1.2, 9.9e300, 0.7, 1.1]),
     "(largest |y| 9.9e+300) is outside [1e-150, 1e+150], where their variance would "
     "overflow or underflow; rescale the series, or give NaN where a value is a code for a "
     "missing one"),
    (np.arange("2026-01-01", "2026-01-06", dtype="datetime64[D]"), np.arange(5.0),
     "t is not numeric (dtype datetime64[D])"),
    (np.arange(5.0), np.array(["a", "b", "c", "d", "e"]), "y is not numeric"),
    # Two series' rows were one series of both, their times repeated.
    (np.tile(np.arange(5.0), (2, 1)), np.arange(10.0).reshape(2, 5),
     "t has shape (2, 5); give a vector [n], one Series per series"),
    (np.arange(10.0), np.arange(10.0).reshape(5, 2), "y has shape (5, 2)"),
    (np.arange(5.0), None, "y is not numeric (None)"),  # was "y has 1"
])
def test_unfittable_series_say_why(t, y, words):
    cleaned, _, reason = clean(Series("s", t, y), min_points=3, max_points=10)
    assert cleaned is None and words in reason


def test_a_row_or_a_column_is_a_vector():
    cleaned, _, reason = clean(Series("s", np.arange(5.0)[:, None], np.arange(5.0)[None, :]),
                               min_points=3, max_points=10)
    assert reason is None and cleaned.t.shape == cleaned.y.shape == (5,)


def test_object_arrays_of_numbers_are_accepted():
    cleaned, n, reason = clean(Series("s", np.array([0, 1, 2], dtype=object),
                                      np.array([1.0, 2.0, None], dtype=object)), 2, 10)
    assert reason is None and n == 2


def test_max_points_points_are_fitted_and_one_more_is_not():
    t = np.arange(11.0)
    y = np.sin(t)
    cleaned, n, reason = clean(Series("s", t[:10], y[:10]), min_points=3, max_points=10)
    assert reason is None and n == cleaned.n_points == 10
    cleaned, n, reason = clean(Series("s", t, y), min_points=3, max_points=10)
    assert cleaned is None and n == 11 and "11 finite points is more than max_points=10" in reason


def test_many_repeated_times_keep_their_input_order():
    # Past 16 elements numpy's default sort is not stable: 20 pairs of
    # repeated times, values in input order within each.
    t = np.repeat(np.arange(20.0), 2)[::-1].copy()
    y = np.arange(40.0)
    cleaned, _, reason = clean(Series("s", t, y), min_points=3, max_points=100)
    assert reason is None
    np.testing.assert_array_equal(cleaned.t, np.repeat(np.arange(20.0), 2))
    np.testing.assert_array_equal(cleaned.y, np.ravel([[38 - 2 * i, 39 - 2 * i]
                                                       for i in range(20)]))


def test_a_pandas_row_of_the_output_is_a_warm_start():
    pd = pytest.importorskip("pandas")
    row = pd.Series({"kernel": "rbf", "mean": 1.0, "amplitude": 2.0, "length_scale": 3.0,
                     "noise_variance": 0.1})
    cleaned, _, reason = clean(Series("s", np.arange(5.0), np.sin(np.arange(5.0)), row),
                               min_points=3, max_points=10)
    assert reason is None and cleaned.warm_start == row.to_dict()


@pytest.mark.parametrize("t", [
    np.array([0.0, 5e-324, 1e-323, 1.5e-323]),   # subnormal: 1 to 2 bits of precision
    np.linspace(0.0, 1e-306, 6),                  # normal, but a thousandth of it is not
])
def test_times_whose_span_float64_cannot_scale_are_skipped_saying_so(t):
    """On t = [0, 5e-324, 1e-323, 1.5e-323] a matern52 fit was "ok" with
    length_scale 0.0, which predict refused; at span 1e-306 "ok" with a
    subnormal length scale (1.6e-308) whose covariances predict could not
    form (sqrt(5) / l is inf)."""
    from gpcore import FitConfig, build_fitter

    y = np.array([0.3, -1.0, 0.8, 0.1, 1.2, -0.4])[:t.size]
    cleaned, n, reason = clean(Series("tiny", t, y), min_points=3, max_points=10)
    assert cleaned is None and n == t.size
    assert reason.startswith(f"the times span {np.ptp(t):.3g}, too little for float64")
    assert "rescale t (change its units)" in reason
    fit = build_fitter(FitConfig(kernel="matern52")).fit([Series("tiny", t, y)])[0]
    assert (fit.status, fit.error) == ("skipped", reason)


def test_times_at_the_smallest_span_float64_scales_are_fitted():
    """The bound is the span's: a thousandth of it (the fit's shortest
    length scale) stays a normal float64; span 1e-300 fits as before."""
    t = np.linspace(0.0, 1e-300, 6)
    cleaned, _, reason = clean(Series("s", t, np.sin(t * 1e300)), min_points=3, max_points=10)
    assert reason is None and cleaned.n_points == 6


def test_times_whose_median_spacing_float64_cannot_scale_are_skipped_saying_so():
    """Span 2e-300, but 8 of the 10 times 1e-312 apart: the fits were "ok"
    with length scales of 1e-312 (subnormal: matern52 1.7e-312, matern12,
    rbf), whose covariances predict could not form."""
    from gpcore import FitConfig, build_fitter

    t = np.r_[np.arange(8) * 1e-312, 1e-300, 2e-300]
    series = Series("irregular", t, np.r_[np.sin(np.arange(8.0)), 0.5, -0.2])
    cleaned, n, reason = clean(series, min_points=3, max_points=20)
    assert cleaned is None and n == 10
    assert reason.startswith("the times' median spacing 1e-312 is too little for float64")
    assert "rescale t (change its units)" in reason
    fit = build_fitter(FitConfig(kernel="matern52")).fit([series])[0]
    assert (fit.status, fit.error) == ("skipped", reason)


@pytest.mark.parametrize("t, y, said", [
    (np.datetime64("2024-01-01") + np.arange(6).astype("timedelta64[D]"), np.arange(6.0),
     r"t is not numeric \(dtype datetime64\[D\]\); convert times to numbers, e.g. days since an "
     r"epoch: days since 1970-01-01 UTC for a row gpfit fitted on dates"),
    (np.zeros((2, 3)), np.zeros((2, 3)), r"t has shape \(2, 3\); give a vector"),
    (np.arange(5.0), np.arange(4.0), "t has 5 values but y has 4; give one time per value"),
])
def test_the_holdout_cut_and_its_centre_take_times_by_predicts_rule(t, y, said):
    """split and fitted_centre, README's recipe for the centre of a row
    fitted under --holdout, read datetime64 times as microseconds (or
    days) since 1970 without a word, a centre predict's times in days do
    not share, where predict refuses them; t and y of two dimensions or of
    other lengths raised a bare IndexError or numpy's broadcast error."""
    from gpcore.predict import fitted_centre
    from gpcore.series import split

    for call in (lambda s: split(s, 2), fitted_centre):
        with pytest.raises(ValueError, match=rf"^series 'a': {said}"):
            call(Series("a", t, y))


@pytest.mark.parametrize("given", [(np.arange(4.0), np.arange(4.0)),
                                   {"series_id": "a", "t": np.arange(4.0)}])
def test_the_holdout_cut_and_its_centre_refuse_what_is_not_a_series(given):
    """A tuple (t, y) or a dict given to split or fitted_centre raised
    AttributeError ("'tuple' object has no attribute 'series_id'"), where
    predict says what to give."""
    from gpcore.predict import fitted_centre
    from gpcore.series import split

    for call in (lambda s: split(s, 2), fitted_centre):
        with pytest.raises(ValueError, match=r"^series must be a gpcore\.Series; got a "
                                             rf"{type(given).__name__}: give Series\("):
            call(given)


def test_the_holdout_cut_takes_a_whole_float_and_refuses_other_counts():
    """split(series, 5.0), holdout_points as pandas reads an int column
    holding nulls, raised a bare TypeError (slice indices must be
    integers); it cuts as 5 does. A count that is no whole number of
    points >= 0 is refused, naming k."""
    from gpcore.series import split

    series = Series("a", np.arange(8.0), np.arange(8.0) ** 2)
    assert split(series, np.float64(5.0)).t_held.tolist() == split(series, 5).t_held.tolist()
    assert split(series, 5.0).fitted.t.tolist() == [0.0, 1.0, 2.0]
    for k in (2.5, -1, float("nan"), "5", True, None):
        with pytest.raises(ValueError, match=r"^k must be a whole number of points >= 0 "
                                             r"\(holdout_points\); got "):
            split(series, k)
