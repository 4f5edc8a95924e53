"""Forecast: (Series, "ok" row) -> the fitted posterior at new times.

For every "ok" series, fitted tonight or reused, K = --predict_points times
evenly spaced in (t_last, t_last + H], H = --predict_horizon (units of t;
days for dates and timestamps), and with --predict_observed also its
observed times. The numerics are gpcore.predict's: one call per series
gives the latent f's mean and sd; the sd of a new observation adds the
fitted noise variance (what predict's include_noise adds). Each series
becomes one small pa.Table (schema.predictions_schema), written by
WriteToParquetBatched: no per-point Python objects.

A series whose posterior cannot be computed (predict raises ValueError)
gets no predictions; it is logged and counted, and the run goes on.
"""
from __future__ import annotations

import logging

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.transforms.window import GlobalWindows

from gpcore import Series
from gpcore.predict import predict
from pipeline import metrics
from pipeline.io.errors import first_line
from pipeline.io.schema import FORECAST, MICROSECONDS_PER_DAY, OBSERVED, predictions_schema

_LOG = logging.getLogger(__name__)

PREDICTED = metrics.PREDICTED          # output tag: 1 per series predicted
NOT_PREDICTED = metrics.NOT_PREDICTED  # output tag: 1 per ok series without predictions


def forecast_times(t_last: float, horizon: float, points: int) -> np.ndarray:
    """[points] times evenly spaced in (t_last, t_last + horizon]."""
    return t_last + horizon * np.arange(1, points + 1, dtype=np.float64) / max(points, 1)


def posterior_table(series: Series, row: dict, horizon: float, points: int, observed: bool,
                    dates: bool) -> pa.Table:
    """One series' prediction rows: `points` forecast rows, then (observed)
    one per finite observation, in time order.

    Raises:
      ValueError: the row's parameters do not give a posterior (gpcore.predict).
    """
    t = np.asarray(series.t, dtype=np.float64)
    y = np.asarray(series.y, dtype=np.float64)
    finite = np.isfinite(t) & np.isfinite(y)
    t_obs, y_obs = (t[finite], y[finite]) if observed else (t[:0], y[:0])
    t_new = forecast_times(float(np.max(t[finite])), horizon, points) if points else t[:0]
    mean, sd = predict(series, row, np.concatenate([t_new, t_obs]))
    sd_observed = np.sqrt(sd ** 2 + float(row["noise_variance"]))
    n_new = t_new.size
    values = np.full(mean.size, np.nan)
    values[n_new:] = y_obs
    residual = (values - mean) / sd_observed
    times = np.concatenate([t_new, t_obs])
    if dates:
        times = pa.array(np.round(times * MICROSECONDS_PER_DAY).astype(np.int64),
                         pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return pa.table({
        "series_id": pa.array([str(series.series_id)] * mean.size, pa.string()),
        "kind": pa.array([FORECAST] * n_new + [OBSERVED] * (mean.size - n_new), pa.string()),
        "t": times, "mean": mean, "stddev": sd, "stddev_observed": sd_observed,
        "y": pa.array(values, pa.float64(), from_pandas=True),
        "residual": pa.array(residual, pa.float64(), from_pandas=True),
    }, schema=predictions_schema(dates))


class Forecast(beam.DoFn):
    """(Series, row) -> predictions, as pa.Tables of about ROWS_PER_TABLE
    rows (the Parquet writer makes a row group of each table it is given);
    PREDICTED: 1 per series predicted; NOT_PREDICTED: 1 per series whose
    posterior could not be computed."""

    ROWS_PER_TABLE = 65_536

    def __init__(self, horizon: float, points: int, observed: bool, dates: bool):
        self._args = (horizon, points, observed, dates)
        self._tables: list[pa.Table] = []
        self._rows = 0
        self._predicted = metrics.counter(metrics.PREDICTED)
        self._failed = metrics.counter(metrics.NOT_PREDICTED)

    def start_bundle(self):
        self._tables, self._rows = [], 0

    def process(self, pair):
        series, row = pair
        try:
            table = posterior_table(series, row, *self._args)
        except ValueError as err:
            _LOG.warning("gpfit: no predictions for series %s: %s", row["series_id"],
                         first_line(err))
            self._failed.inc()
            yield beam.pvalue.TaggedOutput(NOT_PREDICTED, 1)
            return
        self._predicted.inc()
        yield beam.pvalue.TaggedOutput(PREDICTED, 1)
        self._tables.append(table)
        self._rows += table.num_rows
        if self._rows >= self.ROWS_PER_TABLE:
            yield self._flush()

    def finish_bundle(self):
        if self._tables:
            yield GlobalWindows.windowed_value(self._flush())

    def _flush(self) -> pa.Table:
        table = pa.concat_tables(self._tables)
        self._tables, self._rows = [], 0
        return table
