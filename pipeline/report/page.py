"""The report as one self-contained HTML page (images inline, no scripts)."""
from __future__ import annotations

import base64
import dataclasses
import html
import struct
from typing import Optional, Sequence

from gpcore.config import PERIODIC_MARGIN
from gpcore.result import OK
# A plot's title and its image's alt text cut an id as a log line does
# (shown_id); the card's heading shows it whole, escaped alike (one_line).
from pipeline.io.errors import one_line, shown_id
from pipeline.io import scales
from pipeline.io.inputs import AS_GIVEN, DAYS
from pipeline.report.nightly import Moves
from pipeline.report.summary import Reason

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# An empty id (gpfit fits it as any other) as the page and the plots name it.
EMPTY_ID = "(empty id)"

_STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       max-width: 1040px; margin: 24px auto; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; }
h3 { font-size: 15px; margin: 20px 0 4px; }
.meta, .why { color: #666; font-size: 13px; }
.warn { background: #fff4e0; border-left: 4px solid #e0a000; padding: 6px 10px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 12px; } img { max-width: 100%; height: auto; }
"""


@dataclasses.dataclass
class Card:
    """One plotted series.

    Attributes:
      series_id: its id. reasons: why it is shown. status: its fit status.
      png: the plot, or None when there is nothing to draw.
      message: shown under the heading (e.g. why there is no fit).
    """

    series_id: str
    reasons: Sequence[str]
    status: str
    png: Optional[bytes]
    message: Optional[str] = None


@dataclasses.dataclass
class Choice:
    """Under --kernel auto: which candidate each fitted series chose.

    Attributes:
      counts: (candidate, series that chose it, of them with a bic_margin
        below close_call), every candidate of the run.
      total: "ok" series, each counted by the kernel it holds.
      close_call: the margin below which a choice is weak evidence.
      margins_png: histogram of bic_margin, or None.
      negative: series with a negative bic_margin (among the close calls).
    """

    counts: Sequence[tuple[str, int, int]]
    total: int
    close_call: float
    margins_png: Optional[bytes]
    negative: int = 0


@dataclasses.dataclass
class Backtest:
    """With --holdout: how the forecasts of the held-out points scored.

    Attributes:
      totals: {series, points, mase_mean, mase_median, coverage_95}, the
        manifest's holdout totals (MASE may be None: no series had a scale),
        and mase_series: the series the MASE is over.
      mase_png: histogram of holdout_mase, or None.
    """

    totals: dict
    mase_png: Optional[bytes]


@dataclasses.dataclass
class Page:
    """Everything on the page, already computed."""

    params_folder: str
    input_pattern: str
    generated: str
    rows: int
    status_counts: Sequence[tuple[str, int]]
    converged: int
    kernels: Sequence[tuple[str, int]]
    reasons: Sequence[Reason]
    histograms_png: Optional[bytes]
    cards: Sequence[Card]
    warnings: Sequence[str] = ()
    time_units: str = AS_GIVEN
    reused: int = 0
    warm_started: int = 0
    moves: Optional[Moves] = None
    moves_png: Optional[bytes] = None
    choice: Optional[Choice] = None
    backtest: Optional[Backtest] = None
    # (reasons, series) not in the table of `reasons`.
    reasons_left_out: tuple[int, int] = (0, 0)
    # Input rows with a null id (the manifest's counts): no series, not fitted.
    null_ids: int = 0
    # The run's --transform: its parameters are of that scale (scales.SCALE_NAMES).
    transform: str = scales.NONE


def render(page: Page) -> str:
    """The HTML text of the page."""
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>gpfit report: {_text(page.params_folder)}</title>",
           f"<style>{_STYLE}</style>", "</head>", "<body>",
           "<h1>gpfit report</h1>",
           f'<p class="meta">params <code>{_text(page.params_folder)}</code> · input '
           f'<code>{_text(page.input_pattern)}</code> · time in {e(_units(page.time_units))} · '
           f"generated {e(page.generated)}</p>"]
    out += [f'<p class="warn">{_text(w)}</p>' for w in page.warnings]

    out.append("<h2>Summary</h2>")
    out.append("<table><tr><th>status</th><th>series</th><th>share</th></tr>")
    for status, count in page.status_counts:
        out.append(f"<tr><td>{e(status)}</td><td class=n>{count:,}</td>"
                   f"<td class=n>{_share(count, page.rows)}</td></tr>")
    out.append(f"<tr><th>total</th><th class=n>{page.rows:,}</th><th></th></tr></table>")
    if page.null_ids:
        out.append(f'<p class="meta">{page.null_ids:,} input row{_s(page.null_ids)} with a null '
                   "id: no series, not fitted (the manifest's counts.null_ids).</p>")
    ok = dict(page.status_counts).get(OK, 0)
    kernels = ", ".join(f"{e(str(k))} ({n:,})" for k, n in page.kernels)
    out.append(f'<p class="meta">{page.converged:,} of {ok:,} fitted series converged '
               f"before the iteration limit · kernel: {kernels or 'none'}</p>")
    if page.moves is not None:
        out += _against_previous(page)

    if page.choice:
        out += _choice(page.choice)

    if page.backtest:
        out += _backtest(page.backtest)

    out.append("<h2>Most common reasons for skipped and failed series</h2>")
    if page.reasons:
        out.append("<table><tr><th>series</th><th>status</th><th>reason "
                   "(numbers shown as #)</th><th>example</th></tr>")
        for r in page.reasons:
            out.append(f"<tr><td class=n>{r.count:,}</td><td>{e(r.status)}</td>"
                       f"<td>{_text(r.pattern)}</td><td>{_text(r.example)}</td></tr>")
        out.append("</table>")
        reasons, series = page.reasons_left_out
        if reasons:
            out.append(f'<p class="meta">Not shown: {reasons:,} less common reason(s), of '
                       f"{series:,} series (the params' error column has each).</p>")
    elif page.rows:
        out.append("<p>None: every series was fitted.</p>")
    else:
        out.append("<p>None: the run has no series.</p>")

    out.append("<h2>Fitted parameters</h2>")
    if page.histograms_png:
        out.append('<p class="meta">Over the series with status ok; each kernel\'s parameters '
                   "per component (\"length_scale (rbf in rbf+periodic)\": the rbf part of the "
                   "rbf+periodic fits). Time-like parameters "
                   f"(length_scale, period) in {e(_units(page.time_units))}; the periodic "
                   "kernel's length_scale is unitless; the linear kernel's amplitude is a "
                   "slope, in units of y per unit of t, and it has no length_scale."
                   f"{_fitted_scale(page.transform)}</p>")
        out.append(_img(page.histograms_png, "histograms of the fitted parameters"))
    else:
        out.append("<p>No series was fitted.</p>")

    out.append("<h2>Series</h2>")
    out.append('<p class="meta">Dots: data. Line: posterior mean from the fitted parameters. '
               "Dark band: ±2σ of the latent function; light band: ±2σ of a new "
               "observation (with noise). Orange, where the run wrote predictions: its "
               "forecast past the last observation, with a band per interval level the run "
               "wrote (lower_L, upper_L: calibrated, wider than ±2σ; runs before them: ±2σ). "
               "Magenta, with --holdout: the forecast of the held-out points (crosses) from "
               "the points before them, with its intervals; the scores are in the title. "
               "For a sum of kernels, "
               "the panel below shows each component's posterior mean (e.g. the trend and the "
               "seasonal cycle); they add up to the line above, less the constant mean. "
               "Under --transform the lines are medians (the posterior is computed on the "
               "fitted scale, log y for log, and mapped back), and the components, named "
               "with that scale, add up on it.</p>")
    if not page.cards:
        out.append("<p>No series selected.</p>")
    for card in page.cards:
        out.append(f"<h3>{_id(card.series_id)}</h3>")
        out.append(f'<p class="why">{e(", ".join(card.reasons))} · status {e(card.status)}</p>')
        if card.message:
            out.append(f"<p>{_text(card.message)}</p>")
        if card.png:
            out.append(_img(card.png, f"series {plain_id(card.series_id)}"))
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def _fitted_scale(transform: str) -> str:
    """What the parameters are of under a --transform (README, "Positive
    data"); "" without one."""
    if transform == scales.NONE:
        return ""
    name = html.escape(scales.SCALE_NAMES.get(transform, f"{transform}(y)"))  # a newer release's
    return (f" Fitted on {name} (--transform {html.escape(transform)}): mean, the amplitudes, "
            f"noise_variance and nll per point are those of {name}, not of y.")


def _against_previous(page: Page) -> list[str]:
    """The "Against the previous run" section: reused, warm-started and
    cold fits; how far the refitted series' parameters moved."""
    e, moves = html.escape, page.moves
    cold = page.rows - page.reused - page.warm_started
    out = ["<h2>Against the previous run</h2>",
           f'<p class="meta">previous run <code>{_text(moves.previous)}</code></p>',
           "<table><tr><th>series</th><th>count</th><th>share</th></tr>"]
    for label, count in (("reused (unchanged, copied)", page.reused),
                         ("fitted, warm-started from the previous parameters",
                          page.warm_started),
                         ("fitted cold (new, changed without usable parameters, "
                          "skipped or failed)", cold)):
        out.append(f"<tr><td>{e(label)}</td><td class=n>{count:,}</td>"
                   f"<td class=n>{_share(count, page.rows)}</td></tr>")
    out.append("</table>")
    if moves.problem:
        return out + [f'<p class="warn">{_text(moves.problem)}</p>']
    capped = " (the first of them only)" if moves.capped else ""
    out.append(f'<p class="meta">How far the parameters of the {moves.compared:,} series fitted '
               f"again moved{capped}: log10(tonight / previous run), over the series ok in both "
               "with the same kernel. 0 is no move; ±1 is a factor of 10.</p>")
    if page.moves_png:
        out.append(_img(page.moves_png, "histograms of parameter moves"))
    if moves.top:
        out.append("<table><tr><th>series</th><th>kernel</th><th>moved most</th>"
                   "<th>previous</th><th>tonight</th><th>factor</th></tr>")
        for m in moves.top:
            out.append(f"<tr><td>{_id(m.series_id)}</td><td>{e(m.kernel)}</td>"
                       f"<td>{e(m.parameter)}</td><td class=n>{m.before:.4g}</td>"
                       f"<td class=n>{m.after:.4g}</td>"
                       f"<td class=n>×{10 ** m.log10_ratio:.3g}</td></tr>")
        out.append("</table>")
    return out


def _choice(choice: Choice) -> list[str]:
    """The kernel-choice section: series per candidate, and the margins."""
    out = ["<h2>Kernel choice (--kernel auto)</h2>",
           '<p class="meta">Each fitted series keeps the candidate with the lowest BIC, but '
           f"a periodic candidate only where its BIC is more than {PERIODIC_MARGIN:g} below "
           "every non-periodic candidate's (gpfit's guard against cycles read into noise). "
           "bic_margin is the runner-up's BIC minus the chosen one's: negative "
           f"({choice.negative:,} series here) where a periodic candidate had the lower BIC "
           f"by {PERIODIC_MARGIN:g} or less. A margin below "
           f"{choice.close_call:g} (a negative one too) is weak evidence: either kernel would "
           "do. A series whose "
           "periodic candidates the screen left out (no repeated cycle) chose among the "
           "others, alone with one candidate: it has no bic_margin.</p>",
           "<table><tr><th>candidate</th><th>series</th><th>share</th>"
           f"<th>margin &lt; {choice.close_call:g}</th></tr>"]
    for kernel, count, close in choice.counts:
        out.append(f"<tr><td>{html.escape(kernel)}</td><td class=n>{count:,}</td>"
                   f"<td class=n>{_share(count, choice.total)}</td>"
                   f"<td class=n>{close:,}</td></tr>")
    out.append(f"<tr><th>total</th><th class=n>{choice.total:,}</th><th></th><th></th></tr>"
               "</table>")
    if choice.margins_png:
        out.append(_img(choice.margins_png, "histogram of bic_margin"))
    return out


def _backtest(backtest: Backtest) -> list[str]:
    """The backtest section: MASE and the 95 % interval's coverage."""
    t = backtest.totals
    said = lambda value: "–" if value is None else f"{value:.3g}"  # noqa: E731
    out = ["<h2>Backtest (--holdout)</h2>",
           '<p class="meta">Each scored series\' last points were held out of its fit and '
           "forecast from the points before them. MASE: the forecast's mean absolute error "
           "over the series' in-sample one-step naive error (below 1: better than that "
           "naive step; the median is within 2 %). Coverage: the share of all held-out "
           "points inside their calibrated 95 % interval for a new observation; near 0.95 "
           "the intervals are as wide as they should be.</p>",
           "<table><tr><th>series</th><th>held-out points</th><th>MASE mean</th>"
           "<th>MASE median</th><th>95 % coverage</th></tr>",
           f"<tr><td class=n>{t['series']:,}</td><td class=n>{t['points']:,}</td>"
           f"<td class=n>{said(t['mase_mean'])}</td><td class=n>{said(t['mase_median'])}</td>"
           f"<td class=n>{said(t['coverage_95'])}</td></tr></table>"]
    without = t["series"] - t.get("mase_series", t["series"])
    if without:  # else the MASE columns read as over every series scored
        out.append(f'<p class="meta">MASE over {t["mase_series"]:,} of the {t["series"]:,} '
                   f"series: the other {without:,} have none (an in-sample naive error of 0, "
                   "a constant fitted part, or a MASE that is not a finite number).</p>")
    if backtest.mase_png:
        out.append(_img(backtest.mase_png, "histogram of holdout_mase"))
    return out


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's IHDR chunk."""
    if data[:8] != PNG_SIGNATURE or data[12:16] != b"IHDR":
        raise ValueError("not a PNG image")
    return struct.unpack(">II", data[16:24])


def _img(data: bytes, alt: str) -> str:
    width, height = png_size(data)
    encoded = base64.b64encode(data).decode("ascii")
    return (f'<p><img src="data:image/png;base64,{encoded}" width="{width}" '
            f'height="{height}" alt="{html.escape(alt)}"></p>')


def plain_id(series_id) -> str:
    """An id in a plot's title or an image's alt text: cut and escaped as a
    log line shows it (errors.shown_id), EMPTY_ID for an empty one."""
    return shown_id(series_id) or EMPTY_ID


def _id(series_id) -> str:
    """An id whole, as HTML (see _text); an empty one as EMPTY_ID, in
    italics: not an id's text."""
    return _text(series_id) if str(series_id) else f"<em>{EMPTY_ID}</em>"


def _text(text) -> str:
    """An id, a path (or a message quoting one) whole, as HTML: what does
    not print (NUL, an escape, a tab, a newline, a right-to-left override)
    written as the log lines and the plots' titles write it
    (errors.one_line), not raw, where a browser shows it as nothing, a box
    or a space."""
    return html.escape(one_line(str(text)))


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _share(count: int, total: int) -> str:
    return f"{100.0 * count / total:.1f}%" if total else "–"


def _units(time_units: str) -> str:
    return "days (dates and timestamps as days since 1970-01-01)" if time_units == DAYS \
        else "the units of t"
