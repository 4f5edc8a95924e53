"""A remote job's Beam options that gpfit checks on this machine before any work.

Beam checks the files it stages (--setup_file, --requirements_file) only
when the job is submitted, after gpfit has taken the output folder's lock
and cleared its previous files, as a RuntimeError: exit 3, "the pipeline
failed". So they are refused here in one line, exit 2 (docs/design.md,
"Dataflow offline").
"""
from __future__ import annotations

import os

from apache_beam.options.pipeline_options import PipelineOptions, SetupOptions
from apache_beam.runners.runner import PipelineRunner

from pipeline.io.errors import UsageError

# The setup file's names Beam's stager builds a package from.
SETUP_FILES = ("setup.py", "pyproject.toml")


def check(options: PipelineOptions, runner: PipelineRunner) -> None:
    """Checks the options of a job on a runner that stages files (not
    gpfit's local runner).

    Raises:
      UsageError: a staged file that is missing or misnamed.
    """
    _check_staged_files(options.view_as(SetupOptions))


def _check_staged_files(setup: SetupOptions) -> None:
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
