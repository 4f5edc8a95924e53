"""fit_frame's transform, holdout and predictions: the job's own steps
(pipeline/fitted_scale.py, pipeline/backtest.py, pipeline/forecast.py) on
the series of one call, without Beam, so that a frame gets the rows the
command writes for the same options (docs/design.md, "DataFrame API").

The backtest and the forecasts load TensorFlow (gpcore.calibration): they
are imported once the fitter is built, which loads it quietly.
"""
from __future__ import annotations

import logging
import numbers
from collections import Counter
from typing import Union

import pyarrow as pa

from gpcore import FitConfig, Series
from gpcore.result import OK
from pipeline.builder import Nightly
from pipeline.fitted_scale import on_fitted_scale as _on_fitted_scale
from pipeline.io import manifest, scales
from pipeline.io.errors import UsageError
from pipeline.io.schema import predictions_schema
from pipeline.options import check_forecast

_LOG = logging.getLogger(__name__)


def asked(transform: str, holdout: int, horizon: float, points: int, steps: int, levels,
          observed: bool, dates: bool) -> Nightly:
    """What fit_frame's options ask for, checked as the command checks its
    flags (options.check_forecast), spelled as keywords; `dates`: the
    table's t is a date or timestamp.

    Raises:
      UsageError: a transform not in TRANSFORMS, or forecast options the
        command refuses.
    """
    if transform not in scales.TRANSFORMS:
        raise UsageError(f"transform= must be one of {', '.join(scales.TRANSFORMS)}; "
                         f"got {transform!r}")
    found = check_forecast(horizon, points, steps, holdout, _levels_text(levels), option="{}=")
    return Nightly(horizon=horizon, points=points, observed=observed, dates=dates, steps=steps,
                   levels=found, transform=transform, holdout=holdout)


def _levels_text(levels) -> str:
    """predict_levels as the flag's text: a number, or any iterable of them
    (a list, a numpy array, a pandas Series), comma-separated."""
    if isinstance(levels, (str, numbers.Real)):
        return str(levels)
    try:
        return ",".join(str(level) for level in levels)
    except TypeError:  # not iterable: refused by check_forecast, shown as given
        return str(levels)


def on_fitted_scale(nightly: Nightly, config: FitConfig, key: bytes,
                    series: Series) -> Union[Series, dict]:
    """The series to fit, or its "skipped" row (fitted_scale.on_fitted_scale)."""
    if nightly.transform == scales.NONE:
        return series
    return _on_fitted_scale(nightly.transform, config.kernel_name, key, series)


def fitted_parts(nightly: Nightly, ready: list[Series]) -> list[Series]:
    """What the fitter is given of each series: all but the held-out points."""
    if not nightly.holdout:
        return ready
    holdout = _holdout(nightly)
    return [holdout.fitted_part(series) for series in ready]


def scored(nightly: Nightly, ready: list[Series], rows: list[dict]) -> list[tuple[Series, dict]]:
    """(series, its row) of each fitted series, the row scored on its held-out
    points where there are some (backtest.Holdout.scored)."""
    if nightly.holdout:
        holdout = _holdout(nightly)
        rows = [holdout.scored(series, row) for series, row in zip(ready, rows)]
    return list(zip(ready, rows))


def predictions(nightly: Nightly, fitted: list[tuple[Series, dict]]) -> pa.Table:
    """The predictions of the "ok" series (forecast.predictions, in series id
    order) as one table of the predictions' schema."""
    ok = sorted((pair for pair in fitted if pair[1]["status"] == OK),
                key=lambda pair: pair[1]["series_id"])
    if not ok:
        return schema(nightly).empty_table()
    from pipeline import forecast

    found = [forecast.predictions(series, row, nightly.plan) for series, row in ok]
    made = [p for p in found if p is not None]
    # The command says these after its run, from the manifest's counts: a
    # series without forecast rows is otherwise silent (docs/design.md,
    # "DataFrame API").
    for line in manifest.prediction_warnings(
            dict(Counter(p.no_step for p in made if p.no_step)), len(found) - len(made),
            sum(p.coarse for p in made), option="{}=", counted=False):
        _LOG.warning("gpfit: %s", line)
    return pa.concat_tables([schema(nightly).empty_table()] + [p.table for p in made])


def schema(nightly: Nightly) -> pa.Schema:
    """The predictions' schema (schema.predictions_schema) for these options."""
    return predictions_schema(nightly.dates, nightly.levels)


def _holdout(nightly: Nightly):
    from pipeline.backtest import Holdout

    return Holdout(nightly.holdout, nightly.transform)
