"""Choosing the runner: local runs never try the network.

Beam's DirectRunner first tries the Prism runner, which downloads a binary
at run time (and can hang on a network that drops packets); only the Python
FnApiRunner honours --direct_num_workers / --direct_running_mode. So when no
runner, DirectRunner or FnApiRunner is asked for, gpfit runs the FnApiRunner
itself, built the way the DirectRunner builds it (workers get the options).
"""
from __future__ import annotations

import logging
from typing import Optional

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineRunner

from pipeline.workers import LOCAL_RUNNERS

_LOG = logging.getLogger(__name__)


def is_local(options: PipelineOptions) -> bool:
    return options.view_as(StandardOptions).runner in LOCAL_RUNNERS


def local_runner(options: PipelineOptions) -> Optional[PipelineRunner]:
    """An FnApiRunner for local runs; None to let Beam build the runner named
    by --runner (Dataflow, Prism, Flink, ...)."""
    if not is_local(options):
        return None
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    provision = fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded))
    return fn_runner.FnApiRunner(provision_info=provision)
