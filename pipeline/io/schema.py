"""The output tables' explicit Arrow schemas: the parameters (one row per
input series) and the predictions.

COLUMNS is the parameters table's one list of columns: the schema, the
column order, the previous output's keys and the report's columns are all
read from it (docs/design.md, "Contracts"). Each column says who fills it:
the fit (a gpcore FitResult field of that name), the run (reuse and the
fingerprint: pipeline/io/rows.py) or the backtest (--holdout).

Explicit, not inferred: a shard whose rows are all "skipped" would otherwise
get null-typed parameter columns, and shards of one output would disagree.
The types are plain (string, int64, float64, bool, and one list of structs:
a repeated record) so that pandas, DuckDB and
BigQuery read the files as they are.
"""
from __future__ import annotations

import dataclasses

import pyarrow as pa

FIT, RUN, BACKTEST = "fit", "run", "backtest"  # who fills a column (Column.source)


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of the parameters table.

    Attributes:
      source: FIT (gpcore.FitResult's field of this name), RUN (set by the
        job: pipeline/io/rows.py) or BACKTEST (--holdout K,
        pipeline/backtest.py; null without it).
      parameter: a fitted parameter: what a warm start and a forecast read
        back from a row (rows.parameters; FitResult.params' keys).
    """

    name: str
    type: pa.DataType
    nullable: bool
    doc: str
    source: str = FIT
    parameter: bool = False

    @property
    def field(self) -> pa.Field:
        return pa.field(self.name, self.type, nullable=self.nullable,
                        metadata={"description": self.doc})


def _field(name: str, type_: pa.DataType, nullable: bool, doc: str) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"description": doc})


COMPONENT_TYPE = pa.struct([  # gpcore.result.COMPONENT_FIELDS, in order
    pa.field("kernel", pa.string()),
    pa.field("amplitude", pa.float64()),
    pa.field("length_scale", pa.float64()),
    pa.field("period", pa.float64()),
])

COLUMNS = (
    Column("series_id", pa.string(), False, "input series id, as a string"),
    Column("status", pa.string(), False, "ok, skipped (not fittable) or failed"),
    Column("error", pa.string(), True, "why the series was skipped or failed; null if ok"),
    Column("kernel", pa.string(), False, "covariance kernel fitted", parameter=True),
    Column("n_points", pa.int64(), False, "finite observations used"),
    Column("mean", pa.float64(), True, "constant mean, units of y", parameter=True),
    Column("amplitude", pa.float64(), True,
           "kernel standard deviation, units of y (linear: the slope's, y per unit of t)",
           parameter=True),
    Column("length_scale", pa.float64(), True,
           "length scale, units of t (days for date/timestamp t); unitless for periodic; "
           "null for linear", parameter=True),
    Column("period", pa.float64(), True, "period, units of t; null unless kernel is periodic",
           parameter=True),
    Column("noise_variance", pa.float64(), True, "observation noise variance, units of y^2",
           parameter=True),
    Column("components", pa.list_(COMPONENT_TYPE), True,
           "each kernel of the (summed) kernel with its own amplitude (units of y; "
           "linear: y per unit of t), "
           "length scale and period (as the flat columns); null if not ok", parameter=True),
    Column("nll", pa.float64(), True,
           "negative log marginal likelihood of the observed points (nats)"),
    Column("bic", pa.float64(), True,
           "Bayesian information criterion 2 nll + k log n_points; null if not ok"),
    Column("bic_margin", pa.float64(), True,
           "runner-up candidate's bic minus this bic under kernel auto; else null"),
    Column("converged", pa.bool_(), False, "the optimiser met its tolerance"),
    Column("stop_reason", pa.string(), True,
           "why the optimiser stopped: converged, max_iterations or stalled; null if not ok"),
    Column("at_bound", pa.bool_(), False,
           "a parameter ended at a bound of its search range (see docs/design.md)"),
    Column("iterations", pa.int64(), False, "optimiser iterations"),
    Column("warm_started", pa.bool_(), False,
           "the fit also started from the previous run's parameters"),
    Column("reused", pa.bool_(), False,
           "copied from the previous run's output: the series and options were unchanged",
           source=RUN),
    Column("fingerprint", pa.string(), True,
           "hash of the series' finite points, the fit options and the gpfit version",
           source=RUN),
    Column("holdout_points", pa.int64(), True,
           "points held out of the fit and forecast (--holdout); null without it",
           source=BACKTEST),
    Column("holdout_mase", pa.float64(), True,
           "mean absolute error on the held-out points / holdout_scale; null without them",
           source=BACKTEST),
    Column("holdout_coverage_95", pa.float64(), True,
           "fraction of held-out points inside the 95 % interval for a new observation",
           source=BACKTEST),
    Column("holdout_scale", pa.float64(), True,
           "MASE's scale: mean |y_i - y_(i-1)| over the fitted points (one-step naive), "
           "units of y", source=BACKTEST),
)

OUTPUT_SCHEMA = pa.schema([column.field for column in COLUMNS])
OUTPUT_COLUMNS = tuple(column.name for column in COLUMNS)
# The columns a FitResult fills (FitResult.to_row's keys, a test keeps them equal).
FIT_COLUMNS = tuple(c.name for c in COLUMNS if c.source == FIT)
# The fitted parameters, in column order (FitResult.params' keys).
PARAMETERS = tuple(c.name for c in COLUMNS if c.parameter)
# The backtest's columns: null without --holdout, absent from older releases' shards.
HOLDOUT_COLUMNS = tuple(c.name for c in COLUMNS if c.source == BACKTEST)


def named(*names: str) -> tuple[str, ...]:
    """names, each checked to be a column of the parameters table: what a
    reader of some columns (the report) declares them with.

    Raises:
      KeyError: a name that is no output column.
    """
    unknown = [name for name in names if name not in OUTPUT_COLUMNS]
    if unknown:
        raise KeyError(f"not output columns: {unknown}")
    return names


def completed(row: dict) -> dict:
    """An output row with every OUTPUT_SCHEMA column: those an older
    release's shard lacks (HOLDOUT_COLUMNS) become null."""
    missing = [name for name in HOLDOUT_COLUMNS if name not in row]
    return {**row, **dict.fromkeys(missing)} if missing else row


# The posterior rows written with --predict_* and --holdout
# (pipeline/forecast.py): one row per series and time.
FORECAST, OBSERVED, HOLDOUT = "forecast", "observed", "holdout"  # values of `kind`
MICROSECONDS_PER_DAY = 86_400_000_000
DEFAULT_LEVELS = (95.0,)


def level_name(level: float) -> str:
    """80 -> "80", 99.5 -> "99.5": the L of the columns lower_L, upper_L."""
    return f"{level:g}"


def interval_columns(levels) -> list[str]:
    """["lower_80", "upper_80", "lower_95", "upper_95"] for levels (80, 95)."""
    return [f"{side}_{level_name(level)}" for level in levels for side in ("lower", "upper")]


def predictions_schema(dates: bool, levels=DEFAULT_LEVELS) -> pa.Schema:
    """The predictions' schema; `t` is a UTC timestamp (us) when the input's
    t was a date or timestamp (`dates`), else float64 in the input's units;
    lower_L and upper_L for each level L (percent) of --predict_levels.
    Under --transform, mean and the bounds are on the original scale, the
    stddevs and the residual on the transformed one (docs/design.md,
    "Contracts")."""
    t_type = pa.timestamp("us", tz="UTC") if dates else pa.float64()
    bounds = [_field(f"{side}_{level_name(level)}", pa.float64(), False,
                     f"{side} end of the central {level_name(level)} % interval for a new "
                     "observation (f plus noise), units of y")
              for level in levels for side in ("lower", "upper")]
    return pa.schema([
        _field("series_id", pa.string(), False, "input series id, as a string"),
        _field("kind", pa.string(), False,
               "forecast (past the last observation), observed (at an observed time) or "
               "holdout (a point held out of the fit, --holdout)"),
        _field("t", t_type, False, "time of the prediction, as the input's t"),
        _field("mean", pa.float64(), False,
               "posterior mean, units of y (under --transform: the median)"),
        _field("stddev", pa.float64(), False,
               "posterior standard deviation of the latent function f, units of y "
               "(under --transform: of the transformed y)"),
        _field("stddev_observed", pa.float64(), False,
               "standard deviation of a new observation (f plus noise), units of y "
               "(under --transform: of the transformed y)"),
        *bounds,
        _field("y", pa.float64(), True, "the observed value; null for forecast rows"),
        _field("residual", pa.float64(), True,
               "(y - mean) / stddev_observed at an observed or held-out time (transformed "
               "scale under --transform); null for forecast rows"),
    ])
