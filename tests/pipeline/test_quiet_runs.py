"""A clean `gpfit` run prints only gpfit's own lines: no TensorFlow/absl
start-up lines (written from C++ before Python's logging), no Beam warnings;
`--log_level debug` brings them back."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from pipeline_data import make_series, write_long

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# gpfit's log lines (pipeline/logs.py's format) and its last line.
OURS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING) (worker: )?gpfit[: ]"
                  r"|gpfit: )")


def user_process(*args: str, without_gcp: str | None = None) -> subprocess.CompletedProcess:
    """`python *args` as a user runs it: a fresh process, none of the tests'
    TensorFlow settings in its environment; without_gcp: a folder from
    `no_gcp`, first on the path of this process and of the worker
    processes it starts, as where the gcp extra (apitools) is not
    installed, as `make run`'s environment and a plain `pip install gpfit`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES", "TF_USE_LEGACY_KERAS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [without_gcp, REPO,
                                                      os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, *args], capture_output=True,
                          text=True, env=env, timeout=600)


def gpfit_process(*args: str, without_gcp: str | None = None) -> subprocess.CompletedProcess:
    """The `gpfit` command as a user runs it (user_process)."""
    return user_process("-m", "pipeline", *args, without_gcp=without_gcp)


@pytest.fixture(scope="module")
def no_gcp(tmp_path_factory) -> str:
    """A folder whose `apitools` fails to import, as Beam's import finds it
    without the gcp extra: Beam then logs "apitools not found"."""
    folder = tmp_path_factory.mktemp("no-gcp")
    (folder / "apitools").mkdir()
    (folder / "apitools" / "__init__.py").write_text(
        'raise ImportError("no apitools: as without the gcp extra")\n')
    return str(folder)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_long(str(tmp_path_factory.mktemp("quiet") / "in"), make_series(n_series=6))


@pytest.fixture(scope="module")
def clean_run(data, tmp_path_factory, no_gcp):
    """clean_run(without_gcp) -> (output folder, the finished command) of a
    plain run on `data`, each run once: the report's test reads the folder
    of the clean-lines test's run (a command costs 10-14 CPU s)."""
    runs = {}

    def run(without_gcp: bool):
        if without_gcp not in runs:
            out = str(tmp_path_factory.mktemp("quiet-out") / "out")
            runs[without_gcp] = out, gpfit_process("--input", data, "--output", out,
                                                   without_gcp=no_gcp if without_gcp else None)
        return runs[without_gcp]
    return run


@pytest.mark.parametrize("without_gcp", [False, True])
def test_a_clean_run_prints_only_gpfits_lines(clean_run, without_gcp):
    _, done = clean_run(without_gcp)
    assert done.returncode == 0, done.stderr
    foreign = [line for line in done.stderr.splitlines() if not OURS.match(line)]
    assert foreign == [], foreign
    assert "built the rbf fitter" in done.stderr
    assert done.stdout.startswith("gpfit: 7 series: 6 ok, 1 skipped, 0 failed")


def test_worker_processes_without_the_gcp_extra_print_only_gpfits_lines(data, tmp_path, no_gcp):
    """Without the gcp extra, Beam's import in each local worker process
    logged "apitools not found" on the root logger, which gave that logger
    a stderr handler: every line the worker logged after it, Beam's start-up
    and gpfit's own again, came out on gpfit's stderr (README, "Usage")."""
    done = gpfit_process("--input", data, "--output", str(tmp_path / "out"),
                         "--direct_num_workers", "2", "--direct_running_mode",
                         "multi_processing", without_gcp=no_gcp)
    assert done.returncode == 0, done.stderr
    foreign = [line for line in done.stderr.splitlines() if not OURS.match(line)]
    assert foreign == [], foreign
    assert done.stdout.startswith("gpfit: 7 series: 6 ok, 1 skipped, 0 failed"), done.stdout


@pytest.mark.parametrize("processes", [[], ["--direct_num_workers", "2",
                                             "--direct_running_mode", "multi_processing"]])
def test_log_lines_naming_a_path_are_one_line_each(data, tmp_path, processes):
    """gpfit's log lines named the --output folder raw (the input's summary,
    the manifest written, from a worker process too): a folder named with a
    newline or a carriage return split them, the rest free text a log
    collector takes for records of their own, and an ANSI escape recoloured
    the terminal. They escape what does not print, as gpfit's error lines do."""
    output = str(tmp_path / "out\nFAKE INFO forged\r\tx\x1bm\u202e")
    run = gpfit_process("--input", data, "--output", output, "--kernel", "rbf", *processes)
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    assert lines and all(OURS.match(line) and line.isprintable() for line in lines), lines
    escaped = "out\\nFAKE INFO forged\\r\\tx\\x1bm\\u202e"
    assert any("_SUCCESS.json" in line and escaped in line for line in lines), lines
    assert any("rows" in line and escaped in line for line in lines), lines


def test_log_level_debug_shows_the_rest(data, tmp_path):
    done = gpfit_process("--input", data, "--output", str(tmp_path / "out"),
                         "--log_level", "debug")
    assert done.returncode == 0, done.stderr
    foreign = [line for line in done.stderr.splitlines() if not OURS.match(line)]
    # TensorFlow's C++ start-up lines, left on stderr at debug.
    assert any("absl::InitializeLog" in line or "cuda" in line.lower() for line in foreign), \
        done.stderr[-3000:]


def test_log_level_error_shows_no_warning(data, tmp_path):
    """--log_level error (a scheduler's quiet run) still printed the run's
    end-of-run warnings, here that the irregular series got no forecast
    rows under --predict_steps: now nothing on stderr, the result line on
    stdout (README, "Usage")."""
    done = gpfit_process("--input", data, "--output", str(tmp_path / "out"),
                         "--predict_steps", "2", "--log_level", "error")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    assert done.stdout.startswith("gpfit: 7 series: 6 ok, 1 skipped, 0 failed"), done.stdout
    warned = gpfit_process("--input", data, "--output", str(tmp_path / "out"),
                           "--predict_steps", "2", "--log_level", "warning")
    assert warned.returncode == 0, warned.stderr
    assert [line for line in warned.stderr.splitlines()
            if "ok series got no forecast rows" in line], warned.stderr


# A Dataflow job built offline, with the setup file workers install.
DATAFLOW_DRY_RUN = ("--input", "gs://gpfit-example/in/", "--output", "gs://gpfit-example/out/",
                    "--runner", "DataflowRunner", "--project", "gpfit-example",
                    "--region", "us-central1", "--temp_location", "gs://gpfit-example/dataflow/temp",
                    "--setup_file", os.path.join(REPO, "setup.py"), "--dry_run=True", "--no_auth")


@pytest.mark.parametrize("level, shown", [("info", False), ("debug", True)])
def test_a_dataflow_launch_keeps_beams_advice_to_debug(level, shown):
    """Beam's Dataflow runner advised pre-building a container at INFO on
    every launch with --setup_file; gpfit's lines and the runner's job lines
    stay. (The stager's own subprocess, `python -m build`, prints its
    progress outside logging, where gpfit cannot filter it: docs/design.md,
    "Quiet by default".)"""
    done = gpfit_process(*DATAFLOW_DRY_RUN, "--log_level", level)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gpfit: dry run: the Dataflow job was built")
    assert ("additional dependencies to be installed" in done.stderr) == shown, done.stderr


@pytest.mark.parametrize("processes", [[], ["--direct_num_workers", "2",
                                             "--direct_running_mode", "multi_processing"]])
def test_python_warnings_of_a_failed_fit_show_only_at_debug(data, tmp_path, processes):
    """A series whose times overflow when standardised fails, and numpy warns
    as it does: those warnings (10 lines, per process) are not gpfit's, and
    printed whole they ignored --log_level."""
    series = make_series(n_series=2)
    series["extreme"] = (np.array([-1e308, -5e307, 0.0, 5e307, 1e308, 2e307]),
                         np.array([1.0, 2, 3, 1, 2, 5]))
    data = write_long(str(tmp_path / "in"), series)
    done = gpfit_process("--input", data, "--output", str(tmp_path / "out"),
                         "--log_level", "warning", *processes)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gpfit: 4 series: 2 ok, 1 skipped, 1 failed"), done.stdout
    foreign = [line for line in done.stderr.splitlines() if not OURS.match(line)]
    assert foreign == [], foreign
    if not processes:
        debug = gpfit_process("--input", data, "--output", str(tmp_path / "out"),
                              "--log_level", "debug")
        assert debug.returncode == 0, debug.stderr
        assert "RuntimeWarning: overflow encountered" in debug.stderr


def test_version_is_the_releases():
    from pipeline.io.fingerprint import VERSION
    done = gpfit_process("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"gpfit {VERSION}"


def test_no_dofn_of_the_job_draws_beams_yield_and_return_warning():
    import inspect

    import apache_beam as beam
    from apache_beam.transforms.core import _check_fn_use_yield_and_return

    from pipeline import forecast, manifest_step, previous, reading, transforms

    checked = []
    for module in (reading, previous, transforms, forecast, manifest_step):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, beam.DoFn) and cls.__module__ == module.__name__:
                checked.append(name)
                assert not _check_fn_use_yield_and_return(cls.process), name
    assert "Compare" in checked  # the nightly run's join, which drew it


@pytest.mark.parametrize("without_gcp", [False, True])
def test_the_report_of_a_clean_run_prints_only_its_own_lines(clean_run, tmp_path, no_gcp,
                                                             without_gcp):
    out, done = clean_run(False)
    assert done.returncode == 0, done.stderr
    # No --input: the run's manifest records it.
    report = user_process("-m", "pipeline.report", "--params", out,
                          "--out", str(tmp_path / "r.html"), "--random", "2", "--worst", "1",
                          without_gcp=no_gcp if without_gcp else None)
    assert report.returncode == 0, report.stderr
    lines = report.stderr.strip().splitlines()
    assert lines and all(line.startswith("gpfit-report: ") for line in lines), lines


def test_importing_gpfit_without_the_gcp_extra_says_nothing_and_leaves_logging_alone(no_gcp):
    """`import gpfit` in a notebook: Beam's "apitools not found" came out,
    and with it Python's default handler on the root logger, which made the
    user's own logging.basicConfig after it do nothing."""
    done = user_process("-c", "import logging, gpfit; print(logging.getLogger().handlers)",
                        without_gcp=no_gcp)
    assert done.returncode == 0, done.stderr
    assert (done.stderr, done.stdout.strip()) == ("", "[]")


def test_a_portable_run_prints_only_gpfits_lines(data, tmp_path):
    """The portable runner's job service logs "Completed job in ... seconds"
    and relays it to the client, which logged it again: two lines of Beam's
    in a clean run (README, "Usage")."""
    from test_portable_runner import free_port, portable, start_pool, this_python_first

    port = free_port()
    pool = start_pool(port, this_python_first())
    try:
        done = gpfit_process("--input", data, "--output", str(tmp_path / "out"), *portable(port))
    finally:
        pool.kill()
        pool.wait()
    assert done.returncode == 0, done.stderr
    foreign = [line for line in done.stderr.splitlines() if not OURS.match(line)]
    assert foreign == [], foreign


def test_a_trace_cache_refused_is_said_once_a_run_not_once_a_worker_process(data, tmp_path,
                                                                           monkeypatch):
    """A trace cache folder gpfit will not use (here writable by others)
    is noted once a process (gpcore/trace_cache.py); under multi_processing
    each worker process said the same line, one per --direct_num_workers.
    The run goes on, tracing instead, and says it once."""
    shared = tmp_path / "shared-traces"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("GPFIT_TRACE_CACHE", str(shared))
    done = gpfit_process("--input", data, "--output", str(tmp_path / "out"),
                         "--direct_num_workers", "2", "--direct_running_mode", "multi_processing")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gpfit: 7 series: 6 ok, 1 skipped, 0 failed"), done.stdout
    said = [line for line in done.stderr.splitlines() if "not using the trace cache" in line]
    assert len(said) == 1, done.stderr
    assert "writable by group or others (mode 777)" in said[0], said
