"""Builds the gpfit pipeline: ReadSeries -> [ReuseOrFit] -> FitSeries -> WriteParams
[-> Forecast -> WritePredictions] -> WriteManifest.

build_from_options() is the one way from parsed options to a built pipeline,
for the `gpfit` command and for the offline Dataflow dry run
(deploy/dataflow_dry_run.py). It checks what is cheap to check first (the
options and, unless told not to, the input files and the output folder), and
loads TensorFlow only then, so that a bad invocation is refused in a moment.
"""
from __future__ import annotations

import dataclasses
import logging
import re
import sys
import time
from typing import Optional

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineRunner

from gpcore.batching import SECONDS_PER_CALL
from gpcore.config import FitConfig, at_search, check_memory
from pipeline import dataflow, portable, runtime
from pipeline.io import files, fingerprint, inputs, lock, manifest, outputs, previous
from pipeline.io.errors import (NO_ANSWER, InputError, UsageError, first_line, listing_failure,
                                storage_error)
from pipeline.io.inputs import Columns, InputSpec
from pipeline.options import (MAX_ROWS, GPFitOptions, check, check_max_rows, check_restarts,
                              kernel_settings, levels, option_names, recorded)

_LOG = logging.getLogger("gpfit")


@dataclasses.dataclass(frozen=True)
class Built:
    """A gpfit pipeline, built and not run.

    Attributes:
      pipeline: the pipeline, with its runner: run() it.
      gp: gpfit's options.
      spec: the checked input; unchecked, the --input pattern alone.
      run_id: the run's id, for the output folder's lock (pipeline.io.lock).
      tables: the tables it writes (Nightly.tables).
    """

    pipeline: beam.Pipeline
    gp: GPFitOptions
    spec: InputSpec
    run_id: str = ""
    tables: tuple[str, ...] = (outputs.PARAMS_PREFIX,)


def build_from_options(options: PipelineOptions, check_paths: bool = True,
                       started_at: Optional[float] = None, make_folders: bool = True) -> Built:
    """gpfit's pipeline for parsed options (pipeline.options.parse_options).

    Args:
      options: gpfit's and Beam's options. The runner is gpfit's local
        FnApiRunner for local runs (pipeline.runtime), else the one named.
      check_paths: inspect the input (list the files, read a bounded sample
        of footers) and check the output folder and its lock, as `gpfit`
        does before any work; on gs:// this needs the network. False for an offline dry run: the job then
        reads the --input pattern itself (Beam matches it on the workers),
        and the output folder is not looked at.
      started_at: when the run started, in seconds since the epoch (default:
        now); the manifest reports it and the wall time from it.
      make_folders: as build's; `gpfit` makes them under its lock.

    Raises:
      UsageError: a bad option (gpfit's, or the local runner's
        --direct_num_workers) or runner (a remote job's: pipeline/dataflow.py),
        unusable input, an unsafe output folder or an unusable
        --previous_output (unless --previous_output_optional), in one line
        for stderr, found before TensorFlow loads.
    """
    gp = options.view_as(GPFitOptions)
    check(gp)
    # gs:// without the gcp extra: also where the paths are not read here
    # (a dry run), and for an optional --previous_output, which would
    # otherwise be fitted cold every night.
    files.check_reachable(gp, ("input", "output", "previous_output"))
    runtime.check_workers(options)
    runtime.check_open_files(options)
    check_type_options(options)
    config = fit_config(gp)
    if runtime.is_local(options):
        check_fit_memory(config, options)  # Dataflow's workers check their own
    runner = runtime.runner(options)
    if not runtime.is_local(options):
        portable.check_job_endpoint(options, runner)  # Beam too checks it late
        dataflow.check(options, runner)  # before the lock and the clearing: Beam checks late
    columns = Columns(gp.id_column, gp.time_column, gp.value_column)
    if gp.previous_output:  # optional or not: a mistake, named before the output's checks
        previous.check_not_output(gp.previous_output, gp.output)
    if check_paths:
        try:
            spec = inputs.inspect(gp.input, columns, inputs.MAX_FOOTERS)
        except InputError:
            # An earlier run's shards that a widened glob reaches fail as
            # input (no `t`): name that cause (docs/design.md, "Contracts").
            outputs.check_not_read_by(gp.input, gp.output, probe=False)
            raise
        inputs.check_text_names(spec.files)
        check_shards(gp.num_shards, spec)
        # Refused here, before the lock; the files to clear are listed again
        # under it (cli._prepare_output).
        outputs.check_output(gp.output, spec.files, gp.input)
        lock.check(gp.output, gp.break_lock)
    else:
        spec = inputs.uninspected(gp.input, columns)
    nightly, note = nightly_plan(gp, check_paths, spec)
    run_id = lock.new_run_id()
    record = manifest.run_record(
        spec, gp.output, config.kernel_name, gp.max_failure_fraction, recorded(options),
        time.time() if started_at is None else started_at, run_id,
        previous_output=nightly.previous, previous_note=note, predict=nightly.predict_record)
    pipeline = _pipeline(options, runner)
    build(pipeline, spec, config, gp.output, runtime.processes_per_machine(options), record,
          Sizes(gp.seconds_per_fit_call, gp.max_rows, gp.num_shards), nightly, make_folders)
    return Built(pipeline, gp, spec, run_id, nightly.tables)


def check_type_options(options: PipelineOptions) -> None:
    """Refuses Beam's type checks that gpfit's job does not pass: with
    --runtime_type_check Beam's own Parquet sink failed the job at the
    write (exit 3, the output folder cleared); with --type_check_strictness
    ALL_REQUIRED the build failed 'unexpectedly' (exit 3).

    Raises:
      UsageError: naming the option.
    """
    from apache_beam.options.pipeline_options import TypeOptions

    types = options.view_as(TypeOptions)
    if types.runtime_type_check:
        raise UsageError("--runtime_type_check: gpfit's job does not pass it (Beam's own Parquet "
                         "sink fails it at the write); leave it out, or give "
                         "--performance_runtime_type_check")
    if types.type_check_strictness == "ALL_REQUIRED":
        raise UsageError("--type_check_strictness ALL_REQUIRED: gpfit's job does not declare "
                         "every transform's types; leave it out")


def check_shards(num_shards: int, spec: InputSpec) -> None:
    """Refuses more output shards than the input has rows (so more than it
    has series): Beam writes every shard asked for, those past the series
    empty, and a mistyped --num_shards 1000000 wrote empty files for
    minutes. Checked where every footer was read (spec.rows is then exact).

    Raises:
      UsageError: num_shards over the input's rows.
    """
    if spec.footers_checked == len(spec.files) and spec.rows is not None \
            and num_shards > spec.rows:
        raise UsageError(f"--num_shards {num_shards} is more than the input's {spec.rows} rows "
                         "(at most one row a series: every shard past the series would be an "
                         "empty file); give fewer, or 0 to let the runner decide")


# Beam's Pipeline() checks its own options against the runner (a project ID,
# the temp location) and raises a ValueError of this prefix, one error a line.
_BEAM_REFUSED = "Pipeline has validations errors:"


def _pipeline(options: PipelineOptions, runner: PipelineRunner) -> beam.Pipeline:
    """A Beam pipeline on the runner (runtime.runner) of options.

    Raises:
      UsageError: Beam refuses the options (what it found, in one line), or
        could not check them (README, "Exit codes").
    """
    try:
        return beam.Pipeline(runner=runner, options=options)
    except ImportError as err:  # --pickle_library dill without dill: "failed unexpectedly"
        raise UsageError(f"Beam refuses the options: {first_line(err)}") from err
    except ValueError as err:
        if not str(err).startswith(_BEAM_REFUSED):
            raise
        found = "; ".join(line.strip() for line in str(err)[len(_BEAM_REFUSED):].splitlines()
                          if line.strip())
        raise UsageError(f"Beam refuses the options: {found}") from err
    except Exception as err:  # Beam's checks asked Google Cloud, which never answered
        if listing_failure(err) != NO_ANSWER:
            raise
        raise UsageError(f"Beam could not check the runner's options (without --temp_location "
                         f"it makes a gs:// bucket for them): {NO_ANSWER}") from err


@dataclasses.dataclass(frozen=True)
class Nightly:
    """What a run takes from the previous one, and what it predicts.

    Attributes:
      previous: the previous output folder compared against, or None.
      previous_kernel: the kernel it fitted (its manifest's); None if unknown.
      horizon: forecast horizon past each series' last time, units of t; 0: none.
      points: forecast points per series over the horizon; 0: none.
      observed: also predict at the observed times.
      dates: the input's t is a date or timestamp (predictions' t is then one).
      steps: forecast steps of each series' own spacing; 0: none.
      levels: interval levels of the predictions, percent.
      transform: the scale y is fitted on (pipeline/io/scales.py).
      holdout: points held out of each fit and forecast; 0: none.
    """

    previous: Optional[str] = None
    previous_kernel: Optional[str] = None
    horizon: float = 0.0
    points: int = 0
    observed: bool = False
    dates: bool = False
    steps: int = 0
    levels: tuple = (95.0,)
    transform: str = "none"
    holdout: int = 0

    @property
    def predicts(self) -> bool:
        return self.points > 0 or self.steps > 0 or self.observed or self.holdout > 0

    @property
    def plan(self):
        """The Forecast step's pipeline.forecast.Plan."""
        from pipeline.forecast import Plan

        return Plan(self.horizon, self.points, self.steps, self.observed, self.dates,
                    self.levels, self.transform, self.holdout)

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables the run writes (pipeline.io.outputs' folders)."""
        return ((outputs.PARAMS_PREFIX, outputs.PREDICTIONS_PREFIX) if self.predicts
                else (outputs.PARAMS_PREFIX,))

    @property
    def predict_record(self) -> Optional[dict]:
        """The manifest's record of the predictions asked for, or None."""
        if not self.predicts:
            return None
        return {"horizon": self.horizon, "points": self.points, "steps": self.steps,
                "observed": self.observed, "levels": list(self.levels),
                "transform": self.transform, "holdout": self.holdout}


def nightly_plan(gp: GPFitOptions, check_paths: bool, spec: InputSpec
                 ) -> tuple[Nightly, Optional[str]]:
    """(the Nightly of these options, why --previous_output is not used or None).

    With check_paths the previous output is checked (pipeline.io.previous);
    without (an offline build), the job reads whatever shards match there.

    Raises:
      UsageError: an unusable --previous_output without --previous_output_optional.
    """
    folder, kernel, note = gp.previous_output or None, None, None
    if folder and check_paths:
        try:
            found = previous.check(folder, gp.output)
        except previous.Unusable as err:
            if not gp.previous_output_optional:
                raise
            folder, note = None, f"every series fitted cold: {err.reason}"
            _LOG.warning("gpfit: %s", note)
        else:
            kernel = found.kernel
            # Said once, here: the job's counts say only "0 reused". Another
            # release's options are not read: its version says it all.
            refitted = (previous.version_note(found) or previous.options_note(
                found, changed_fit_options(found.options, gp)))
            if refitted:
                _LOG.info("gpfit: %s", refitted)
    return Nightly(folder, kernel, gp.predict_horizon, gp.predict_points,
                   bool(gp.predict_observed), spec.time_units == inputs.DAYS,
                   gp.predict_steps, levels(gp), gp.transform, gp.holdout), note


def changed_fit_options(then: Optional[dict], gp: GPFitOptions
                        ) -> list[tuple[str, object, object]]:
    """gpfit's options whose change since a previous run changes every
    series' fingerprint, as (option, then, now) in --help's order; [] where
    none does or the options `then` (its manifest's) do not make a config.

    The fingerprint decides (fingerprint.options_key; docs/design.md,
    "Reuse"): an option counts where tonight's value alone, put into the
    previous run's options, or the previous value alone, put into
    tonight's, changes their key, or where neither makes a config (as
    --candidates beside another --kernel): batch size, predictions and paths
    never do, nor --max_rows, which alone makes no config beside the other
    night's --max_points.
    """
    names = [name for name in option_names() if then and name in then]
    if not names:
        return []
    now = {name: getattr(gp, name) for name in names}
    try:
        before, after = _fingerprint_key(then), _fingerprint_key(now)
    except UsageError:  # not this release's options: nothing to tell
        return []
    if before == after:
        return []
    changed = []
    for name in names:
        if then[name] == now[name]:
            continue
        keys = (_key_or_none({**then, name: now[name]}), _key_or_none({**now, name: then[name]}))
        if keys == (None, None) or keys[0] not in (None, before) or keys[1] not in (None, after):
            changed.append((name, then[name], now[name]))
    return changed


def _key_or_none(values: dict) -> Optional[bytes]:
    """_fingerprint_key, or None where the options make no config."""
    try:
        return _fingerprint_key(values)
    except UsageError:
        return None


def _fingerprint_key(values: dict) -> bytes:
    """fingerprint.options_key of gpfit's options `values` ({name: value})."""
    gp = PipelineOptions(flags=[], **{name: values[name] for name in option_names()
                                      if name in values}).view_as(GPFitOptions)
    return fingerprint.options_key(fit_config(gp), gp.transform, gp.holdout)


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How the job cuts its work and output.

    Attributes:
      seconds_per_fit_call: estimated core-seconds per fit call (gpcore.batching).
      max_rows: series with more input points are skipped unassembled.
      num_shards: output files; 0 lets the runner decide.
    """

    seconds_per_fit_call: float = SECONDS_PER_CALL
    max_rows: int = MAX_ROWS
    num_shards: int = 0


def build(pipeline: beam.Pipeline, spec: InputSpec, config: FitConfig, output: str,
          processes_per_machine: Optional[int],
          record: Optional[manifest.RunRecord] = None, sizes: Sizes = Sizes(),
          nightly: Nightly = Nightly(), make_folders: bool = True) -> None:
    """Adds gpfit's steps to `pipeline`.

    Args:
      spec: the checked input (inputs.inspect), or inputs.uninspected(...).
      config: the fitter's configuration.
      output: the output folder, already cleared (outputs.clear_output).
      processes_per_machine: worker processes sharing a machine's cores
        (runtime.processes_per_machine), for TF's thread pools.
      record: what the manifest reports beyond the counts; default: the
        spec, the kernel, no options, started now, max_failure_fraction 1.
      sizes: fit calls, the cap on a series' rows, output shards.
      nightly: the previous output to compare against, the predictions.
      make_folders: make a local output's folders now (Beam's local rename
        needs the tables'). `gpfit` makes them as it clears the folder,
        under its lock (outputs.clear_output): made at the build, before
        the lock, a stop or refusal of a run into a new folder left them
        (docs/design.md, "Output folder").
    """
    # The transforms load TensorFlow (gpcore's fitter): only once the cheap
    # checks have passed.
    import_tensorflow()
    from apache_beam.io.parquetio import WriteToParquet, WriteToParquetBatched

    from pipeline import backtest, fitted_scale, forecast
    from pipeline.io import fingerprint, scales
    from pipeline.io.schema import OUTPUT_SCHEMA, predictions_schema
    from pipeline.manifest_step import WriteManifest
    from pipeline.previous import ReuseOrFit
    from pipeline.reading import ReadSeries
    from pipeline.transforms import FIT_STATS, FITTED, FitSeries, count_status

    if record is None:
        record = manifest.run_record(spec, output, config.kernel_name, 1.0, {}, time.time(),
                                     predict=nightly.predict_record)
    if make_folders:
        try:
            outputs.make_table_folders(output, nightly.tables)  # local: Beam renames into them
        except OSError as err:  # a folder the storage will not make: exit 5, not a crash
            raise storage_error(err, output) or err
    key = fingerprint.options_key(config, nightly.transform, nightly.holdout)
    read = pipeline | "ReadSeries" >> ReadSeries(spec, config.kernel_name, sizes.max_rows, key)
    series, extra, unfittable = read.series, {}, [read.unfittable]
    if nightly.transform != scales.NONE:
        scaled = series | "ToFittedScale" >> beam.ParDo(fitted_scale.ToFittedScale(
            nightly.transform, config.kernel_name, key)).with_outputs(fitted_scale.UNTRANSFORMABLE,
                                                                  main="series")
        series = scaled.series
        unfittable.append(scaled[fitted_scale.UNTRANSFORMABLE])
    reused_rows, kept = [], []
    if nightly.previous:
        reuse = series | "ReuseOrFit" >> ReuseOrFit(nightly.previous, nightly.previous_kernel,
                                                    config, key)
        series, reused_rows, kept = reuse.to_fit, [reuse.reused], [reuse.kept]
        extra.update(warm_starts_offered=reuse.offered,
                     previous_unreadable_shards=reuse.unreadable | "CountUnread" >> beam.Map(
                         lambda _: 1))
    fitted = series | "FitSeries" >> FitSeries(config, processes_per_machine,
                                                sizes.seconds_per_fit_call,
                                                keep_series=nightly.predicts,
                                                fingerprint_key=key,
                                                holdout=backtest.Holdout(
                                                    nightly.holdout, nightly.transform)
                                                if nightly.holdout else None,
                                                transform=nightly.transform)
    rows = (
        (fitted.rows, *unfittable, *reused_rows)
        | "AllRows" >> beam.Flatten()
        | "CountStatus" >> beam.Map(count_status)  # and completed: every OUTPUT_SCHEMA column
    )
    written = rows | "WriteParams" >> WriteToParquet(
        outputs.params_prefix(output), OUTPUT_SCHEMA,  # -> <output>/params/part-...
        file_name_suffix=outputs.PARAMS_SUFFIX,
        shard_name_template=outputs.SHARD_TEMPLATE,
        codec=outputs.PARAMS_CODEC, num_shards=sizes.num_shards,
        # components as the Parquet spec lays out a list (list/element, not
        # Beam's default list/item), which BigQuery's list inference reads.
        use_compliant_nested_type=True)
    if nightly.predicts:
        tables = ((fitted[FITTED], *kept)
                  | "ToPredict" >> beam.Flatten()
                  | "Forecast" >> beam.ParDo(forecast.Forecast(nightly.plan))
                  .with_outputs(forecast.PREDICTED, forecast.NOT_PREDICTED, forecast.NO_STEP,
                                forecast.COARSE, main="tables"))
        extra.update(predicted=tables[forecast.PREDICTED],
                     not_predicted=tables[forecast.NOT_PREDICTED],
                     no_step=tables[forecast.NO_STEP], coarse_grid=tables[forecast.COARSE],
                     predictions_written=tables.tables | "WritePredictions" >> WriteToParquetBatched(
                         outputs.params_prefix(output, outputs.PREDICTIONS_PREFIX),
                         predictions_schema(nightly.dates, nightly.levels),
                         file_name_suffix=outputs.PARAMS_SUFFIX,
                         shard_name_template=outputs.SHARD_TEMPLATE,
                         codec=outputs.PARAMS_CODEC, num_shards=sizes.num_shards))
    # Last: WriteManifest waits for `written`, the finalised shards.
    ({"rows": rows, "null_ids": read.null_ids, "fits": fitted[FIT_STATS], "files": read.files,
      "unreadable": read.unreadable, "written": written, **extra}
     | "WriteManifest" >> WriteManifest(record))


def import_tensorflow() -> None:
    """Imports TensorFlow and TFP without their start-up lines (gpcore/quiet.py)
    and without JAX.

    TensorFlow's TFLite helpers import JAX at TensorFlow's own import
    wherever it is installed (as in an environment that runs the JAX peer of
    the benchmarks), and gpfit uses neither (its cost: docs/design.md,
    "Start-up"). JAX is blocked only while TensorFlow loads, and only if
    nothing imported it before; `import jax` works afterwards.
    """
    from gpcore import quiet

    blocked = "jax" not in sys.modules
    if blocked:
        sys.modules["jax"] = None  # an ImportError, which TensorFlow expects
    try:
        quiet.import_tensorflow(keep_lines=_LOG.isEnabledFor(logging.DEBUG))
    finally:
        if blocked and sys.modules.get("jax", 0) is None:
            del sys.modules["jax"]


def check_fit_memory(config: FitConfig, options: PipelineOptions) -> None:
    """Refuses, up front, a --max_points whose fits would outgrow this
    machine (gpcore.config.check_memory), for a run that fits here: every
    fitter the local runner runs side by side (its worker processes, each
    with its share of the cores: runtime.fitters_per_machine) holding a
    compiled batch at once; each fitter checks its own batch again where it
    is built.

    Raises:
      UsageError: naming --max_points, the memory and what to lower.
    """
    try:
        check_memory(config, fitters=runtime.fitters_per_machine(options))
    except ValueError as err:
        said = re.sub(r"\b(max_points|batch_size)\b", r"--\1", str(err))
        said = said.replace("fewer worker processes or cores",
                            "--direct_num_workers, or TF_NUM_INTRAOP_THREADS above 1")
        raise UsageError(f"{said}; see gpfit --help") from err


def fit_config(gp: GPFitOptions) -> FitConfig:
    """The fitter's configuration (gpcore.FitConfig) from gpfit's options.

    Raises:
      UsageError: an option FitConfig refuses (e.g. --min_points 0).
    """
    kernel = kernel_settings(gp)  # its own UsageError, naming the kernels
    check_restarts(gp.restarts, **kernel)  # before FitConfig's, which names its field
    try:
        config = at_search(gp.search, **kernel, restarts=gp.restarts,
                           min_points=gp.min_points, max_points=gp.max_points,
                           batch_size=gp.batch_size)
    except ValueError as err:
        # FitConfig names its fields; the user gave flags.
        said = re.sub(r"\b(restarts|min_points|max_points|batch_size)\b", r"--\1", str(err))
        raise UsageError(f"{said}; see gpfit --help") from err
    check_max_rows(gp.max_rows, gp.max_points, config)
    return config

