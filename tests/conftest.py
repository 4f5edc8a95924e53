"""Shared test set-up: quiet, deterministic TensorFlow with deliberate threads,
and the groups `make test`'s pytest-xdist workers take the tests in."""
import collections
import functools
import importlib.abc
import importlib.util
import json
import os
import resource
import sys
import time

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# One trace cache for the whole run, its test processes and the gpfit
# processes they start: the suite builds about 200 fitters and starts about
# 60 processes, mostly of a few configurations, and each after the first
# loads its traced search instead of tracing it (gpcore/trace_cache.py).
# In the checkout, not the user's cache: `make clean` removes it.
os.environ.setdefault("GPFIT_TRACE_CACHE", os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".cache", "traces"))


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """Collection imports the test modules, and with them TensorFlow, TFP,
    Beam and scikit-learn: with Python's garbage collector paused, as the
    gpfit command imports them (gpcore/threads.py, collection_paused)."""
    from gpcore import threads

    with threads.collection_paused():
        yield


@pytest.fixture(scope="session", autouse=True)
def tensorflow_as_a_job_runs_it():
    """Each test process runs TensorFlow as an in-process gpfit job does,
    from before its first op, whichever test comes first:
    pipeline.fitters.configure_threads for this machine's cores (one
    intra-op thread a fitter, Grappler's rewrites off). Left to the first
    test, a gpcore test's fitters started TF's default pools and traced
    with Grappler on, a seventh more CPU for a fitter's first call, and the
    pipeline tests then ran on whatever pools were left (docs/design.md,
    "Build")."""
    from pipeline import fitters

    fitters.configure_threads(fitters.machine_cores())


@pytest.fixture(scope="session")
def fitter_for():
    """fitter_for(config) -> the one GPFitter of that FitConfig in this test
    process, built on first use: a fitter is made to be reused (variables
    assigned per batch, one trace for any shapes), and its first call, the
    trace, costs a test 3-8 CPU s. Only for a module's defaults: a test that
    patches a module constant the trace reads (gpcore.starts' probes) builds
    its own GPFitter, and never fits a shared one while patched."""
    from gpcore import GPFitter

    built = {}

    def get(config):
        if config not in built:
            built[config] = GPFitter(config)
        return built[config]

    return get


# In-process pipeline runs (gpfit_here, builder.build) of one test module
# share their fitters: pipeline.fitters.build hands out one per (FitConfig,
# copies) per module, as a worker process keeps one for every bundle of its
# job. A fresh build's trace (one for its copies, gpcore/traced.py; 3-6
# CPU s, docs/design.md, "Build") was most of an in-process run's cost. Per module, not per process:
# a module's runs then see the same fitter however the workers split the
# suite, and no module sees traces another left (tracing_count_max). Pipeline
# runs in a test process are one at a time (each job's slot locks its fitter;
# two jobs at once would need a lock each). Nothing patched here reads a
# constant a test patches: no pipeline test patches gpcore.
_pipeline_fitters = {"module": None, "built": {}}


def _built_once_per_module(build):
    @functools.wraps(build)
    def shared_build(config, copies):
        built = _pipeline_fitters["built"]
        if (config, copies) not in built:
            built[(config, copies)] = build(config, copies)
        return built[(config, copies)]
    shared_build.per_module = True
    return shared_build


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures (a module's runs) are set up
def pytest_runtest_setup(item):
    from pipeline import fitters

    if not getattr(fitters.build, "per_module", False):
        fitters.build = _built_once_per_module(fitters.build)
    module = getattr(getattr(item, "module", None), "__name__", item.nodeid.split("::")[0])
    if _pipeline_fitters["module"] != module:
        _pipeline_fitters.update(module=module, built={})


# `make test` runs the suite on pytest-xdist workers with --dist loadgroup
# (docs/design.md, "Build"), one group at a time per worker. A group is a
# file, so that a module's fixtures (the quality tests' fits take minutes)
# are computed once, on one worker; or a part of a file that shares no such
# fixture with the rest (PARTS), so that two halves of a slow file run side
# by side. All of tests/deploy is one group: some of its tests build gpfit's
# sdist from the checkout itself, and `setup.py sdist` writes gpfit.egg-info/
# beside it.
#
# xdist's own loadgroup reads xdist_group marks into the test ids, which
# pytest 9 no longer lets it change: every test was a group of its own.
# So the workers' scheduler here (pytest_xdist_make_scheduler) groups the
# ids itself, and hands the groups out costliest first (COSTLIEST, then in
# file order): xdist's order, most tests first, leaves the few-test quality
# files to the end, one worker fitting them while the other idles.

# {file: {part: test functions}}; the rest of the file is its own group.
PARTS = {
    "tests/gpcore/test_real_quality.py": {
        "single-series": (
            "test_a_restart_in_the_grids_other_basin_finds_the_better_optimum",
            "test_probes_around_the_optimum_find_the_adjacent_minimum",
            "test_far_probes_find_the_short_length_scale_basin_of_a_trending_series"),
    },
    "tests/gpcore/test_seasonal_quality.py": {
        "tuning": ("test_rbf_plus_periodic_finds_the_period_of_harmonic_rich_cycles",),
        "tuning-single": ("test_a_faded_rbf_beside_the_cycle_finds_its_short_basin",),
    },
}

# The groups that take longest, longest first: CPU seconds of one run of the
# whole suite with GPFIT_TEST_TIMES (tests/timing.py; docs/design.md,
# "Build", where the figures are). The rest follow in file order.
COSTLIEST = (
    "tests/gpcore/test_seasonal_quality.py",
    "tests/gpcore/test_seasonal_auto.py",
    "tests/reliability/test_folder_faults.py",
    "tests/gpcore/test_seasonal_quality.py::tuning",
    "tests/benchmarks/test_heldout_smoke.py",
    "tests/pipeline/test_forecast_interface.py",
    "tests/pipeline/test_quiet_runs.py",
    "tests/pipeline/test_pipeline_end_to_end.py",
    "tests/gpcore/test_fitter.py",
    "tests/gpcore/test_statespace.py",
    "tests/deploy",
    "tests/benchmarks/test_forecast_smoke.py",
    "tests/pipeline/test_frame_engines.py",
    "tests/benchmarks/test_heldout_seasonal_sets_smoke.py",
    "tests/reliability/test_faults.py",
    "tests/gpcore/test_sums.py",
    "tests/benchmarks/test_speed_smoke.py",
    "tests/pipeline/test_runtime.py",
    "tests/pipeline/test_nightly.py",
    "tests/benchmarks/test_nightly_smoke.py",
    "tests/reliability/test_corpus.py",
    "tests/gpcore/test_side_by_side.py",
    "tests/gpcore/test_choice.py",
    "tests/pipeline/test_kernel_sums_end_to_end.py",
    "tests/benchmarks/test_heldout_real2_smoke.py",
)


def group_of(nodeid: str) -> str:
    """The xdist group of the test with this id ("tests/x.py::test_y[a]")."""
    path, _, rest = nodeid.partition("::")
    if path.startswith("tests/deploy/"):
        return "tests/deploy"
    function = rest.split("[")[0].split("::")[-1]
    for part, functions in PARTS.get(path, {}).items():
        if function in functions:
            return f"{path}::{part}"
    return path


def shared_fixtures(item) -> set:
    """The module-, class- and package-scoped fixtures the test uses, with
    the parameter's index for a parametrised one."""
    callspec = getattr(item, "callspec", None)
    return {(name, callspec.indices.get(name) if callspec else None)
            for name, defs in item._fixtureinfo.name2fixturedefs.items()
            if defs and defs[-1].scope in ("class", "module", "package")}


def pytest_collection_modifyitems(config, items):
    # tests/test_groups.py checks PARTS against what is collected.
    rank = {group: k for k, group in enumerate(COSTLIEST)}
    items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))  # stable


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: without xdist, no hook
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """xdist's scope scheduling with group_of's groups, in collection
        order (pytest_collection_modifyitems's: costliest first)."""

        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

        def schedule(self) -> None:
            option = self.config.option
            reorder, option.loadscopereorder = option.loadscopereorder, False
            try:
                super().schedule()
            finally:
                option.loadscopereorder = reorder

    return GroupScheduling(config, log)


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


# Each line also counts the test's repeated work, what sharing can cut:
# Python processes it launched (each pays TensorFlow's and Beam's imports),
# Beam pipelines run in this process, and fitters built (a first fit traces).
# Fitters are counted in tf.Module's __init__, not their own: the trace
# cache's key hashes gpcore's live methods, and a wrapped GPFitter.__init__
# would give the timed run other keys than its subprocesses and than CI.
_FITTERS = ("gpcore.fitter", "gpcore.markov_fitter")
_COUNTED = {  # module: (class, method, counter, counts(self))
    "tensorflow.python.module.module": ("Module", "__init__", "fitters",
                                        lambda self: any(c.__module__ in _FITTERS for c in type(self).__mro__)),
    "apache_beam.pipeline": ("Pipeline", "run", "pipelines", lambda self: True),
}
_counts = collections.Counter()


def _counting(method, counter, counts):
    depth = [0]  # Beam's run() calls run() again on its round-tripped copy

    @functools.wraps(method)
    def counted(self, *args, **kwargs):
        _counts[counter] += depth[0] == 0 and counts(self)
        depth[0] += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            depth[0] -= 1
    return counted


class _CountOnImport(importlib.abc.MetaPathFinder):
    """Wraps _COUNTED's methods as their modules load (imported here they
    would load TensorFlow and Beam into every test process)."""

    def find_spec(self, name, path, target=None):
        if name not in _COUNTED:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            cls, method, counter, counts = _COUNTED[name]
            owner = getattr(module, cls)
            setattr(owner, method, _counting(getattr(owner, method), counter, counts))
        spec.loader.exec_module = exec_module
        return spec


def _count_python_launches(event, args):
    if event == "subprocess.Popen":  # args: executable, argv, cwd, env
        words = " ".join(map(str, args[1])).split()
        _counts["processes"] += any("python" in os.path.basename(w) or w.endswith("/gpfit")
                                    or w == "gpfit" for w in words[:3])


if _TIMES:
    sys.meta_path.insert(0, _CountOnImport())
    sys.addaudithook(_count_python_launches)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        _counts.clear()
        wall, cpu = time.perf_counter(), _cpu()
        yield
        line = {"nodeid": item.nodeid, "group": group_of(item.nodeid),
                "wall_s": round(time.perf_counter() - wall, 3),
                "cpu_s": round(_cpu() - cpu, 3),
                "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                "at": round(time.time(), 3),
                **{k: _counts[k] for k in ("processes", "pipelines", "fitters")}}
        with open(_TIMES, "a") as f:
            f.write(json.dumps(line) + "\n")
