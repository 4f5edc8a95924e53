"""Forecast: (Series, "ok" row) -> the fitted posterior at new times.

For every "ok" series, fitted tonight or reused: forecast times past its
last finite observation (pipeline/grid.py: K = --predict_points evenly over
--predict_horizon H, or K = --predict_steps steps of the series' own median
spacing), with --predict_observed also its observed times, and with
--holdout K its last K finite points, predicted from the points before
them (the fit's data). The numerics are gpcore.predict's: one call per
series for the forecast and observed times, one for the held-out ones;
the sd of a new observation adds the fitted noise variance. Intervals at
--predict_levels are for a new observation: at forecast and held-out
times gpcore.calibration's (Student-t, widened by the mean's variance and
the rolling-origin errors; docs/design.md "Forecast intervals"), at
observed times predict's normal ones; `stddev` and `stddev_observed` are
predict's everywhere. Under --transform the mean and the bounds are
mapped back to y's scale (pipeline/io/scales.py). Each series
becomes one small pa.Table (schema.predictions_schema), joined 256 at a
time while a bundle holds them, written by WriteToParquetBatched: no
per-point Python objects.

A series whose posterior cannot be computed (predict raises ValueError),
or whose mean or bounds pass float64's largest once mapped back by the
transform (_mapped_back), gets no predictions; it is logged and
counted, and the run goes on. A
series without a step (grid.median_step), or whose forecast times cannot
be written (grid.unusable), gets no forecast rows; its reason is counted
(NO_STEP). A forecast grid coarser than a quarter of a fitted
period is counted (COARSE): the manifest step warns once per run.
"""
from __future__ import annotations

import dataclasses
import logging
from statistics import NormalDist
from typing import Optional

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.transforms.window import GlobalWindows

from gpcore import Series, calibration
from gpcore.calibration import student_t_quantile
from gpcore.predict import fitted_centre, predict
from gpcore.series import split
from pipeline import grid, metrics
from pipeline.io import columns, rows, scales
from pipeline.io.errors import first_line, shown_id
from pipeline.io.schema import (DEFAULT_LEVELS, FORECAST, HOLDOUT,
                                OBSERVED, level_name, predictions_schema)

_LOG = logging.getLogger(__name__)

PREDICTED = metrics.PREDICTED          # output tag: 1 per series predicted
NOT_PREDICTED = metrics.NOT_PREDICTED  # output tag: 1 per ok series without predictions
NO_STEP = "no_step"                    # output tag: a reason per series without a step
COARSE = "coarse_grid"                 # output tag: 1 per series whose grid hides a period


@dataclasses.dataclass(frozen=True)
class Plan:
    """What each series' predictions hold.

    Attributes:
      horizon, points: --predict_horizon H (units of t) and --predict_points K.
      steps: --predict_steps K (0: the horizon grid, if any).
      observed: also predict at the observed times.
      dates: t is a date or timestamp (written as a UTC timestamp).
      levels: interval levels, percent.
      transform: --transform (pipeline/io/scales.py).
      holdout: --holdout K (0: none).
    """

    horizon: float = 0.0
    points: int = 0
    steps: int = 0
    observed: bool = False
    dates: bool = False
    levels: tuple = DEFAULT_LEVELS
    transform: str = scales.NONE
    holdout: int = 0


@dataclasses.dataclass(frozen=True)
class Posterior:
    """One series' predictions, and what the manifest counts of them."""

    table: pa.Table
    no_step: Optional[str] = None  # why it has no forecast rows (steps only)
    coarse: bool = False           # its forecast spacing hides a fitted period


def posterior_table(series: Series, row: dict, plan: Plan) -> Posterior:
    """One series' prediction rows: forecast rows, then (observed) one per
    finite observation in time order, then (holdout) the held-out points.
    Forecast and held-out rows get the calibrated intervals
    (gpcore.calibration), observed rows predict's normal ones.

    Raises:
      ValueError: the row's parameters do not give a posterior
        (pipeline.io.rows.parameters, gpcore.predict).
    """
    t = np.asarray(series.t, dtype=np.float64)
    y = np.asarray(series.y, dtype=np.float64)
    finite = np.isfinite(t) & np.isfinite(y)
    t_obs, y_obs = (t[finite], y[finite]) if plan.observed else (t[:0], y[:0])
    t_new, written, spacing, no_step = _forecast_grid(t[finite], plan)
    params = rows.parameters(row)  # the row read back into a model, once
    cut = split(series, plan.holdout) if plan.holdout else None
    # The model is the one fitted, on the points before the held-out ones
    # under --holdout: `linear`'s centre is their midpoint, also where the
    # posterior conditions on all the points (docs/design.md, "The centre
    # c of `linear`").
    centre = fitted_centre(cut.fitted) if cut else None
    t_first = np.concatenate([t_new, t_obs])
    mean, sd = (predict(series, params, t_first, centre=centre) if t_first.size
                else (t_first, t_first))
    noise = params["noise_variance"]
    spreads = [_calibrated(series, params, t_new, mean[:t_new.size], sd[:t_new.size], noise,
                           centre),
               Spread(np.sqrt(sd[t_new.size:] ** 2 + noise))]
    kinds = [FORECAST] * t_new.size + [OBSERVED] * t_obs.size
    times, values = [t_new, t_obs], [np.full(t_new.size, np.nan), y_obs]
    if cut:
        held_mean, held_sd = predict(cut.fitted, params, cut.t_held)
        mean, sd = np.concatenate([mean, held_mean]), np.concatenate([sd, held_sd])
        spreads.append(_calibrated(cut.fitted, params, cut.t_held, held_mean, held_sd, noise))
        kinds += [HOLDOUT] * cut.t_held.size
        times.append(cut.t_held)
        values.append(cut.y_held)
    table = _table(series, noise, plan, kinds, np.concatenate(times), written,
                   np.concatenate(values), mean, sd, spreads)
    coarse = bool(t_new.size) and grid.coarse(spacing, _periods(params))
    return Posterior(table, no_step, coarse)


def predictions(series: Series, row: dict, plan: Plan) -> Optional[Posterior]:
    """posterior_table's, or None where the series' posterior cannot be
    computed or mapped back (its ValueError), said in a warning; the job's
    Forecast step and fit_frame both call it."""
    try:
        return posterior_table(series, row, plan)
    except ValueError as err:
        _LOG.warning("gpfit: no predictions for series %s: %s", shown_id(row["series_id"]),
                     first_line(err))
        return None


@dataclasses.dataclass(frozen=True)
class Spread:
    """The interval of a block of rows: mean -+ q * sd [k], q the normal
    quantile (dof None) or Student-t's with dof degrees of freedom."""

    sd: np.ndarray
    dof: Optional[float] = None

    def quantile(self, level: float) -> float:
        p = 0.5 + level / 200.0
        return NormalDist().inv_cdf(p) if self.dof is None else student_t_quantile(p, self.dof)


def _calibrated(series: Series, params: dict, t_new: np.ndarray, mean: np.ndarray,
                sd: np.ndarray, noise: float, centre: Optional[float] = None) -> Spread:
    """The calibrated spread at forecast times t_new [k] past `series`
    (gpcore.calibration, docs/design.md "Forecast intervals"), from
    predict's mean and latent sd [k] there; params: rows.parameters';
    centre: `linear`'s, as predict's."""
    if not t_new.size:
        return Spread(t_new)
    found = calibration.forecast(series, params, t_new, horizon=t_new.size,
                                 posterior=(mean, np.sqrt(sd ** 2 + noise)), centre=centre)
    return Spread(found.sd, found.dof)


def _forecast_grid(t: np.ndarray, plan: Plan
                   ) -> tuple[np.ndarray, np.ndarray, float, Optional[str]]:
    """(forecast times [k], for dates as written [k] int64 us
    (grid.written_micros; else [0]), their spacing, why there are none or
    None) past the finite times t."""
    none = np.zeros(0, dtype=np.int64)
    if plan.steps:
        step, reason = grid.median_step(t)
        if step is None:
            return t[:0], none, 0.0, reason
        spacing = grid.written_step(step, plan.dates)
        offsets = grid.step_offsets(spacing, plan.steps)
    elif plan.points:
        offsets = grid.horizon_offsets(plan.horizon, plan.points)
        spacing = plan.horizon / plan.points
    else:
        return t[:0], none, 0.0, None
    t_last = float(np.max(t))
    reason = grid.unusable(t_last, offsets, plan.dates)
    if reason:
        return t[:0], none, 0.0, reason
    written = grid.written_micros(t_last, offsets) if plan.dates else none
    return t_last + offsets, written, spacing, None


def _periods(params: dict) -> list:
    """The fitted periods (units of t) of the periodic components of
    rows.parameters' params."""
    return [c["period"] for c in params["components"] if c["kernel"] == "periodic"]


def _table(series: Series, noise: float, plan: Plan, kinds: list, times: np.ndarray,
           written: np.ndarray, values: np.ndarray, mean: np.ndarray, sd: np.ndarray,
           spreads: list) -> pa.Table:
    """The rows as predictions_schema(plan.dates, plan.levels); times [m],
    for dates the forecast rows' (the first ones) as written (int64 us,
    _forecast_grid's), the others the input's instants (columns.as_micros);
    values [m] (NaN for forecast rows), mean and latent sd [m] on the
    fitted scale, noise the fitted noise variance; spreads: the intervals'
    Spread of each block of rows, in row order."""
    sd_observed = np.sqrt(sd ** 2 + noise)
    residual = (values - mean) / sd_observed
    back = lambda z: scales.inverse(plan.transform, z)  # noqa: E731
    fitted = {"mean": mean}  # on the fitted scale
    for level in plan.levels:
        half = np.concatenate([s.quantile(level) * s.sd for s in spreads])
        fitted[f"lower_{level_name(level)}"] = mean - half
        fitted[f"upper_{level_name(level)}"] = mean + half
    on_y = _mapped_back(plan, fitted)
    if plan.dates:
        micros = np.concatenate([written, columns.as_micros(times[written.size:])])
        times = pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return pa.table({
        "series_id": pa.array([str(series.series_id)] * mean.size, pa.string()),
        "kind": pa.array(kinds, pa.string()),
        "t": times, "stddev": sd, "stddev_observed": sd_observed, **on_y,
        "y": pa.array(back(values), pa.float64(), from_pandas=True),
        "residual": pa.array(residual, pa.float64(), from_pandas=True),
    }, schema=predictions_schema(plan.dates, plan.levels))


def _mapped_back(plan: Plan, fitted: dict) -> dict:
    """fitted (column name -> its values [m] on the fitted scale) mapped
    back to y's scale by the transform's inverse.

    Raises:
      ValueError: a column not finite on y's scale: under --transform the
        inverse of a fitted-scale value past log(1.8e308) = 709.78 is inf
        (values near float64's largest, or growing toward it).
    """
    on_y = {}
    for name, z in fitted.items():
        with np.errstate(over="ignore"):  # said below, not as numpy's warning
            values = on_y[name] = scales.inverse(plan.transform, z)
        bad = ~np.isfinite(values)
        if bad.any():
            at = np.flatnonzero(bad)[0]
            if plan.transform == scales.NONE or not np.isfinite(z[at]):
                raise ValueError(f"its {name} is {values[at]}, not a finite number")
            raise ValueError(
                f"its {name} is {values[at]} on y's scale: {z[at]:.6g} on the "
                f"{scales.SCALE_NAMES[plan.transform]} scale (--transform {plan.transform}) is "
                "past float64's largest once mapped back; rescale y (e.g. divide it by a power "
                "of 10), or give NaN where a value is a code for a missing one")
    return on_y


class Forecast(beam.DoFn):
    """(Series, row) -> predictions, as pa.Tables of about ROWS_PER_TABLE
    rows (the Parquet writer makes a row group of each table it is given),
    the series' tables held joined, TABLES_JOINED at a time;
    PREDICTED: 1 per series with predictions; NOT_PREDICTED: 1 per series
    whose posterior could not be computed or mapped back; NO_STEP: the reason of a series
    without a step; COARSE: 1 per series whose forecast grid is coarser
    than a quarter of a fitted period."""

    ROWS_PER_TABLE = 65_536
    # Each pa.Table carries its own schema and buffers: a bundle's 6,554
    # tables of 10 rows held 56 MB for 5 MB of values (docs/design.md,
    # "Measured facts", *Long-running workers*), so they are held joined.
    TABLES_JOINED = 256

    def __init__(self, plan: Plan):
        self._plan = plan
        self._tables: list[pa.Table] = []  # joined, TABLES_JOINED series' each
        self._series: list[pa.Table] = []  # one per series, fewer than TABLES_JOINED
        self._rows = 0
        self._predicted = metrics.counter(metrics.PREDICTED)
        self._failed = metrics.counter(metrics.NOT_PREDICTED)

    def start_bundle(self):
        self._tables, self._series, self._rows = [], [], 0

    def process(self, pair):
        found = predictions(*pair, self._plan)
        if found is None:
            self._failed.inc()
            yield beam.pvalue.TaggedOutput(NOT_PREDICTED, 1)
            return
        if found.no_step:
            yield beam.pvalue.TaggedOutput(NO_STEP, found.no_step)
        if found.coarse:
            yield beam.pvalue.TaggedOutput(COARSE, 1)
        if not found.table.num_rows:
            return
        self._predicted.inc()
        yield beam.pvalue.TaggedOutput(PREDICTED, 1)
        self._series.append(found.table)
        self._rows += found.table.num_rows
        if len(self._series) >= self.TABLES_JOINED:
            self._tables.append(pa.concat_tables(self._series).combine_chunks())
            self._series = []
        if self._rows >= self.ROWS_PER_TABLE:
            yield self._flush()

    def finish_bundle(self):
        if self._tables or self._series:
            yield GlobalWindows.windowed_value(self._flush())

    def _flush(self) -> pa.Table:
        table = pa.concat_tables(self._tables + self._series)
        self._tables, self._series, self._rows = [], [], 0
        return table
