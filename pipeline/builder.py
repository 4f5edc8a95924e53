"""Builds the gpfit pipeline: ReadSeries -> FitSeries -> WriteParams -> WriteManifest.

build_from_options() is the one way from parsed options to a built pipeline,
for the `gpfit` command and for the offline Dataflow dry run
(deploy/dataflow_dry_run.py). It checks what is cheap to check first (the
options and, unless told not to, the input files and the output folder), and
loads TensorFlow only then, so that a bad invocation is refused in a moment.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Optional

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from gpcore.config import FitConfig
from pipeline import runtime
from pipeline.io import inputs, manifest, outputs
from pipeline.io.errors import UsageError
from pipeline.io.inputs import Columns, InputSpec
from pipeline.options import GPFitOptions, check, recorded


@dataclasses.dataclass(frozen=True)
class Built:
    """A gpfit pipeline, built and not run.

    Attributes:
      pipeline: the pipeline, with its runner: run() it.
      gp: gpfit's options.
      spec: the checked input; unchecked, the --input pattern alone.
      previous_files: files of an earlier gpfit run in the output folder, to
        delete (outputs.clear_output) before running; empty when the paths
        were not checked.
    """

    pipeline: beam.Pipeline
    gp: GPFitOptions
    spec: InputSpec
    previous_files: tuple[str, ...]


def build_from_options(options: PipelineOptions, check_paths: bool = True,
                       started_at: Optional[float] = None) -> Built:
    """gpfit's pipeline for parsed options (pipeline.options.parse_options).

    Args:
      options: gpfit's and Beam's options. The runner is gpfit's local
        FnApiRunner for local runs (pipeline.runtime), else the one named.
      check_paths: inspect the input (list the files, read every footer) and
        check the output folder, as `gpfit` does before any work; on gs://
        this needs the network. False for an offline dry run: the job then
        reads the --input pattern itself (Beam matches it on the workers),
        and the output folder is not looked at.
      started_at: when the run started, in seconds since the epoch (default:
        now); the manifest reports it and the wall time from it.

    Raises:
      UsageError: a bad option, unusable input or an unsafe output folder,
        in one line for stderr, found before TensorFlow loads.
    """
    gp = options.view_as(GPFitOptions)
    check(gp)
    columns = Columns(gp.id_column, gp.time_column, gp.value_column)
    if check_paths:
        spec = inputs.inspect(gp.input, columns)
        previous = tuple(outputs.check_output(gp.output, spec.files))
    else:
        spec = inputs.uninspected(gp.input, columns)
        previous = ()
    config = fit_config(gp)
    record = manifest.run_record(
        spec, gp.output, config.kernel, gp.max_failure_fraction, recorded(options),
        time.time() if started_at is None else started_at)
    pipeline = beam.Pipeline(runner=runtime.local_runner(options), options=options)
    build(pipeline, spec, config, gp.output, runtime.processes_per_machine(options), record)
    return Built(pipeline, gp, spec, previous)


def build(pipeline: beam.Pipeline, spec: InputSpec, config: FitConfig, output: str,
          processes_per_machine: Optional[int],
          record: Optional[manifest.RunRecord] = None) -> None:
    """Adds gpfit's steps to `pipeline`.

    Args:
      spec: the checked input (inputs.inspect), or inputs.uninspected(...).
      config: the fitter's configuration.
      output: the output folder, already cleared (outputs.clear_output).
      processes_per_machine: worker processes sharing a machine's cores
        (runtime.processes_per_machine), for TF's thread pools.
      record: what the manifest reports beyond the counts; default: the
        spec, the kernel, no options, started now, max_failure_fraction 1.
    """
    # The transforms load TensorFlow (gpcore's fitter): only once the cheap
    # checks have passed.
    from apache_beam.io.parquetio import WriteToParquet

    from pipeline.io.schema import OUTPUT_SCHEMA
    from pipeline.manifest_step import WriteManifest
    from pipeline.transforms import FIT_STATS, FitSeries, ReadSeries, count_status

    if record is None:
        record = manifest.run_record(spec, output, config.kernel, 1.0, {}, time.time())
    read = pipeline | "ReadSeries" >> ReadSeries(spec.files, spec.columns, config.kernel)
    fitted = read.series | "FitSeries" >> FitSeries(config, processes_per_machine)
    rows = (
        (fitted.rows, read.unfittable)
        | "AllRows" >> beam.Flatten()
        | "CountStatus" >> beam.Map(count_status)
    )
    written = rows | "WriteParams" >> WriteToParquet(
        outputs.params_prefix(output), OUTPUT_SCHEMA,
        file_name_suffix=outputs.PARAMS_SUFFIX,
        shard_name_template=outputs.SHARD_TEMPLATE)
    # Last: WriteManifest waits for `written`, the finalised shards.
    ({"rows": rows, "null_ids": read.null_ids, "fits": fitted[FIT_STATS], "written": written}
     | "WriteManifest" >> WriteManifest(record))


def fit_config(gp: GPFitOptions) -> FitConfig:
    """The fitter's configuration (gpcore.FitConfig) from gpfit's options.

    Raises:
      UsageError: an option FitConfig refuses (e.g. --min_points 0).
    """
    try:
        return FitConfig(kernel=gp.kernel, restarts=gp.restarts, min_points=gp.min_points,
                         max_points=gp.max_points, batch_size=gp.batch_size)
    except ValueError as err:
        raise UsageError(f"{err}; see gpfit --help") from err

