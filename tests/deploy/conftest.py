"""Fixtures of the deployment tests (helpers live in deploy_helpers.py)."""
import pytest

from deploy_helpers import load_dry_run_module, read_setup


@pytest.fixture(scope="session")
def setup_info() -> dict:
    return read_setup()


@pytest.fixture(scope="session")
def dry_run_module():
    return load_dry_run_module()
