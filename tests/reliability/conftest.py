"""The reliability suite's shared input and its clean run: every fault test
compares the re-run after its fault with this (reliability_runs.snapshot)."""
from __future__ import annotations

import pytest

from reliability_runs import OPTIONS, gpfit_here, snapshot, write_hostile_input


@pytest.fixture(scope="session")
def hostile_input(tmp_path_factory) -> str:
    """A folder of Parquet input whose ids and values are hostile (see
    write_hostile_input)."""
    return write_hostile_input(str(tmp_path_factory.mktemp("hostile") / "data"))


@pytest.fixture(scope="session")
def clean(hostile_input, tmp_path_factory):
    """A clean run of the shared input with the shared OPTIONS: (Run, snapshot)."""
    run = gpfit_here(hostile_input, str(tmp_path_factory.mktemp("clean") / "out"), *OPTIONS)
    assert run.code == 0, run.stderr
    return run, snapshot(run.output)
