"""The posterior curve and the plot titles made from a params row."""
import numpy as np

from gpcore.predict import predict
from gpcore.series import Series
from pipeline.report.build import GRID_MAX, GRID_MIN, component_parts, posterior_curve, title
from gpcore.predict import component_means
from report_helpers import params_row
from seasonal_data import seasonal_series

SEASONAL = {"rbf": (1.2, 400.0, None), "periodic": (2.0, 0.9, 365.25)}


def seasonal_row(series_id="season-0", **values):
    """An rbf+periodic row as gpcore writes it: components, flat parameters null."""
    components = [{"kernel": k, "amplitude": a, "length_scale": l, "period": p}
                  for k, (a, l, p) in SEASONAL.items()]
    return params_row(series_id, kernel="rbf+periodic", amplitude=None, length_scale=None,
                      mean=10.0, noise_variance=0.04, components=components, **values)


def test_curve_covers_the_data_with_a_margin_and_is_the_posterior():
    t = np.linspace(10.0, 30.0, 25)
    series = Series("a", t, np.sin(t))
    row = params_row("a", length_scale=0.01, noise_variance=0.04)
    curve = posterior_curve(series, row)
    assert curve.t[0] == 9.0 and curve.t[-1] == 31.0  # 5% of the span either side
    assert curve.t.size == GRID_MAX  # a short length scale needs the finest grid
    mean, std = predict(series, row, curve.t)
    np.testing.assert_array_equal(curve.mean, mean)
    np.testing.assert_allclose(curve.std_y, np.sqrt(std ** 2 + 0.04), rtol=1e-12)
    wide = params_row("a", length_scale=100.0, noise_variance=0.04)
    assert posterior_curve(series, wide).t.size == GRID_MIN


def test_title_names_the_parameters():
    row = params_row("a", kernel="periodic", period=7.25, noise_variance=0.25, nll=45.0,
                     n_points=30, converged=False, stop_reason="max_iterations", at_bound=True,
                     iterations=100)
    head, tail = title(row).split("\n")
    assert head.startswith("a · periodic") and "period 7.25" in head and "(sd 0.5)" in head
    assert "nll 45 (1.5 per point)" in tail
    assert "NOT converged (max_iterations) at a bound after 100" in tail
    skipped = params_row("b", status="skipped", n_points=2, error="few")
    assert title(skipped) == "b · rbf · skipped, 2 finite points"


def test_title_shows_a_mean_on_a_large_offset_to_the_series_spread():
    """y + 1e9 titled every plot "mean 1e+09": 4 digits of the mean's own
    size. The mean is shown to 4 digits of the series' spread instead
    (sqrt(noise_variance + amplitude^2)); a mean within its spread reads as
    before."""
    row = params_row("a", mean=1e9 + 2e-4, amplitude=1e-3, noise_variance=1e-8)
    assert "mean 1000000000.0002 ·" in title(row)
    assert "mean 0.5 ·" in title(params_row("a", mean=0.5))
    assert "mean -1234.4 ·" in title(params_row("a", mean=-1234.4, amplitude=1.0))


def test_title_of_a_sum_has_a_line_for_its_components():
    head, parts, tail = title(seasonal_row(bic=123.4, bic_margin=17.25)).split("\n")
    assert head.startswith("season-0 · rbf+periodic · mean 10 · noise_variance 0.04")
    assert parts == ("rbf: amplitude 1.2, length_scale 400 · "
                     "periodic: amplitude 2, length_scale 0.9, period 365.2")
    assert "bic 123.4, 17.25 below the runner-up" in tail


def test_components_are_each_parts_posterior_and_add_up_to_predict():
    """component_means against numpy (K_c(t*, t) A^-1 (y - mean), written
    out here) and, summed, against gpcore.predict's mean."""
    t, y = seasonal_series()["season-1"]
    series = Series("season-1", t, y)
    row = seasonal_row()
    t_new = np.linspace(t[0] - 30, t[-1] + 30, 200)
    means = component_means(series, row, t_new)
    keep = np.isfinite(y)

    def cov(c, t1, t2):
        d = np.abs(t1[:, None] - t2[None, :])
        if c["kernel"] == "rbf":
            return c["amplitude"] ** 2 * np.exp(-0.5 * (d / c["length_scale"]) ** 2)
        return c["amplitude"] ** 2 * np.exp(
            -2 * np.sin(np.pi * d / c["period"]) ** 2 / c["length_scale"] ** 2)

    a = sum(cov(c, t[keep], t[keep]) for c in row["components"]) + 0.04 * np.eye(keep.sum())
    alpha = np.linalg.solve(a, y[keep] - 10.0)
    for c, mean in zip(row["components"], means, strict=True):
        np.testing.assert_allclose(mean, cov(c, t_new, t[keep]) @ alpha, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(sum(means), predict(series, row, t_new)[0] - 10.0,
                               rtol=1e-9, atol=1e-9)
    parts = component_parts(series, row, t_new)
    assert [p.label for p in parts] == ["rbf: amplitude 1.2, length_scale 400",
                                        "periodic: amplitude 2, length_scale 0.9, period 365.2"]


def test_a_single_kernel_has_no_parts_but_its_one_component_is_the_posterior():
    t = np.linspace(0.0, 20.0, 30)
    series = Series("a", t, np.sin(t))
    row = params_row("a", mean=0.5)
    assert component_parts(series, row, t) == []
    (mean,) = component_means(series, row, t)
    np.testing.assert_allclose(mean, predict(series, row, t)[0] - 0.5, rtol=1e-10, atol=1e-12)


def test_a_line_plus_a_wiggle_is_drawn_and_titled():
    """linear+rbf: the line (a slope's amplitude, no length scale) and the
    wiggle each drawn, adding up to predict's mean; the grid is set by
    the rbf part, and a line alone takes the coarsest grid."""
    t, y = seasonal_series()["season-2"]
    series = Series("season-2", t, y)
    components = [{"kernel": "linear", "amplitude": 0.002, "length_scale": None, "period": None},
                  {"kernel": "rbf", "amplitude": 1.5, "length_scale": 10.0, "period": None}]
    row = params_row("season-2", kernel="linear+rbf", amplitude=None, length_scale=None,
                     mean=10.0, noise_variance=0.04, components=components)
    assert title(row).split("\n")[1] == ("linear: amplitude 0.002 · "
                                         "rbf: amplitude 1.5, length_scale 10")
    curve = posterior_curve(series, row)
    assert GRID_MIN < curve.t.size < GRID_MAX
    parts = component_parts(series, row, curve.t)
    assert [p.label for p in parts] == ["linear: amplitude 0.002", "rbf: amplitude 1.5, "
                                        "length_scale 10"]
    np.testing.assert_allclose(sum(p.mean for p in parts), curve.mean - 10.0, atol=1e-9)
    line = parts[0].mean
    np.testing.assert_allclose(np.diff(line) / np.diff(curve.t), (line[-1] - line[0])
                               / (curve.t[-1] - curve.t[0]), rtol=1e-6)  # straight
    alone = params_row("season-2", kernel="linear", amplitude=0.002, length_scale=None)
    assert posterior_curve(series, alone).t.size == GRID_MIN


def test_a_line_fitted_without_its_held_out_points_is_drawn_with_the_fits_centre():
    """Under --holdout a row's parameters are those of the points before its
    last holdout_points, and `linear`'s centre c the midpoint of those
    (docs/design.md, "The centre c of `linear`"): the curve through all the
    points is that model's posterior, as the forecast rows are. Checked
    against numpy (Rasmussen & Williams eq. 2.23-2.24; float64 round-off
    on 60 well-conditioned points); the midpoint of all 60 drew the curve
    up to 1.1 off."""
    rng = np.random.default_rng(5)
    t = np.arange(60.0)
    y = 2.0 + 0.3 * t + 0.3 * rng.standard_normal(t.size)
    series = Series("trend", t, y)
    components = [{"kernel": "linear", "amplitude": 0.3, "length_scale": None, "period": None},
                  {"kernel": "rbf", "amplitude": 0.2, "length_scale": 5.0, "period": None}]
    row = params_row("trend", kernel="linear+rbf", amplitude=None, length_scale=None,
                     mean=9.05, noise_variance=0.09, components=components, holdout_points=12)
    curve = posterior_curve(series, row)
    centre, (line, wiggle) = 0.5 * (t[0] + t[47]), components

    def cov(t1, t2, c):
        if c["kernel"] == "linear":
            return c["amplitude"] ** 2 * np.outer(t1 - centre, t2 - centre)
        return c["amplitude"] ** 2 * np.exp(-0.5 * ((t1[:, None] - t2) / c["length_scale"]) ** 2)

    a = cov(t, t, line) + cov(t, t, wiggle) + 0.09 * np.eye(t.size)
    alpha = np.linalg.solve(a, y - 9.05)
    parts = [cov(curve.t, t, c) @ alpha for c in components]
    np.testing.assert_allclose(curve.mean, 9.05 + sum(parts), rtol=1e-9, atol=1e-9)
    cross = cov(curve.t, t, line) + cov(curve.t, t, wiggle)
    var = (line["amplitude"] ** 2 * (curve.t - centre) ** 2 + wiggle["amplitude"] ** 2
           - np.einsum("mn,nm->m", cross, np.linalg.solve(a, cross.T)))
    np.testing.assert_allclose(curve.std_f, np.sqrt(var), rtol=1e-7, atol=1e-9)
    for part, want in zip(component_parts(series, row, curve.t), parts, strict=True):
        np.testing.assert_allclose(part.mean, want, rtol=1e-9, atol=1e-9)


def test_under_log_the_line_is_a_median_and_the_parts_add_up_on_the_log_scale():
    """--transform log: the curve is exp() of the log-scale posterior, its
    median, and so labelled; the components stay on the log scale, where
    they add up (not to the curve drawn on y's scale), and say so."""
    from pipeline.io import scales

    t, y = seasonal_series()["season-1"]
    fitted = scales.transformed(scales.LOG, Series("season-1", t, np.exp(y)))
    row = seasonal_row()
    curve = posterior_curve(fitted, row, scales.LOG)
    mean, _ = predict(fitted, row, curve.t)
    np.testing.assert_allclose(curve.mean, np.exp(mean), rtol=1e-12)  # the median of y
    assert curve.centre == "median"
    assert posterior_curve(fitted, row).centre == "mean"  # untransformed
    parts = component_parts(fitted, row, curve.t, scales.LOG)
    assert [p.label.split(":")[0] for p in parts] == ["rbf of log(y)", "periodic of log(y)"]
    # Round-off of one solve and a sum, as in the test above.
    np.testing.assert_allclose(sum(p.mean for p in parts), mean - 10.0, rtol=1e-9, atol=1e-9)


def test_under_log_the_title_names_the_scale_its_parameters_are_of():
    """--transform log fits log(y): a row's mean, amplitudes and
    noise_variance are of log(y) (README, "Positive data"), but the title
    read "rbf+periodic · mean 10" as if of y, beside a median drawn on y's
    scale. The kernel now names the scale, as the parts' labels do."""
    from pipeline.io import scales

    row = seasonal_row()
    head = title(row, scales.LOG).split("\n")[0]
    assert head.startswith("season-0 · rbf+periodic of log(y) · mean 10 ·")
    assert title(row, scales.LOG1P).split("\n")[0].startswith(
        "season-0 · rbf+periodic of log(1 + y) · mean 10 ·")
    assert title(row).startswith("season-0 · rbf+periodic · mean 10 ·")  # untransformed
    skipped = params_row("b", status="skipped", n_points=2, error="few")
    assert title(skipped, scales.LOG) == "b · rbf · skipped, 2 finite points"  # nothing fitted


def _title_reaches_the_right_edge(png: bytes) -> bool:
    """Whether dark (text) pixels touch the image's last 6 columns above
    the axes, where the title is: a title line drawn past the edge."""
    import io

    from PIL import Image
    with Image.open(io.BytesIO(png)) as image:
        grey = np.asarray(image.convert("L"))
    return bool((grey[:60, -6:] < 128).any())


def test_a_plot_title_keeps_every_parameter_inside_the_image():
    """The title's first line ran off the 800-pixel image: a periodic fit's
    "(sd ...)" with a 9-character id, noise_variance and more with a
    45-character one. Its lines now wrap within the image."""
    from pipeline.report.plots import series_png
    t = np.linspace(0.0, 30.0, 25)
    for series_id in ("demo-0001", "store=0042/sku=ABCDEFGH-1234/region=eu-west"):
        row = params_row(series_id, kernel="periodic", mean=-0.012345, amplitude=1.2345,
                         length_scale=0.91234, period=365.25, noise_variance=0.012345,
                         nll=-123.45)
        assert not _title_reaches_the_right_edge(series_png(t, np.sin(t), None, title(row)))


def test_a_plot_title_shows_a_long_or_unprintable_id_short_and_escaped():
    """A 1 MB id was drawn whole: 3 minutes for its one plot, matplotlib's
    "Tight layout not applied" warning on stderr, and neither the parameters
    nor the legend on the image; a newline in an id split the title line.
    The card's heading shows the id whole; the title cuts it to ID_CHARS
    (its end kept) and shows what does not print as Python escapes it."""
    from pipeline.io.errors import ID_CHARS
    head = title(params_row("x" * 10 ** 6 + "-tail")).split("\n")[0]
    shown = head.split(" · ")[0]
    assert len(shown) == ID_CHARS and shown.endswith("x…" + "x" * 10 + "-tail")
    assert title(params_row("new\nline\x00\u202e")).startswith("new\\nline\\x00\\u202e · rbf · ")
    assert len(title(params_row("new\nline")).split("\n")) == 2


def test_histogram_titles_of_a_sum_of_three_kernels_stay_apart_and_inside():
    """A parameter of matern52+matern52+periodic is titled in 56 characters
    ("length_scale (matern52 #2 in matern52+matern52+periodic)"): the
    titles ran into each other and off the image's edges. They wrap now:
    each title lies inside the figure, and no two overlap."""
    from pipeline.report.plots import histograms_figure
    from pipeline.report.summary import Histogram

    kernel = "matern52+matern52+periodic"
    names = ["mean", *(f"{p} ({part} in {kernel})" for part, params in (
        ("matern52 #1", ("amplitude", "length_scale")),
        ("matern52 #2", ("amplitude", "length_scale")),
        ("periodic", ("amplitude", "length_scale", "period"))) for p in params),
        "noise_variance", "nll per point", "n_points"]
    hists = [Histogram(name, np.array([1.0, 2.0, 4.0]), np.array([1, 2]), i % 2 == 1, 0)
             for i, name in enumerate(names)]
    fig = histograms_figure(hists)
    renderer = fig.canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_visible()]
    assert len(boxes) == len(names)
    width, height = fig.bbox.width, fig.bbox.height
    for box in boxes:
        assert 0 <= box.x0 and box.x1 <= width and 0 <= box.y0 and box.y1 <= height, box
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1:]), (names[i], a)
