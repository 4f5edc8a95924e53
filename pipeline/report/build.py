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

from gpcore.config import FitConfig
from gpcore.kernels import kernel as kernel_named
from gpcore.predict import component_means, fitted_centre, predict
from gpcore.result import OK
from gpcore.series import Series, split as held_out_split
from pipeline.io.inputs import DAYS, InputSpec
from pipeline.io.outputs import FAILED_MARKER, SUCCESS_MARKER
from pipeline.report import params as params_io
from pipeline.report.data import read_series
from pipeline.io import rows, scales
from pipeline.io.schema import FORECAST, HOLDOUT
from pipeline.report.nightly import compare, listed_predictions, read_predictions
from pipeline.report.page import Backtest, Card, Choice, Page, plain_id, render
from pipeline.report.plots import Curve, Part, histograms_png, series_png
from pipeline.report.sample import Pick
from pipeline.report.scan import Scan
from pipeline.report.summary import (CLOSE_CALL, COLUMNS, HOLDOUT_MASE, MARGIN, SECTIONED, Tally,
                                     histograms, spread_variance)

# Posterior grid: at least this many points, finer for short length scales
# (about 8 points per length scale), but never more than the cap.
GRID_MIN, GRID_MAX = 400, 2000
GRID_PAD = 0.05  # beyond the data on each side, as a fraction of its span
# What a curve's line is under a --transform: its quantiles map back, its
# mean does not (docs/design.md, "Contracts").
MEDIAN = "median"
TOP_REASONS = 10


@dataclasses.dataclass
class Report:
    html: str
    rows: int  # series in the params
    plots: int  # series plots on the page


def build(scanned: Scan, log: Callable[[str], None] = lambda message: None) -> Report:
    """Makes the page from a checked, scanned run (see scan.scan)."""
    spec, run, tally = scanned.spec, scanned.run, scanned.tally
    hists = histograms(tally, params_io.iter_batches(run, columns=COLUMNS))
    margins = [h for h in hists if h.name == MARGIN]
    mases = [h for h in hists if h.name == HOLDOUT_MASE]
    hists = [h for h in hists if h.name not in SECTIONED]

    picks = scanned.sampler.picks()
    log(f"plotting {len(picks)} series")
    data = read_series(spec, [p.series_id for p in picks])
    ids, dates = [p.series_id for p in picks], spec.time_units == DAYS
    # The predictions shards the manifest lists, as the params' (a stray copy's rows left out).
    predictions = listed_predictions(run.folder, (run.manifest or {}).get("prediction_files"))
    forecasts = read_predictions(run.folder, ids, dates, FORECAST, predictions[0])
    held = read_predictions(run.folder, ids, dates, HOLDOUT, predictions[0])
    transform = ((run.manifest or {}).get("options") or {}).get("transform") or scales.NONE
    if transform != scales.NONE:  # the predictions' mean is the median there
        forecasts, held = ({sid: dataclasses.replace(curve, centre=MEDIAN)
                            for sid, curve in found.items()} for found in (forecasts, held))
    cards = [_card(pick, data.get(pick.series_id), spec, forecasts.get(pick.series_id),
                   held.get(pick.series_id), transform)
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
        kernels=tally.kernel_counts(),
        reasons=tally.reasons(TOP_REASONS), reasons_left_out=tally.left_out(TOP_REASONS),
        null_ids=_null_ids(run.manifest),
        histograms_png=histograms_png(hists) if hists else None,
        cards=cards, warnings=_warnings(run, *predictions[1:]), time_units=spec.time_units,
        transform=transform,
        reused=tally.reused, warm_started=tally.warm_started, moves=moves,
        moves_png=histograms_png(moves.histograms) if moves and moves.histograms else None,
        choice=kernel_choice(tally, run.manifest, histograms_png(margins) if margins else None),
        backtest=backtest(tally, histograms_png(mases) if mases else None))
    return Report(render(page), tally.rows, sum(card.png is not None for card in cards))


def posterior_curve(series: Series, row: dict, transform: str = scales.NONE) -> Curve:
    """The fitted posterior on a grid over the data's span (plus a margin);
    under a --transform, `series` is on the fitted scale and the curve's
    mean (the median) and bands are mapped back to y's.

    Raises:
      ValueError: the row's parameters are missing or out of range.
    """
    params = rows.parameters(row)
    t = series.t[np.isfinite(series.t) & np.isfinite(series.y)]
    lo, hi = (float(t.min()), float(t.max())) if t.size else (0.0, 1.0)
    pad = GRID_PAD * (hi - lo) if hi > lo else 1.0
    lo, hi = lo - pad, hi + pad
    # The finest component sets the grid: a sum's seasonal part, not its trend.
    scale = min(kernel_named(c["kernel"]).time_scale(c) for c in params["components"])
    m = int(np.clip(8.0 * (hi - lo) / scale, GRID_MIN, GRID_MAX))
    grid = np.linspace(lo, hi, m)
    mean, std_f = predict(series, params, grid, centre=_centre(series, row))
    std_y = np.sqrt(std_f ** 2 + params["noise_variance"])
    if transform == scales.NONE:
        return Curve(grid, mean, std_f, std_y)
    back = lambda z: scales.inverse(transform, z)  # noqa: E731
    with np.errstate(over="ignore"):  # past 1e308: inf, which the plot cuts
        return Curve(grid, back(mean), std_f, std_y, bands=(
            ("±2σ new observation", back(mean - 2 * std_y), back(mean + 2 * std_y)),
            ("±2σ posterior", back(mean - 2 * std_f), back(mean + 2 * std_f))), centre=MEDIAN)


def component_parts(series: Series, row: dict, t_new: np.ndarray,
                    transform: str = scales.NONE) -> list[Part]:
    """For a sum of kernels, each component's posterior mean at t_new; for
    a single kernel, none (it is the curve itself). Under a --transform,
    `series` is on the fitted scale and so are the parts, which add up there
    (a sum does not map back through exp): each label names that scale."""
    params = rows.parameters(row)
    components = params["components"]
    if len(components) < 2:
        return []
    means = component_means(series, params, t_new, centre=_centre(series, row))
    scale = "" if transform == scales.NONE else f" of {scales.SCALE_NAMES[transform]}"
    return [Part(f"{c['kernel']}{scale}: {_parameters(c)}", t_new, mean)
            for c, mean in zip(components, means)]


def _centre(series: Series, row: dict) -> Optional[float]:
    """`linear`'s centre of the row's fit: under --holdout that of the
    points before the last holdout_points, as the forecast rows have it
    (docs/design.md, "The centre c of `linear`")."""
    held_out = row.get("holdout_points") or 0
    return fitted_centre(held_out_split(series, held_out).fitted) if held_out else None


def title(row: dict, transform: str = scales.NONE) -> str:
    """The fitted parameters, then the fit's diagnostics: two lines, three
    for a sum of kernels (one line for its components). Under a
    --transform the kernel names the scale its parameters are of
    ("rbf of log(y)"), as the parts' labels do."""
    head = [plain_id(row["series_id"]), str(row.get("kernel"))]
    if row["status"] != OK:
        return " · ".join(head + [f"{row['status']}, {row['n_points']} finite points"])
    if transform != scales.NONE:
        head[1] += f" of {scales.SCALE_NAMES.get(transform, f'{transform}(y)')}"
    head.append(f"mean {_mean(row)}")
    components = row.get("components") or []
    if len(components) == 1:
        head.append(_parameters(components[0], " · "))
    noise = row["noise_variance"]
    noise_sd = _g(math.sqrt(noise)) if noise is not None and noise >= 0 else "?"
    head.append(f"noise_variance {_g(noise)} (sd {noise_sd})")
    lines = [" · ".join(head)]
    if len(components) > 1:
        lines.append(" · ".join(f"{c['kernel']}: {_parameters(c)}" for c in components))
    n, nll = row["n_points"], row["nll"]
    per_point = f" ({_g(nll / n)} per point)" if n and nll is not None else ""
    stopped = "converged" if row["converged"] else f"NOT converged ({row.get('stop_reason')})"
    bound = " at a bound" if row.get("at_bound") else ""
    margin = (f" · bic {_g(row.get('bic'))}, {_g(row['bic_margin'])} below the runner-up"
              if row.get("bic_margin") is not None else "")
    lines.append(f"n_points {n} · nll {_g(nll)}{per_point}{margin} · "
                 f"{stopped}{bound} after {row['iterations']} iterations")
    if row.get("holdout_coverage_95") is not None:
        lines.append(f"holdout {row['holdout_points']} points: MASE {_g(row['holdout_mase'])} "
                     f"(scale {_g(row['holdout_scale'])}) · 95 % coverage "
                     f"{_g(row['holdout_coverage_95'])}")
    return "\n".join(lines)


def backtest(tally: Tally, mase_png: Optional[bytes]) -> Optional[Backtest]:
    """With --holdout: the backtest's totals over the run and the histogram
    of holdout_mase; None for a run without one."""
    totals = tally.holdout()
    return Backtest(totals=totals, mase_png=mase_png) if totals else None


def kernel_choice(tally: Tally, manifest: Optional[dict], margins_png: Optional[bytes]
                  ) -> Optional[Choice]:
    """Under --kernel auto: series per candidate chosen (every candidate the
    run's manifest names, chosen or not) and the bic_margin histogram. Every
    "ok" series counts, also one fitted with a single candidate (the screen
    left its periodic ones out: no bic_margin, docs/design.md "Kernel
    choice")."""
    options = (manifest or {}).get("options") or {}
    if not tally.chosen and options.get("kernel") != "auto":
        return None
    given = options.get("candidates")
    candidates = given.split(",") if given else list(FitConfig.candidates)
    names = list(dict.fromkeys([*candidates, *sorted(tally.ok_kernels)]))
    return Choice([(k, tally.ok_kernels[k], tally.close_calls[k]) for k in names],
                  sum(tally.ok_kernels.values()), CLOSE_CALL, margins_png,
                  tally.negative_margins)


def _card(pick: Pick, series: Optional[Series], spec: InputSpec,
          forecast: Optional[Curve] = None, holdout: Optional[Curve] = None,
          transform: str = scales.NONE) -> Card:
    row = pick.row
    dates = spec.time_units == DAYS
    if series is None:
        return Card(pick.series_id, pick.reasons, row["status"], None,
                    f"No rows with this id in {spec.pattern}: is it the input of this run?")
    note, curve, parts = None, None, []
    if row["status"] == OK:
        try:
            problem = scales.problem(transform, series.y, series.t)
            if problem:
                raise ValueError(f"the data read now cannot be transformed: {problem}")
            fitted = scales.transformed(transform, series)
            curve = posterior_curve(fitted, row, transform)
            parts = component_parts(fitted, row, curve.t, transform)
        except ValueError as err:
            note = f"cannot draw the posterior: {err}"
    else:
        note = f"{row['status']}: {row.get('error') or '(no message)'}"
    png = series_png(series.t, series.y, curve, title(row, transform), dates=dates, note=note,
                     forecast=forecast, parts=parts, holdout=holdout)
    return Card(pick.series_id, pick.reasons, row["status"], png, None)


def _null_ids(manifest: Optional[dict]) -> int:
    """Input rows with a null id, as the manifest counts them (0 without
    one, or where it holds no count: a manifest edited by hand)."""
    found = ((manifest or {}).get("counts") or {}).get("null_ids")
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def _warnings(run: params_io.ParamsRun, unlisted_predictions: tuple[str, ...] = (),
              missing_predictions: tuple[str, ...] = ()) -> list[str]:
    if run.manifest_name is None:
        return [f"No {SUCCESS_MARKER} in {run.folder}: that run did not finish (or is still "
                "running). This report shows the shards present, which may be incomplete "
                "or stale."]
    found = []
    if run.manifest_name == FAILED_MARKER:
        found.append(f"That run wrote {FAILED_MARKER}: more series failed than its "
                     "--max_failure_fraction allowed.")
    if run.unlisted:
        found.append(f"{len(run.unlisted)} shard(s) its {run.manifest_name} does not list were "
                     f"left out, as not this run's ({_names(run.unlisted)}): remove them from "
                     f"{run.folder}.")
    if run.missing:
        found.append(f"{len(run.missing)} shard(s) its {run.manifest_name} lists are missing "
                     f"({_names(run.missing)}): a copy cut short? Their series are not counted "
                     "here; copy the whole folder again.")
    if unlisted_predictions:
        found.append(f"{len(unlisted_predictions)} predictions shard(s) its {run.manifest_name} "
                     f"does not list were left out of the plots, as not this run's "
                     f"({_names(unlisted_predictions)}): remove them from {run.folder}.")
    if missing_predictions:
        found.append(f"{len(missing_predictions)} predictions shard(s) its {run.manifest_name} "
                     f"lists are missing ({_names(missing_predictions)}): a copy cut short? "
                     "Their series are drawn without the run's forecasts.")
    return found


def _names(names) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def _parameters(component: dict, sep: str = ", ") -> str:
    """"amplitude 2.1, length_scale 310": a component's parameters that are set."""
    return sep.join(f"{name} {_g(component[name])}" for name in ("amplitude", "length_scale",
                                                                   "period")
                    if component.get(name) is not None)


def _g(value) -> str:
    return "?" if value is None else f"{value:.4g}"


def _mean(row: dict) -> str:
    """The fitted mean to 4 digits of the series' spread s (sqrt of
    noise_variance and the stationary components' amplitude^2, as
    summary.standardised_nll's), not of its own size: 1e9 + 2e-4 on a
    spread of 1e-3 is "1000000000.0002", not "1e+09"."""
    mean = row["mean"]
    spread2 = spread_variance(row.get("noise_variance") or 0.0, row.get("components"))
    if mean is None or not (math.isfinite(mean) and mean and 0 < spread2 < math.inf):
        return _g(mean)
    digits = 4 + max(0, math.floor(math.log10(abs(mean) / math.sqrt(spread2))))
    return f"{mean:.{min(digits, 17)}g}"
