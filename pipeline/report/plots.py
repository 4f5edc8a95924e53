"""Figures as PNG bytes: parameter histograms and one series' posterior.

Drawn on matplotlib's Agg canvas through the object API (no pyplot): no
display is needed and no global figure state is shared.
"""
from __future__ import annotations

import dataclasses
import functools
import io
import textwrap
import warnings
from typing import Optional, Sequence

import numpy as np
from matplotlib import dates as mdates
from matplotlib import rc_context, ticker
from PIL import Image  # a dependency of matplotlib itself
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pipeline.report.summary import Histogram

DPI = 100
SERIES_SIZE = (8.0, 3.6)  # inches: 800 x 360 pixels
PARTS_HEIGHT = 2.0  # inches more for a sum's panel of components
HIST_PANEL = (3.2, 2.3)  # inches per histogram
# A histogram's title is wrapped to this many characters a line: at 8.5
# points about 40 fit above a panel, and a parameter of a sum of three
# kernels is named in 56 ("length_scale (matern52 #2 in
# matern52+matern52+periodic)"), which ran into its neighbours' titles.
HIST_TITLE_CHARS = 40
DATA_COLOR, FIT_COLOR, FORECAST_COLOR = "#222222", "#1f63b4", "#d9730d"
HOLDOUT_COLOR = "#b0178a"
PART_COLORS = ("#c0392b", "#27864a", "#8e44ad", "#d4820f")
MARGIN = 0.05  # matplotlib's axes.xmargin: the axis beyond the data, of its span
HUGE = 1e300  # beyond this, a linear axis is given its ticks (_x_limits)
# Observed values beyond this are not drawn, and the legend says so:
# values near float64's largest (missing-value codes, 1.79e308, among
# held-out points or a skipped series' data) made the axis' margin inf, and
# the plot failed ('arange: cannot compute length') or was drawn blank.
DRAWN_MAX = 1e307


# Series ids in any script: matplotlib tries these fonts in turn for each
# glyph; only installed ones are named (an absent one is a warning). With
# none that has a glyph it draws a box, without a warning per glyph: the
# page's HTML headings show every id as it is (docs/design.md, "Runners
# and quiet runs").
FONTS = ("DejaVu Sans", "Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK KR",
         "WenQuanYi Zen Hei", "Droid Sans Fallback", "Noto Sans", "Noto Sans Arabic",
         "Noto Sans Devanagari", "Noto Sans Thai", "Noto Sans Hebrew")


@functools.lru_cache(maxsize=1)
def installed_fonts() -> tuple[str, ...]:
    """The FONTS matplotlib finds here, in order."""
    from matplotlib import font_manager
    names = {font.name for font in font_manager.fontManager.ttflist}
    return tuple(name for name in FONTS if name in names) or ("DejaVu Sans",)


def _any_script(draw):
    """Runs a figure function with FONTS as the font family (read when its
    texts are made) and without matplotlib's warning per missing glyph, nor
    numpy's where matplotlib's ticks pass float64's range for values near
    it (its locators drop those ticks)."""
    @functools.wraps(draw)
    def drawn(*args, **kwargs):
        with warnings.catch_warnings(), rc_context({"font.family": list(installed_fonts())}), \
                np.errstate(over="ignore", under="ignore", invalid="ignore"):
            warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font")
            return draw(*args, **kwargs)
    return drawn


@dataclasses.dataclass
class Curve:
    """The posterior at a grid of times.

    Attributes:
      t: [m] times (units of the series' t).
      mean: [m] posterior mean. std_f: [m] std of the latent function.
      std_y: [m] std of a new observation (latent plus noise).
    """

    t: np.ndarray
    mean: np.ndarray
    std_f: np.ndarray
    std_y: np.ndarray
    # (label, lower [m], upper [m]) per band to draw, widest first; empty:
    # mean +- 2 std_y and mean +- 2 std_f.
    bands: Sequence[tuple] = ()
    # [m] observed values at t (held-out points), or None.
    y: Optional[np.ndarray] = None
    # What `mean` is: "median" where a --transform's posterior is mapped back.
    centre: str = "mean"

    def drawn_bands(self, what: str) -> list[tuple]:
        """(label, lower, upper, alpha) of the bands drawn, widest first."""
        if self.bands:
            alphas = np.linspace(0.12, 0.3, len(self.bands)) if len(self.bands) > 1 else [0.2]
            return [(label, lower, upper, a) for (label, lower, upper), a in zip(self.bands, alphas)]
        return [("±2σ new observation" if what == "posterior" else None,
                 self.mean - 2 * self.std_y, self.mean + 2 * self.std_y, 0.12),
                (f"±2σ {what}", self.mean - 2 * self.std_f, self.mean + 2 * self.std_f, 0.3)]


@dataclasses.dataclass
class Part:
    """One component's posterior mean (gpcore.predict.component_means), around 0.

    Attributes:
      label: e.g. "rbf: amplitude 2.1, length_scale 310".
      t: [m] times. mean: [m] values, units of y.
    """

    label: str
    t: np.ndarray
    mean: np.ndarray


# Dots drawn at most per series plot: a 10^5-point series (the O(n) path
# fits them) would draw an unreadable band in seconds of rendering.
MAX_DOTS = 5000


@_any_script
def series_png(t: np.ndarray, y: np.ndarray, curve: Optional[Curve], title: str,
               dates: bool = False, note: Optional[str] = None,
               forecast: Optional[Curve] = None, parts: Sequence[Part] = (),
               holdout: Optional[Curve] = None) -> bytes:
    """Observations (dots) and, if given, the posterior mean with ±2σ bands,
    and the run's forecast with its bands (another colour); below them, for
    a sum of kernels, each component's posterior mean.

    Args:
      t, y: [n] observations; non-finite y are not drawn.
      curve: the posterior, or None to draw the data only.
      title: one to three lines, drawn as plain text.
      dates: t is days since 1970-01-01: label the axis with dates.
      note: drawn inside the axes, e.g. why there is no curve.
      forecast: the run's predictions past the data (--predict_*), or None.
      parts: the components' posterior means, drawn in a panel of their own.
      holdout: the backtest's forecast of the held-out points (--holdout),
        with their values (Curve.y), or None.
    """
    height = SERIES_SIZE[1] + (PARTS_HEIGHT if parts else 0.0)
    fig = Figure(figsize=(SERIES_SIZE[0], height), dpi=DPI)
    FigureCanvasAgg(fig)
    if parts:
        ax, below = fig.subplots(2, 1, sharex=True, height_ratios=(SERIES_SIZE[1], PARTS_HEIGHT))
        _draw_parts(below, parts, dates)
    else:
        ax = fig.add_subplot()
    cut = False  # a band reaches past ±DRAWN_MAX: the axis is set by the rest
    for drawn, color, what in ((curve, FIT_COLOR, "posterior"),
                               (forecast, FORECAST_COLOR, "forecast"),
                               (holdout, HOLDOUT_COLOR, "holdout")):
        if drawn is None:
            continue
        for label, lower, upper, alpha in drawn.drawn_bands(what):
            # Under --transform log a wide band maps back to 1e308 or inf.
            past = _past(lower) | _past(upper)
            cut |= bool(past.any())
            if past.any() and label:
                label += f" (cut: past ±{DRAWN_MAX:g})"
            ax.fill_between(drawn.t, *(np.clip(b, -DRAWN_MAX, DRAWN_MAX) for b in (lower, upper)),
                            color=color, alpha=alpha, linewidth=0,
                            label=label if what != "holdout" else None)
        ax.plot(drawn.t, drawn.mean, color=color, linewidth=1.5,
                marker="." if what != "posterior" else None, label=f"{what} {drawn.centre}")
        if drawn.y is not None:
            inside = drawable(drawn.y)
            ax.plot(drawn.t[inside], drawn.y[inside], "x", color=HOLDOUT_COLOR, markersize=5,
                    zorder=4, label=f"held out ({drawn.y.size} points{_beyond(drawn.y)})")
    shown = np.isfinite(t) & np.isfinite(y)
    count = int(shown.sum())
    beyond = _beyond(y[shown])
    shown &= drawable(y)
    drawn_t, drawn_y = t[shown], y[shown]
    every = max(1, -(-int(shown.sum()) // MAX_DOTS))  # long series: every k-th, said below
    ax.plot(drawn_t[::every], drawn_y[::every], "o", color=DATA_COLOR,
            markersize=3 if count < 300 else 1.5, zorder=3,
            label=f"data ({count} points{beyond}"
                  + (f", every {every}th drawn)" if every > 1 else ")"))
    if cut:
        lines = [drawn_y] + [c.mean for c in (curve, forecast, holdout) if c is not None]
        _y_limits(ax, lines + ([holdout.y] if holdout is not None and holdout.y is not None
                               else []))
    if note:
        ax.text(0.01, 0.97, note, transform=ax.transAxes, va="top", ha="left", fontsize=8,
                color="#a01010", parse_math=False, wrap=True)
    _time_axis(ax, dates)
    ax.set_title(title, fontsize=8.5, loc="left", parse_math=False, wrap=True)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.25)
    if count or curve is not None:  # also to say that no point is drawn
        # Below the axes: inside, it would hide data wherever it went.
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=4,
                  frameon=False)
    fig.tight_layout()
    return _png(fig)


def _y_limits(ax, lines: Sequence[np.ndarray]) -> None:
    """The y axis over the drawable values of `lines`, with matplotlib's margin."""
    values = np.concatenate([v[drawable(v)] for v in lines]) if lines else np.empty(0)
    if not values.size:
        return
    lo, hi = float(values.min()), float(values.max())
    pad = MARGIN * (hi - lo) if hi > lo else 0.5 * (abs(hi) or 1.0)
    ax.set_ylim(lo - pad, hi + pad)


def _past(band: np.ndarray) -> np.ndarray:
    """[m] bool: a band's side is past ±DRAWN_MAX (inf included; NaN is a gap)."""
    return ~np.isnan(band) & ~drawable(band)


def drawable(y: np.ndarray) -> np.ndarray:
    """[n] bool: y is finite and within ±DRAWN_MAX."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(y) & (np.abs(y) <= DRAWN_MAX)


def _beyond(y: np.ndarray) -> str:
    """What a label says of the finite values of y [n] it does not draw."""
    left_out = int(np.sum(np.isfinite(y) & ~drawable(y)))
    return f"; {left_out} beyond ±{DRAWN_MAX:g} not drawn" if left_out else ""


def _draw_parts(ax, parts: Sequence[Part], dates: bool) -> None:
    """Each component's posterior mean, one colour each, around a zero line."""
    ax.axhline(0.0, color="#999999", linewidth=0.8)
    for part, color in zip(parts, PART_COLORS * len(parts)):
        ax.plot(part.t, part.mean, color=color, linewidth=1.3, label=part.label)
    ax.set_ylabel("components", fontsize=8)
    _time_axis(ax, dates)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7, loc="best", frameon=False, ncol=min(len(parts), 2))


def _time_axis(ax, dates: bool) -> None:
    if dates:
        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


@_any_script
def histograms_png(hists: Sequence[Histogram]) -> bytes:
    """One panel per quantity; log x axis where its histogram is log-binned."""
    return _png(histograms_figure(hists))


def histograms_figure(hists: Sequence[Histogram]) -> Figure:
    """histograms_png's figure, laid out."""
    columns = min(len(hists), 3 if len(hists) <= 6 else 4)  # one alone takes one panel
    rows = max(1, -(-len(hists) // columns))
    fig = Figure(figsize=(HIST_PANEL[0] * columns, HIST_PANEL[1] * rows), dpi=DPI)
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, hist in zip(axes, hists):
        ax.stairs(hist.counts, hist.edges, fill=True, color=FIT_COLOR, alpha=0.8)
        _x_limits(ax, hist.edges[0], hist.edges[-1], hist.log)  # before the scale pads it
        if hist.log:
            _log_axis(ax, hist.edges[0], hist.edges[-1])
        label = textwrap.fill(hist.name + (" (log scale)" if hist.log else ""),
                              HIST_TITLE_CHARS, break_long_words=False)
        extra = f", {hist.nonfinite} not finite" if hist.nonfinite else ""
        ax.set_title(f"{label}\n{hist.total} series{extra}", fontsize=8.5, parse_math=False)
        ax.tick_params(labelsize=7)
    for ax in axes[len(hists):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def _log_axis(ax, lo: float, hi: float) -> None:
    """Log x axis labelled with plain numbers: 1, 2, 5, 10, ... over a few
    decades, powers of ten over more (matplotlib's default minor labels
    overlap on spans of one or two decades)."""
    ax.set_xscale("log")
    subs = (1.0, 2.0, 5.0) if np.log10(hi) - np.log10(lo) <= 2 else (1.0,)
    ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())


def _x_limits(ax, lo: float, hi: float, log: bool) -> None:
    """The x axis from lo to hi where matplotlib's margin (5 % of the span,
    or of the decades on a log axis) would pass float64's range: values
    near 1e308 (a MASE of held-out missing-value codes) or spanning 600
    decades made the limits inf or 0, and the ticks failed ('arange: cannot
    compute length') or labelled a wrong axis."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        if log:
            a, b = np.log10(lo), np.log10(hi)
            padded = np.power(10.0, [a - MARGIN * (b - a), b + MARGIN * (b - a)])
        else:
            padded = np.array([lo - MARGIN * (hi - lo), hi + MARGIN * (hi - lo)])
    if not (np.all(np.isfinite(padded)) and (not log or padded[0] > 0)):
        ax.set_xlim(lo, hi)
    if not log and max(abs(lo), abs(hi)) > HUGE:
        # matplotlib's linear ticks overflow there too: the ends and the middle.
        ax.set_xlim(lo, hi)
        ax.xaxis.set_major_locator(ticker.FixedLocator([lo, lo / 2 + hi / 2, hi]))


def _png(fig: Figure) -> bytes:
    """PNG bytes with a 256-colour palette: plots this simple look the same
    and take about 2.5x fewer bytes, which a page of base64 images needs."""
    rendered = io.BytesIO()
    fig.savefig(rendered, format="png", dpi=DPI)
    rendered.seek(0)
    with Image.open(rendered) as image:
        palette = image.convert("RGB").quantize(256)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)  # no metadata: same figure, same bytes
    return out.getvalue()
