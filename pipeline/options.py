"""gpfit's own options, as a Beam PipelineOptions subclass.

Being PipelineOptions, they parse from the same argv as Beam's options and
also serve as Dataflow (Flex Template) parameters.
"""
from __future__ import annotations

import argparse
import difflib
import functools
import math
from typing import Optional

from apache_beam.options.pipeline_options import PipelineOptions
# Beam's own parser class: it knows add_value_provider_argument, which some
# of Beam's option classes use.
from apache_beam.options.pipeline_options import _BeamArgumentParser

# gpcore.batching and gpcore.config load no TensorFlow: `gpfit --help` stays quick.
from gpcore.batching import MAX_SECONDS_PER_CALL, SECONDS_PER_CALL
from gpcore.config import (AUTO, AUTO_BASIN_RESTARTS, BASIN_RESTARTS, CANDIDATES,
                           DENSE_MAX_POINTS, KERNELS, MARKOV_MAX_POINTS, SEARCHES, SUM_RESTARTS,
                           SYNTAX, THOROUGH, FitConfig, fitted_configs)
from gpcore.config import check_restarts as config_check_restarts
from pipeline.io.errors import (UsageError, named_arguments, read_in_another_encoding,
                                undecodable, with_value)
from pipeline.io.fingerprint import VERSION
from pipeline.io.inputs import Columns
from pipeline.io.redaction import REDACTED, redacted  # noqa: F401  (REDACTED: re-exported)
from pipeline.io.scales import NONE, TRANSFORMS
from pipeline.io.schema import level_name

# --log_level's choices: what gpfit's own lines show; tracebacks only at debug.
LOG_LEVELS = ("debug", "info", "warning", "error")
# A series with more input points (rows, or list elements) is skipped
# unassembled: bounds a worker's memory per series (16 MB of t and y).
MAX_ROWS = 1_000_000


def _boolean(text: str) -> bool:
    """'true'/'false' (as a Flex Template passes flags) -> bool."""
    if str(text).lower() in ("true", "1", "yes"):
        return True
    if str(text).lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


class GPFitOptions(PipelineOptions):
    """Input, output, model and failure policy of one gpfit run."""

    @classmethod
    def _add_argparse_args(cls, parser):
        def add(flag, metavar, help, **kwargs):  # pylint: disable=redefined-builtin
            parser.add_argument(flag, metavar=metavar, help=help, **kwargs)

        add("--input", "PATTERN", "Parquet file, folder or glob (local or gs://)")
        add("--output", "DIR", "output folder (local or gs://), empty or a gpfit run's (replaced)")
        # Sums and auto are explained in the epilog: --help keeps one line per option.
        add("--kernel", "K[+K...]|auto",
            f"K: {','.join(KERNELS)}; auto (default %(default)s)", default=FitConfig.kernel)
        add("--candidates", "K,K,...", f"kernels --kernel {AUTO} compares, comma-separated "
            "(see below)")
        add("--id_column", "COLUMN", "input column naming the series (default %(default)s)",
            default="series_id")
        add("--time_column", "COLUMN",
            "input column of times: number, date or timestamp (default %(default)s)", default="t")
        add("--value_column", "COLUMN",
            "input column of values, NaN or null = missing (default %(default)s)", default="y")
        add("--restarts", "N",
            f"most starts per series (default {BASIN_RESTARTS}, auto "
            f"{AUTO_BASIN_RESTARTS}; periodic, linear 1; sums {SUM_RESTARTS})",
            type=int, default=None)
        add("--search", "DEPTH",
            "how far to probe: thorough, balanced or quick (default %(default)s)",
            choices=SEARCHES, default=THOROUGH)
        add("--min_points", "N", "skip series with fewer finite points (default %(default)s)",
            type=int, default=FitConfig.min_points)
        add("--max_points", "N",
            f"skip longer series (default {DENSE_MAX_POINTS}; matern and their sums: "
            f"{MARKOV_MAX_POINTS})",
            type=int, default=None)
        add("--batch_size", "N", "series fitted together in one compiled call (default %(default)s)",
            type=int, default=FitConfig.batch_size)
        add("--max_failure_fraction", "F",
            "exit 1 if a larger fraction of series failed (default %(default)s)",
            type=float, default=1.0)
        add("--seconds_per_fit_call", "S",
            f"estimated core-seconds per fit call, at most {MAX_SECONDS_PER_CALL:g} "
            "(default %(default)s)",
            type=float, default=SECONDS_PER_CALL)
        add("--max_rows", "N", "skip series with more input points, unassembled (default "
            "%(default)s)",
            type=int, default=MAX_ROWS)
        add("--num_shards", "N", "output files; 0: the runner decides (default %(default)s)",
            type=int, default=0)
        add("--break_lock", "BOOL", "take over the lock of a stopped run (default %(default)s)",
            type=_boolean, nargs="?", const=True, default=False)
        add("--previous_output", "DIR",
            "previous run's output: reuse unchanged series, warm-start others")
        add("--previous_output_optional", "BOOL",
            "if that is unusable, fit all cold (default %(default)s)",
            type=_boolean, nargs="?", const=True, default=False)
        add("--predict_horizon", "H",
            "forecast this far past a series' end, units of t (default %(default)s)",
            type=float, default=0.0)
        add("--predict_points", "K",
            "forecast points per series, over the horizon (default %(default)s)",
            type=int, default=0)
        add("--predict_steps", "K",
            "forecast K steps of each series' own median spacing (default %(default)s)",
            type=int, default=0)
        add("--predict_levels", "L,L,...",
            "interval levels in percent: columns lower_L, upper_L (default %(default)s)",
            default="95")
        add("--predict_observed", "BOOL",
            "also predict at the observed times (default %(default)s)",
            type=_boolean, nargs="?", const=True, default=False)
        add("--transform", "NAME",
            "none, log or log1p: fit on log(y) or log(1 + y) (default %(default)s)",
            choices=TRANSFORMS, default=NONE)
        add("--holdout", "K",
            "backtest: hold out each series' last K points, score them (default %(default)s)",
            type=int, default=0)
        add("--log_level", "LEVEL",
            "debug (adds tracebacks), info, warning or error (default %(default)s)",
            choices=LOG_LEVELS, default="info")


def option_names() -> tuple[str, ...]:
    """gpfit's own option names (GPFitOptions'), in the order --help lists them."""
    parser = argparse.ArgumentParser(add_help=False)
    GPFitOptions._add_argparse_args(parser)  # pylint: disable=protected-access
    return tuple(action.dest for action in parser._actions)  # pylint: disable=protected-access


def recorded(options: PipelineOptions) -> dict:
    """The options a manifest records: all of gpfit's and, under "beam", the
    Beam options given (non-default, as JSON values); secrets redacted in
    both, by their structure (pipeline/io/redaction.py)."""
    gp = options.view_as(GPFitOptions)
    ours = {name: redacted(name, getattr(gp, name)) for name in option_names()}
    given = options.get_all_options(drop_default=True)
    beam_options = {k: redacted(k, v if isinstance(v, (bool, int, float, str, type(None),
                                                       list, tuple, dict)) else str(v))
                    for k, v in given.items() if k not in ours}
    return {**ours, "beam": beam_options}


def help_parser() -> argparse.ArgumentParser:
    """The parser behind `gpfit --help`: gpfit's options, one line each."""
    parser = argparse.ArgumentParser(
        prog="gpfit",
        usage="gpfit --input PATTERN --output DIR [options] [Beam options]",
        description="Fit a Gaussian process to every time series in a Parquet "
                    "data set; write one row of hyperparameters per series.",
        epilog=f"--kernel: one kernel, a sum of up to three joined by + (e.g. rbf+periodic: "
               "a trend plus a seasonal cycle; linear+rbf: a straight trend plus a smooth "
               f"wiggle), or {AUTO}: fit each of --candidates (default "
               f"{','.join(CANDIDATES)}) to every series and keep the one with "
               "the lowest BIC. matern12 is the exponential (Ornstein-Uhlenbeck) kernel: rough, "
               "and at long length scales its forecasts persist as a random walk's; linear is "
               "a straight line through the data's midpoint, its amplitude the slope's sd (y "
               "per unit of t). "
               "--restarts: for rbf and matern the starts after the first go to other "
               "basins of the start grid, and run only where the grid shows one. "
               "Any Beam pipeline option may follow, e.g. --runner DataflowRunner, "
               "--direct_num_workers 2 --direct_running_mode multi_processing. "
               "Exit codes: 0 done; 1 too many series failed; 2 bad invocation, "
               "input or output folder; 3 the job failed (a worker died, an input file "
               "unreadable); 4 the output folder is locked by another run; 5 the output's "
               "storage refused a write (full, read-only); 128+N stopped by signal N. "
               "See the README's exit-code table.",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=38,
                                                            width=108))
    GPFitOptions._add_argparse_args(parser)  # pylint: disable=protected-access
    # Not a pipeline option: the command answers it before parsing (pipeline/cli.py).
    parser.add_argument("--version", action="version", version=f"gpfit {VERSION}",
                        help="print gpfit's version and exit")
    return parser


class _RaisingParser(_BeamArgumentParser):
    """Reports a bad option as a UsageError instead of exiting."""

    def error(self, message):
        raise UsageError(f"{message}; see gpfit --help")


def parse_options(argv: list[str]) -> PipelineOptions:
    """Parses gpfit's and Beam's options from argv, strictly.

    Beam alone drops unknown flags with a warning; a CLI should refuse them,
    so that a misspelt `--kernal` is not silently ignored.

    Raises:
      UsageError: an unknown flag, a missing value or a value of the wrong
        type, or an argument that is not UTF-8 text.
    """
    check_text(argv)
    parser = _RaisingParser(allow_abbrev=False)
    # Same de-duplication as PipelineOptions.get_all_options.
    classes = {}
    for cls in PipelineOptions.__subclasses__():
        classes.setdefault(str(cls), cls)
    for cls in classes.values():
        cls._add_argparse_args(parser)  # pylint: disable=protected-access
    _, unknown = parser.parse_known_args(argv)
    if unknown:
        options = list(parser._option_string_actions)  # pylint: disable=protected-access
        raise UsageError(f"unrecognised arguments: {' '.join(unknown)}; "
                         f"{_meant(unknown, options)}")
    return PipelineOptions(argv)


def _meant(unknown: list[str], options: list[str]) -> str:
    """The advice for unknown arguments: the option the first misspelt one
    (--kernal, --predict_step=3) most likely means, gpfit's or Beam's, then
    --help."""
    for argument in unknown:
        name = argument.split("=", 1)[0]
        close = difflib.get_close_matches(name, options, n=1, cutoff=0.8) \
            if name.startswith("-") else []
        if close:
            return f"for {name}, did you mean {close[0]}? See gpfit --help"
    return "see gpfit --help"


def check_text(argv: list[str]) -> None:
    """Refuses an argument that is not UTF-8 text (a path typed or globbed
    from a folder named in Latin-1): Beam encodes every option as UTF-8, and
    failed on it as gpfit "failed unexpectedly".

    Raises:
      UsageError: naming the argument, its bytes that are not UTF-8 as \\xNN.
    """
    for flag, value in named_arguments(argv):
        shown = undecodable(value)
        if read_in_another_encoding(value):
            raise UsageError(f"{flag} '{shown}' {read_in_another_encoding(value)}")
        if shown is not None:
            raise UsageError(f"{flag} '{shown}' is not UTF-8 text, which Beam needs of every "
                             "option and file name; rename the file or folder in UTF-8, or give "
                             "a link to it under a UTF-8 name")


def check(gp: GPFitOptions) -> None:
    """Checks gpfit's options that need neither the input nor TensorFlow.

    Raises:
      UsageError: no --input or --output, an unknown kernel or candidate
        (kernel_settings), one column named by two of --id_column,
        --time_column and --value_column, a failure fraction outside [0, 1],
        a --seconds_per_fit_call not > 0 and at most MAX_SECONDS_PER_CALL,
        a negative --num_shards,
        an empty --previous_output, --previous_output_optional without
        --previous_output, a forecast horizon without points or points
        without a horizon, --predict_steps with either, bad --predict_levels
        or --holdout.
    """
    if not gp.input:
        raise UsageError("--input is required: a Parquet file, folder or glob")
    if not gp.output:
        raise UsageError("--output is required: the folder to write the parameters to")
    kernel_settings(gp)
    Columns(gp.id_column, gp.time_column, gp.value_column).check_distinct()
    if not 0.0 <= gp.max_failure_fraction <= 1.0:
        raise UsageError(f"--max_failure_fraction must be between 0 and 1; "
                         f"got {gp.max_failure_fraction:g}")
    if not 0 < gp.seconds_per_fit_call <= MAX_SECONDS_PER_CALL:  # nan, inf: False
        # Calls are bounded by it: Dataflow cannot split one (docs/design.md, "Data flow").
        raise UsageError(f"--seconds_per_fit_call must be a number > 0 and at most "
                         f"{MAX_SECONDS_PER_CALL:g}; got {gp.seconds_per_fit_call:g}")
    if gp.num_shards < 0:
        raise UsageError(f"--num_shards must be >= 0; got {gp.num_shards}")
    if gp.previous_output == "":  # `--previous_output "$LAST"` with LAST unset: not a cold run
        raise UsageError("--previous_output is empty: give the previous run's output folder, "
                         "or leave --previous_output out to fit every series cold")
    if gp.previous_output_optional and not gp.previous_output:
        raise UsageError("--previous_output_optional needs --previous_output DIR, the folder "
                         "it makes optional")
    _check_forecast(gp)


# Forecast points per series at most: each is a row in the predictions.
MAX_PREDICT_POINTS = 100_000


def _check_forecast(gp: GPFitOptions) -> None:
    check_forecast(gp.predict_horizon, gp.predict_points, gp.predict_steps, gp.holdout,
                   gp.predict_levels)


def check_forecast(horizon: float, points: int, steps: int, holdout: int, levels_text: str,
                   option: str = "--{}") -> tuple[float, ...]:
    """Checks the forecast and backtest options (--predict_horizon,
    --predict_points, --predict_steps, --holdout, --predict_levels) as the
    command and fit_frame take them; returns the levels (parse_levels).
    `option` spells the names ("{}=" for fit_frame's keywords).

    Raises:
      UsageError: a horizon without points or points without a horizon,
        steps with either, a count out of range, bad levels.
    """
    name = option.format
    given = functools.partial(with_value, option)
    if steps and (horizon or points):
        raise UsageError(f"give either {given('predict_steps', 'K')} (steps of each series' own "
                         f"spacing) or {given('predict_horizon', 'H')} "
                         f"{given('predict_points', 'K')} (one grid for all), not both")
    if not 0 <= steps <= MAX_PREDICT_POINTS:
        raise UsageError(f"{name('predict_steps')} must be between 0 and {MAX_PREDICT_POINTS}; "
                         f"got {steps}")
    if not 0 <= holdout <= MAX_PREDICT_POINTS:
        raise UsageError(f"{name('holdout')} must be between 0 and {MAX_PREDICT_POINTS} points; "
                         f"got {holdout}")
    found = parse_levels(levels_text, option)
    if not (math.isfinite(horizon) and horizon >= 0):
        raise UsageError(f"{name('predict_horizon')} must be >= 0 (units of t); got {horizon:g}")
    if not 0 <= points <= MAX_PREDICT_POINTS:
        raise UsageError(f"{name('predict_points')} must be between 0 and {MAX_PREDICT_POINTS}; "
                         f"got {points}")
    if (horizon > 0) != (points > 0):
        raise UsageError(f"forecasts need both {given('predict_horizon', 'H')} (> 0, units of t) "
                         f"and {given('predict_points', 'K')} (> 0); got H={horizon:g}, "
                         f"K={points}")
    return found


def levels(gp: GPFitOptions) -> tuple[float, ...]:
    """--predict_levels as percents (parse_levels)."""
    return parse_levels(gp.predict_levels)


def parse_levels(text, option: str = "--{}") -> tuple[float, ...]:
    """Interval levels, comma-separated, as percents, sorted, each in (0,
    100); `option` spells the name as check_forecast's.

    Raises:
      UsageError: not a comma-separated list of such numbers.
    """
    text, name = str(text), option.format("predict_levels")
    try:
        found = tuple(sorted({float(part) for part in text.split(",")}))
    except ValueError:
        found = ()
    if not found or not all(0 < level < 100 for level in found):
        raise UsageError(f"{name} must be percents between 0 and 100 separated by "
                         f"commas, e.g. 80,95; got {text!r}")
    shown = functools.partial(with_value, option, "predict_levels")
    if level_name(found[-1]) == level_name(100):
        # Its columns read as a 100 % interval, which the rule above refuses.
        raise UsageError(f"{shown(f'{found[-1]:.10g}')} names the columns lower_100, "
                         "upper_100 (six significant digits), as if a 100 % interval; give "
                         "99.9999 or less")
    # Two levels of one column name wrote a predictions file with duplicate
    # columns, which pandas and pyarrow.dataset refuse to read.
    for lower, upper in zip(found, found[1:]):
        if level_name(lower) == level_name(upper):
            raise UsageError(f"{shown(f'{lower:.10g}')} and {upper:.10g} name the same "
                             f"columns lower_{level_name(lower)}, upper_{level_name(lower)}; "
                             "give levels that differ in their first six significant digits")
    return found


def check_max_rows(max_rows: int, max_points: Optional[int], config: FitConfig,
                   option: str = "--{}") -> None:
    """Refuses max_rows below the max_points in force, the kernel's default
    included (max_points None): rows include missing values, so a lower cap
    skips series the fit would take (at 0, every series). `option` spells
    the names ("{}=" for fit_frame's keywords).

    Raises:
      UsageError: naming both values.
    """
    fitted = max(each.max_points for each in fitted_configs(config))
    if max_rows >= fitted:
        return
    whose = ("" if max_points is not None
             else f", {config.kernel_name}'s default" if config.kernel_name != AUTO
             else ", the largest of the candidates' defaults")
    rows, points = option.format("max_rows"), option.format("max_points")
    raise UsageError(f"{rows} ({max_rows}) must be >= {points} ({fitted}{whose}): "
                     f"rows include missing values; raise {rows} or lower {points}")


def names_runner(value: Optional[str], *runners: str) -> bool:
    """Whether a --runner value names one of `runners` (Beam's class names,
    e.g. "DataflowRunner") as Beam reads it: in any case, with or without
    "Runner", or as its dotted path; None (not given) names none."""
    name = (value or "").rsplit(".", 1)[-1].lower()
    name = name if name.endswith("runner") else f"{name}runner"
    return name in {runner.lower() for runner in runners}


def check_restarts(restarts: Optional[int], kernel, candidates=CANDIDATES,
                   option: str = "--{}") -> None:
    """FitConfig's own bound on restarts (gpcore.config.check_restarts: the
    points of the kernel's start grid, under auto the largest candidate's;
    --restarts 1000000 ran out of memory on every series after minutes),
    checked before the config is built so that the message names the flag.
    `option` spells the name as check_max_rows'.

    Raises:
      UsageError: naming the most the grid takes.
    """
    try:
        config_check_restarts(restarts, kernel, candidates, option)
    except ValueError as err:
        raise UsageError(str(err)) from None


def kernel_settings(gp: GPFitOptions) -> dict:
    """FitConfig's kernel settings from --kernel and --candidates, parsed
    and checked by FitConfig itself: {"kernel": a Kernel, or "auto"} plus
    "candidates" (a tuple of names) when --candidates is given.

    Raises:
      UsageError: a kernel or candidate FitConfig refuses, or --candidates
        without --kernel auto; the message names the choices.
    """
    settings = {"kernel": gp.kernel}
    if gp.candidates is not None:
        if gp.kernel != AUTO:
            raise UsageError(f"--candidates is for --kernel {AUTO}; got --kernel {gp.kernel!r}. "
                             f"Add --kernel {AUTO}, or drop --candidates")
        # Split on commas as given: a space would be refused by FitConfig, as
        # by the Flex Template's pattern.
        settings["candidates"] = tuple(gp.candidates.split(","))
    try:
        # Parsed here, once: the config takes the kernel as an object.
        settings["kernel"] = FitConfig(**settings).kernel
    except ValueError as err:
        if gp.kernel == AUTO and "candidates" in settings:
            raise UsageError(f"--candidates {gp.candidates!r}: {err}; give at least 2 kernels "
                             "separated by commas, no spaces, e.g. rbf,rbf+periodic") from err
        raise UsageError(f"--kernel must be {SYNTAX}, or {AUTO}; got {gp.kernel!r}; "
                         "see gpfit --help") from err
    return settings
