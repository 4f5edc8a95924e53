"""Shared test set-up: quiet, deterministic TensorFlow with deliberate threads."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


# `make test` runs the suite on pytest-xdist workers with --dist loadgroup
# (docs/design.md, "Build"). Each file is one group, so a module's fixtures
# (the quality tests' fits take minutes) are computed once, on one worker.
# The deployment tests share one group (one worker, one at a time): some
# build gpfit's sdist from the checkout itself, and `setup.py sdist` writes
# gpfit.egg-info/ beside it.


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        path = item.nodeid.split("::")[0]
        group = "tests/deploy" if path.startswith("tests/deploy/") else path
        item.add_marker(pytest.mark.xdist_group(group))
