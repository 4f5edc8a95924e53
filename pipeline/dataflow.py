"""A remote job's Beam options that gpfit checks on this machine before any work.

Beam checks them late, or not at all:
- the files it stages (--setup_file, --requirements_file, --extra_package)
  only when the job is submitted, after gpfit has taken the output folder's
  lock and cleared its previous files, as a RuntimeError: exit 3, "the
  pipeline failed";
- a --temp_location or --staging_location that is not a gs:// folder it
  replaces by a bucket it makes in the project (the network: offline, 120 s
  of retries; online, a bucket nobody asked for);
- paths on this machine not at all, though Dataflow's workers cannot reach
  them: a local --input failed on the workers, a local --output was written
  on the workers' disks and lost;
- nor whether the workers get gpfit: with neither a worker image
  (--sdk_container_image) nor a staged package they run Beam's own SDK
  image, and every bundle failed to unpickle gpfit's DoFns;
- a dry run without --temp_location or --staging_location asks Google Cloud
  for a default bucket, dry run or not (the GCE metadata server, then
  storage.googleapis.com: offline 140 s, online a bucket made).
So each is refused here in one line, exit 2 (docs/design.md, "Dataflow offline").

A dry run with a gs:// --extra_package is refused too: the stager downloads
it (offline: Cloud Storage's retries, minutes). A dry run with
--requirements_file made Beam's stager `pip download` every
requirement into its cache, a subprocess that the dry run's socket guard
does not see: online minutes of downloads, offline exit 3 after pip's
retries. A dry run stages nothing, so it skips that cache
(--requirements_cache skip) unless one is given.
"""
from __future__ import annotations

import os
from typing import Optional

from apache_beam.options.pipeline_options import (GoogleCloudOptions, PipelineOptions,
                                                  SetupOptions, TestOptions, WorkerOptions)
from apache_beam.options.pipeline_options_validator import PipelineOptionsValidator
from apache_beam.runners.portability.stager import SKIP_REQUIREMENTS_CACHE
from apache_beam.runners.runner import PipelineRunner

from pipeline.io.errors import UsageError
from pipeline.io.outputs import is_local
from pipeline.options import GPFitOptions, names_runner

# The setup file's names Beam's stager builds a package from.
SETUP_FILES = ("setup.py", "pyproject.toml")
# The names Beam's stager takes for an --extra_package (a local file, or a
# gs:// one it downloads).
EXTRA_PACKAGE_ENDINGS = (".tar", ".tar.gz", ".whl", ".zip")
# Beam's stager takes an http(s) --extra_package for one it downloads, then
# looks for a file system of that scheme, and Beam has none: the job failed
# as it was staged ("Unable to get filesystem from specified path"), exit 3.
URLS = ("http://", "https://")


def names_dataflow(runner: Optional[str]) -> bool:
    """Whether a --runner value names Beam's Dataflow runner as Beam reads
    it: in any case, with or without "Runner", or as its dotted path."""
    return names_runner(runner, "DataflowRunner")


def check(options: PipelineOptions, runner: PipelineRunner) -> None:
    """Checks the options of a job on a runner that stages files (not
    gpfit's local runner) and, on the Dataflow service, its locations and paths.

    Raises:
      UsageError: a staged file that is missing or misnamed; on the Dataflow
        service, a --temp_location or --staging_location given that is not a
        gs:// folder, neither given to a dry run, an --input, --output or
        --previous_output on this machine, or workers that would have no gpfit.
    """
    _check_staged_files(options.view_as(SetupOptions),
                        bool(options.view_as(TestOptions).dry_run))
    validator = PipelineOptionsValidator(options, runner)
    if not validator.is_service_runner():  # also a template's test endpoint on localhost
        return
    cloud = options.view_as(GoogleCloudOptions)
    if (options.view_as(TestOptions).dry_run and cloud.temp_location is None
            and cloud.staging_location is None):
        raise UsageError("--dry_run needs --temp_location (e.g. gs://BUCKET/dataflow/temp) or "
                         "--staging_location: without either Beam makes a default bucket in the "
                         "project for the job's files, which asks Google Cloud (offline: 140 s "
                         "of retries) and writes there; a dry run writes nothing")
    setup = options.view_as(SetupOptions)
    if (options.view_as(TestOptions).dry_run and setup.requirements_file is not None
            and setup.requirements_cache is None):
        setup.requirements_cache = SKIP_REQUIREMENTS_CACHE
    for name in ("temp_location", "staging_location"):
        found = getattr(cloud, name) is not None and validator.validate_gcs_path(cloud, name)
        if found:
            raise UsageError(f"--{name} {getattr(cloud, name)}: Dataflow needs a gs:// folder "
                             f"there, e.g. gs://BUCKET/dataflow/{name.split('_')[0]}; Beam "
                             f"says: {found[0]}")
    gp = options.view_as(GPFitOptions)
    for name in ("input", "output", "previous_output"):
        path = getattr(gp, name)
        if path and is_local(path):
            raise UsageError(f"--{name} {path} is a path on this machine, which Dataflow's "
                             "workers cannot reach; copy it to Cloud Storage and give its "
                             "gs:// path")
    _check_workers_get_gpfit(options)


def _check_workers_get_gpfit(options: PipelineOptions) -> None:
    """Refuses a job whose workers would run Beam's own SDK image (no worker
    image given) with nothing staged that could install gpfit: every bundle
    failed to unpickle gpfit's DoFns, once the folder was cleared and the
    workers had started (exit 3). A requirements file or extra package may
    carry gpfit, so either passes."""
    worker = options.view_as(WorkerOptions)
    setup = options.view_as(SetupOptions)
    if (worker.sdk_container_image or worker.worker_harness_container_image
            or worker.sdk_harness_container_image_overrides or setup.setup_file
            or setup.extra_packages or setup.requirements_file):
        return
    raise UsageError("Dataflow's workers would run Beam's own SDK image, which has no gpfit, "
                     "and nothing is staged to install it: give --sdk_container_image IMAGE "
                     "(the gpfit image the Dockerfile builds; docs/dataflow.md) or "
                     "--setup_file ./setup.py")


def _check_staged_files(setup: SetupOptions, dry_run: bool) -> None:
    if setup.setup_file is not None:
        path = setup.setup_file
        if not os.path.isfile(path):
            raise UsageError(f"--setup_file {path}: no such file; give gpfit's setup.py, "
                             "e.g. --setup_file ./setup.py from the repository's root")
        if os.path.basename(path) not in SETUP_FILES:
            raise UsageError(f"--setup_file {path}: Beam builds the package from a file named "
                             f"{' or '.join(SETUP_FILES)}; give gpfit's ./setup.py")
        if not os.path.dirname(path):
            # Beam builds the package in the file's folder, and '' is none.
            raise UsageError(f"--setup_file {path}: give it with its folder, e.g. "
                             f"./{path}, as Beam builds the package there")
    if setup.requirements_file is not None and not os.path.isfile(setup.requirements_file):
        raise UsageError(f"--requirements_file {setup.requirements_file}: no such file")
    for package in setup.extra_packages or ():
        if not package.endswith(EXTRA_PACKAGE_ENDINGS):
            raise UsageError(f"--extra_package {package}: Beam stages a file ending in "
                             f"{', '.join(EXTRA_PACKAGE_ENDINGS)}; give the built package "
                             "(python -m build makes one in dist/)")
        if package.startswith(URLS):
            raise UsageError(f"--extra_package {package}: Beam cannot stage a package from "
                             "a URL (it has no file system for http or https); download it "
                             "and give the file")
        if "://" in package and dry_run:
            # The stager downloads it even for a dry run: offline, Cloud
            # Storage's retries went on for minutes.
            raise UsageError(f"--extra_package {package}: a dry run would download it to "
                             "stage it, which needs the network; give a copy on this "
                             "machine, or leave it out of the dry run")
        if "://" not in package and not os.path.isfile(package):
            raise UsageError(f"--extra_package {package}: no such file")
