"""The report after the scan: histograms, sampled series, plots, the page.

The params are streamed a second time (histograms on the ranges found by
the scan) and the input is read only for the sampled series, so memory
stays bounded by one params batch plus the sampled series' data.
"""
from __future__ import annotations

import dataclasses
import datetime
import math
from typing import Callable, Optional

import numpy as np

from gpcore.kernels import kernel as kernel_named
from gpcore.predict import checked_params, predict
from gpcore.result import OK
from gpcore.series import Series
from pipeline.io.inputs import DAYS, InputSpec
from pipeline.io.outputs import FAILED_MARKER, SUCCESS_MARKER
from pipeline.report import params as params_io
from pipeline.report.data import read_series
from pipeline.report.nightly import compare, read_forecasts
from pipeline.report.page import Card, Page, render
from pipeline.report.plots import Curve, histograms_png, series_png
from pipeline.report.sample import Pick
from pipeline.report.scan import Scan
from pipeline.report.summary import QUANTITIES, histograms

# Posterior grid: at least this many points, finer for short length scales
# (about 8 points per length scale), but never more than the cap.
GRID_MIN, GRID_MAX = 400, 2000
GRID_PAD = 0.05  # beyond the data on each side, as a fraction of its span
TOP_REASONS = 10


@dataclasses.dataclass
class Report:
    html: str
    rows: int  # series in the params
    plots: int  # series plots on the page


def build(scanned: Scan, log: Callable[[str], None] = lambda message: None) -> Report:
    """Makes the page from a checked, scanned run (see scan.scan)."""
    spec, run, tally = scanned.spec, scanned.run, scanned.tally
    hist_columns = ("status", "nll") + tuple(q for q in QUANTITIES if q != "nll per point")
    hists = histograms(tally, params_io.iter_batches(run, columns=hist_columns))

    picks = scanned.sampler.picks()
    log(f"plotting {len(picks)} series")
    data = read_series(spec, [p.series_id for p in picks])
    forecasts = read_forecasts(run.folder, [p.series_id for p in picks],
                               spec.time_units == DAYS)
    cards = [_card(pick, data.get(pick.series_id), spec, forecasts.get(pick.series_id))
             for pick in picks]
    previous = (run.manifest or {}).get("previous_output")
    moves = None
    if previous:
        log(f"comparing with the previous run, {previous}")
        moves = compare(run, previous)

    page = Page(
        params_folder=scanned.options.params, input_pattern=scanned.options.input,
        generated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        rows=tally.rows, status_counts=tally.status_counts(), converged=tally.converged,
        kernels=sorted(tally.kernels.items(), key=lambda kv: -kv[1]),
        reasons=tally.reasons(TOP_REASONS),
        histograms_png=histograms_png(hists) if hists else None,
        cards=cards, warnings=_warnings(run), time_units=spec.time_units,
        reused=tally.reused, warm_started=tally.warm_started, moves=moves,
        moves_png=histograms_png(moves.histograms) if moves and moves.histograms else None)
    return Report(render(page), tally.rows, sum(card.png is not None for card in cards))


def posterior_curve(series: Series, row: dict) -> Curve:
    """The fitted posterior on a grid over the data's span (plus a margin).

    Raises:
      ValueError: the row's parameters are missing or out of range.
    """
    row = checked_params(row)
    t = series.t[np.isfinite(series.t) & np.isfinite(series.y)]
    lo, hi = (float(t.min()), float(t.max())) if t.size else (0.0, 1.0)
    pad = GRID_PAD * (hi - lo) if hi > lo else 1.0
    lo, hi = lo - pad, hi + pad
    scale = kernel_named(row["kernel"]).time_scale(row)
    m = int(np.clip(8.0 * (hi - lo) / scale, GRID_MIN, GRID_MAX))
    grid = np.linspace(lo, hi, m)
    mean, std_f = predict(series, row, grid)
    std_y = np.sqrt(std_f ** 2 + row["noise_variance"])
    return Curve(grid, mean, std_f, std_y)


def title(row: dict) -> str:
    """Two lines: the fitted parameters, then the fit's diagnostics."""
    head = [str(row["series_id"]), str(row.get("kernel"))]
    if row["status"] != OK:
        return " · ".join(head + [f"{row['status']}, {row['n_points']} finite points"])
    head.append(f"mean {_g(row['mean'])}")
    head.append(f"amplitude {_g(row['amplitude'])}")
    for name in kernel_named(row["kernel"]).parameters:
        head.append(f"{name} {_g(row[name])}")
    noise = row["noise_variance"]
    noise_sd = _g(math.sqrt(noise)) if noise is not None and noise >= 0 else "?"
    head.append(f"noise_variance {_g(noise)} (sd {noise_sd})")
    n, nll = row["n_points"], row["nll"]
    per_point = f" ({_g(nll / n)} per point)" if n and nll is not None else ""
    stopped = "converged" if row["converged"] else f"NOT converged ({row.get('stop_reason')})"
    bound = " at a bound" if row.get("at_bound") else ""
    tail = (f"n_points {n} · nll {_g(nll)}{per_point} · "
            f"{stopped}{bound} after {row['iterations']} iterations")
    return " · ".join(head) + "\n" + tail


def _card(pick: Pick, series: Optional[Series], spec: InputSpec,
          forecast: Optional[Curve] = None) -> Card:
    row = pick.row
    dates = spec.time_units == DAYS
    if series is None:
        return Card(pick.series_id, pick.reasons, row["status"], None,
                    f"No rows with this id in {spec.pattern}: is it the input of this run?")
    note, curve = None, None
    if row["status"] == OK:
        try:
            curve = posterior_curve(series, row)
        except ValueError as err:
            note = f"cannot draw the posterior: {err}"
    else:
        note = f"{row['status']}: {row.get('error') or '(no message)'}"
    png = series_png(series.t, series.y, curve, title(row), dates=dates, note=note,
                     forecast=forecast)
    return Card(pick.series_id, pick.reasons, row["status"], png, None)


def _warnings(run: params_io.ParamsRun) -> list[str]:
    if run.manifest_name is None:
        return [f"No {SUCCESS_MARKER} in {run.folder}: that run did not finish (or is still "
                "running). This report shows the shards present, which may be incomplete "
                "or stale."]
    if run.manifest_name == FAILED_MARKER:
        return [f"That run wrote {FAILED_MARKER}: more series failed than its "
                "--max_failure_fraction allowed."]
    return []


def _g(value) -> str:
    return "?" if value is None else f"{value:.4g}"
