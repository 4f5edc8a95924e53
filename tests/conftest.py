"""Shared test set-up: quiet, deterministic TensorFlow with deliberate threads."""
import json
import os
import resource
import time

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


# `make test` runs the suite on pytest-xdist workers with --dist loadgroup
# (docs/design.md, "Build"). Each file is one group, so a module's fixtures
# (the quality tests' fits take minutes) are computed once, on one worker.
# The deployment tests share one group (one worker, one at a time): some
# build gpfit's sdist from the checkout itself, and `setup.py sdist` writes
# gpfit.egg-info/ beside it.


#
# The groups are handed out in collection order (`make test` passes
# --no-loadscope-reorder: xdist's own order, most tests first, left the
# few-test quality files to the end, one worker fitting them while the
# other idled), so the costliest come first: COSTLIEST, then the rest.
COSTLIEST = (
    "tests/gpcore/test_real_quality.py",
    "tests/gpcore/test_seasonal_quality.py",
    "tests/gpcore/test_seasonal_auto.py",
    "tests/gpcore/test_quality.py",
    "tests/test_references.py",
)


def group_of(item) -> str:
    path = item.nodeid.split("::")[0]
    return "tests/deploy" if path.startswith("tests/deploy/") else path


def pytest_collection_modifyitems(config, items):
    rank = {path: k for k, path in enumerate(COSTLIEST)}
    items.sort(key=lambda item: rank.get(group_of(item), len(rank)))  # stable
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of(item)))


# GPFIT_TEST_TIMES=FILE appends one JSON line per test to FILE: its wall
# seconds and the CPU seconds of this process and of the children it waited
# for (setup, call and teardown). On a shared machine the wall time is the
# load's; the CPU time is what a quiet run would take (tests/timing.py sums
# it per file and per group).
_TIMES = os.environ.get("GPFIT_TEST_TIMES")


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if _TIMES:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        wall, cpu = time.perf_counter(), _cpu()
        yield
        marker = item.get_closest_marker("xdist_group")
        line = {"nodeid": item.nodeid, "group": marker.args[0] if marker else None,
                "wall_s": round(time.perf_counter() - wall, 3),
                "cpu_s": round(_cpu() - cpu, 3),
                "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                "at": round(time.time(), 3)}
        with open(_TIMES, "a") as f:
            f.write(json.dumps(line) + "\n")
