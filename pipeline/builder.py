"""Builds the gpfit pipeline: ReadSeries -> FitSeries -> WriteParams."""
from __future__ import annotations

from typing import Optional

import apache_beam as beam
from apache_beam.io.parquetio import WriteToParquet

from gpcore import FitConfig
from pipeline import outputs
from pipeline.inputs import InputSpec
from pipeline.schema import OUTPUT_SCHEMA
from pipeline.transforms import UNFITTABLE, FitSeries, ReadSeries, count_status


def build(pipeline: beam.Pipeline, spec: InputSpec, config: FitConfig, output: str,
          processes_per_machine: Optional[int]) -> None:
    """Adds gpfit's steps to `pipeline`.

    Args:
      spec: the checked input (inputs.inspect).
      config: the fitter's configuration.
      output: the output folder, already cleared (outputs.clear_output).
      processes_per_machine: worker processes sharing a machine's cores
        (workers.processes_per_machine), for TF's thread pools.
    """
    series = pipeline | "ReadSeries" >> ReadSeries(spec.files, spec.columns, config.kernel)
    fitted = series.series | "FitSeries" >> FitSeries(config, processes_per_machine)
    (
        (fitted, series[UNFITTABLE])
        | "AllRows" >> beam.Flatten()
        | "CountStatus" >> beam.Map(count_status)
        | "WriteParams" >> WriteToParquet(
            outputs.params_prefix(output), OUTPUT_SCHEMA,
            file_name_suffix=outputs.PARAMS_SUFFIX,
            shard_name_template=outputs.SHARD_TEMPLATE)
    )
