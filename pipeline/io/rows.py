"""The parameters table's row, both ways: made from a fit, and read back into
the parameters a warm start and a forecast use.

A row is a dict of schema.OUTPUT_COLUMNS, in that order: the FIT columns
from gpcore's FitResult, the RUN columns (`reused`, `fingerprint`) from
the job, the BACKTEST columns null until pipeline/backtest.py scores the
row. A reused row is the previous run's, read back (pipeline/previous.py).
"""
from __future__ import annotations

from typing import Mapping, Optional

from gpcore.result import OK, FitResult
from pipeline.io.schema import FIT_COLUMNS, HOLDOUT_COLUMNS, PARAMETERS


def of_fit(result: FitResult, fingerprint: Optional[str]) -> dict:
    """A fit's output row: its fields, not reused, with the series'
    fingerprint (pipeline/io/fingerprint.py), the holdout columns null."""
    fit = result.to_row()
    return {**{name: fit[name] for name in FIT_COLUMNS}, "reused": False,
            "fingerprint": fingerprint, **dict.fromkeys(HOLDOUT_COLUMNS)}


def parameters(row: Mapping) -> dict:
    """The fitted parameters of an "ok" row (schema.PARAMETERS), checked,
    as gpcore takes them (gpcore.predict.checked_params: floats, and
    `components` for a single kernel too): the one reading of a row back
    into a model, for warm starts, forecasts, backtests and the report.

    Raises:
      ValueError: the row is not "ok", or its parameters give no model
        (missing, not finite, out of range).
    """
    if row.get("status") != OK:
        raise ValueError(f"series {row.get('series_id')!r} has status {row.get('status')!r}, "
                         "not 'ok'; only fitted series have parameters")
    from gpcore.predict import checked_params  # TensorFlow: only where a model is used
    return checked_params({name: row.get(name) for name in PARAMETERS})
