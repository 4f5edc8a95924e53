"""Where and how the job runs (pipeline.runtime): the local runner, worker
threads; and the lines the command shows (pipeline.logs)."""
from __future__ import annotations

import io
import logging
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from gpfit_runs import command_in
from pipeline import logs, runtime
from pipeline.io.errors import UsageError
from pipeline_data import make_series, write_long
from pipeline.runtime import local_runner


def test_thread_counts_split_the_cores_between_processes():
    assert runtime.cores_per_process(2, 1) == 2
    assert runtime.cores_per_process(2, 2) == 1
    assert runtime.cores_per_process(2, 4) == 1
    assert runtime.cores_per_process(8, None) == 1  # one process per core
    opts = PipelineOptions(["--direct_num_workers", "2", "--direct_running_mode",
                            "multi_processing"])
    assert runtime.processes_per_machine(opts) == 2
    assert runtime.processes_per_machine(PipelineOptions(["--direct_num_workers", "2",
                                                          "--direct_running_mode",
                                                          "multi_threading"])) == 1
    assert runtime.processes_per_machine(PipelineOptions(["--runner", "DataflowRunner"])) is None


def _threads_in_a_fresh_process(processes, env):
    """(copies, intra-op, inter-op) that configure_tf_threads sets in a new
    process (TF's pools are set once per process)."""
    code = ("import tensorflow as tf; from pipeline import runtime; "
            f"copies = runtime.configure_tf_threads({processes}); "
            "print(copies, tf.config.threading.get_intra_op_parallelism_threads(), "
            "tf.config.threading.get_inter_op_parallelism_threads())")
    environ = {k: v for k, v in os.environ.items()
               if k not in (runtime.INTRA_OP_ENV, runtime.INTER_OP_ENV)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**environ, **env}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return tuple(int(v) for v in done.stdout.split()[-3:])


def test_a_process_runs_a_fitter_copy_per_core_with_one_intra_op_thread_each():
    cores = os.cpu_count() or 1
    assert _threads_in_a_fresh_process(1, {}) == (cores, 1, cores)
    assert _threads_in_a_fresh_process(cores, {}) == (1, 1, 1)  # a process per core
    if cores >= 2:  # the environment wins: copies of 2 threads
        assert _threads_in_a_fresh_process(1, {runtime.INTRA_OP_ENV: "2"}) == (cores // 2, 2, cores)


def test_worker_log_lines_keep_gpfit_and_warnings_only():
    keep = logs._WorkerLines()  # pylint: disable=protected-access

    def record(level, message):
        entry = f'severity: INFO message: "{message}" log_location: "x.py:1"'
        return logging.LogRecord("w", level, "x", 1, "Worker: %s", (entry,), None)

    gpfit_line = record(logging.INFO, "gpfit progress: 10 series")
    assert keep.filter(gpfit_line) and gpfit_line.getMessage() == "worker: gpfit progress: 10 series"
    assert not keep.filter(record(logging.INFO, "Data channel established."))
    assert keep.filter(record(logging.WARNING, "something odd"))


def test_a_trace_cache_note_each_worker_process_says_is_shown_once_a_run():
    """Under multi_processing each worker process notes once that it cannot
    use the trace cache (gpcore/trace_cache.py): shown once a run, whatever
    temporary folder each worker's error names; gpfit's other warnings, and
    another folder's note, each time."""
    keep = logs._WorkerLines()  # pylint: disable=protected-access

    def record(message):
        entry = f'severity: WARN message: "{message}" log_location: "trace_cache.py:1"'
        return logging.LogRecord("w", logging.WARNING, "x", 1, "Worker: %s", (entry,), None)

    kept = ("gpfit: could not keep a traced fit in /ro/traces (PermissionError: [Errno 13] "
            "Permission denied: '/ro/traces/.ab-{}'); set GPFIT_TRACE_CACHE=off to stop trying")
    assert keep.filter(record(kept.format("x1")))
    assert not keep.filter(record(kept.format("y2")))
    assert keep.filter(record(kept.replace("/ro/", "/other/").format("x1")))
    refused = ("gpfit: not using the trace cache /shared: writable by group or others "
               "(mode 777), so another user could plant a graph")
    home = "gpfit: no trace cache: HOME is empty and XDG_CACHE_HOME is not set"
    for note in (refused, home):
        assert keep.filter(record(note)) and not keep.filter(record(note))
    failed = "gpfit: a fit call of 4 series raised: ResourceExhaustedError"
    assert keep.filter(record(failed)) and keep.filter(record(failed))
    # Another run (configure_logs makes a new filter) says it again.
    assert logs._WorkerLines().filter(record(home))  # pylint: disable=protected-access


def test_beams_retry_warnings_lose_their_traceback_below_debug():
    """Beam's retries (credentials for gs://, 4 of them in 22 s offline) log
    a warning holding the caught exception's traceback, worded 'Traceback for
    above exception (most recent call last)': one line each below debug."""
    from apache_beam.utils import retry

    @retry.with_exponential_backoff(num_retries=1, initial_delay_secs=0.001)
    def get_credentials():
        raise ValueError("Your default credentials were not found.")

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logging.getLogger().addHandler(handler)
    try:
        for level in ("info", "debug"):
            logs.configure_logs(level)
            stream.truncate(0)
            stream.seek(0)
            with pytest.raises(ValueError):
                get_credentials()
            said = stream.getvalue().strip().splitlines()
            assert "Your default credentials were not found" in said[0], said
            assert (len(said) == 1) == (level == "info"), said
            assert ("most recent call last" in stream.getvalue()) == (level == "debug"), said
    finally:
        logging.getLogger().removeHandler(handler)
        logs.configure_logs("info")


def test_a_librarys_badly_formatted_log_call_does_not_raise_under_gpfits_filters():
    """A library's log call whose arguments do not fit its format (a
    third-party bug) is logging's to report ("--- Logging error ---" on
    stderr) and the caller goes on; below debug, gpfit's traceback filter
    formatted the record itself and raised TypeError into the caller, so a
    warning's typo in Beam or TensorFlow would have failed the bundle. (In
    a process of its own: pytest's log capture raises logging's errors.)"""
    script = ("import logging\n"
              "from pipeline import logs\n"
              "logs.configure_logs('info')\n"
              "logging.getLogger('apache_beam.runners.example').warning('%s of %s', 'one')\n"
              "logging.getLogger('apache_beam.runners.example').warning('next %s', 'line')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Logging error" in done.stderr and "next line" in done.stderr, done.stderr


def test_local_runs_use_the_fn_api_runner_never_prism():
    from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner
    for argv in ([], ["--runner", "DirectRunner"], ["--runner", "FnApiRunner"]):
        assert isinstance(local_runner(PipelineOptions(argv)), FnApiRunner)
    assert local_runner(PipelineOptions(["--runner", "DataflowRunner"])) is None


@pytest.mark.parametrize("name", ["direct", "directrunner", "DIRECT", "fnapi", "switchingdirect",
                                  "apache_beam.runners.direct.direct_runner.DirectRunner"])
def test_the_local_runner_is_named_as_beam_reads_names(name):
    """Beam takes these for its DirectRunner or FnApiRunner; gpfit took them
    for a remote runner: Beam's DirectRunner ran the job, and a Ctrl-C left
    the output folder's lock as a remote job's (the next run exited 4)."""
    from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner
    options = PipelineOptions(["--runner", name])
    assert runtime.is_local(options) and isinstance(local_runner(options), FnApiRunner)
    assert runtime.processes_per_machine(options) == 1


def test_local_runs_sample_bundle_states_often_so_a_bundle_ends_promptly():
    """Beam's only setting of the period is StateSampler's default argument:
    a Beam that renames it fails here, not silently."""
    import inspect

    from apache_beam.runners.worker import statesampler
    local_runner(PipelineOptions([]))
    period = inspect.signature(statesampler.StateSampler.__init__).parameters["sampling_period_ms"]
    assert period.default == runtime.LOCAL_SAMPLING_MS
    sampler = statesampler.StateSampler("stage", None)
    assert sampler.sampling_period_ms == runtime.LOCAL_SAMPLING_MS


def test_a_runner_whose_module_fails_to_load_is_a_usage_error(monkeypatch):
    """Beam's InteractiveRunner imports Beam's DataFrame module, which with
    pandas 3 raises AttributeError ('DataFrame' has no attribute 'first'):
    gpfit said it 'failed unexpectedly', exit 3, and to report it."""
    from apache_beam.runners import runner as beam_runner

    def broken(name):
        raise AttributeError("type object 'DataFrame' has no attribute 'first'")

    monkeypatch.setattr(beam_runner, "create_runner", broken)
    with pytest.raises(UsageError, match=re.escape(
            "--runner InteractiveRunner cannot be built: loading it raised AttributeError: "
            "type object 'DataFrame' has no attribute 'first'; give no --runner")):
        runtime.runner(PipelineOptions(["--runner", "InteractiveRunner"]))


def test_only_the_local_runners_in_process_worker_fits_in_this_process():
    assert runtime.fits_in_this_process(PipelineOptions([]))
    assert runtime.fits_in_this_process(PipelineOptions(
        ["--direct_num_workers", "2", "--direct_running_mode", "multi_threading"]))
    for argv in (["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"],
                 ["--environment_type", "PROCESS"], ["--runner", "DataflowRunner"],
                 ["--runner", "PortableRunner"]):
        assert not runtime.fits_in_this_process(PipelineOptions(argv)), argv


def test_the_dataflow_job_id_line_stays_visible():
    """Airflow's Beam operator reads "Created job with id: [...]", logged at
    INFO by Beam's Dataflow API client; the rest of Beam stays at WARNING."""
    import logging

    logs.configure_logs()
    client = logging.getLogger("apache_beam.runners.dataflow.internal.apiclient")
    assert client.isEnabledFor(logging.INFO)
    assert not logging.getLogger("apache_beam.io.parquetio").isEnabledFor(logging.INFO)
    assert logging.getLogger("gpfit").isEnabledFor(logging.INFO)


def test_the_command_imports_tensorflow_without_keras_3_and_exits_with_runs_code(tmp_path):
    """Start-up (docs/design.md, "Start-up"): the gpfit command points
    TensorFlow at tf-keras, so Keras 3 is never imported (1.4 s), and main()
    leaves with run()'s exit code without Python's finalisation."""
    probe = ("import sys, pipeline.cli, tensorflow, tensorflow_probability; "
             "print(sorted(m for m in ('keras.src', 'tf_keras.src') if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, check=True).stdout.strip().splitlines()[-1]
    assert out == "['tf_keras.src']"
    # A usage error: run() returns 2 before any work; main() must exit with it.
    done = subprocess.run([sys.executable, "-m", "pipeline", "--input", str(tmp_path / "none"),
                           "--output", str(tmp_path / "out")], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 2 and "gpfit: error:" in done.stderr


# ---- process settings: one home (gpcore/threads.py), read everywhere -----------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _image_env() -> dict[str, str]:
    """The ENV settings of the Dockerfile's last stage (continuation lines joined)."""
    with open(os.path.join(REPO, "Dockerfile")) as f:
        text = re.sub(r"\\\n\s*", " ", f.read())
    last = text[text.rindex("\nFROM "):]
    return dict(re.findall(r"(\w+)=(\S+)", " ".join(
        line[len("ENV "):] for line in last.splitlines() if line.startswith("ENV "))))


def test_the_image_the_makefile_and_the_command_take_the_process_env_from_one_module(tmp_path):
    from gpcore.threads import INTER_OP_ENV, INTRA_OP_ENV, PROCESS_ENV

    image = _image_env()
    assert {k: image.get(k) for k in PROCESS_ENV} == PROCESS_ENV
    # TF's thread counts are derived per process (pipeline/fitters.py); one
    # pinned in the image would win over that and starve a one-process VM.
    assert INTRA_OP_ENV not in image and INTER_OP_ENV not in image
    from pipeline import fitters
    assert (fitters.INTRA_OP_ENV, fitters.INTER_OP_ENV) == (INTRA_OP_ENV, INTER_OP_ENV)
    clean = {k: v for k, v in os.environ.items() if k not in PROCESS_ENV}
    made = subprocess.run(["make", "-s", "--no-print-directory", "process-env"], cwd=REPO,
                          env=clean, capture_output=True, text=True, check=True)
    assert dict(line.split("=", 1) for line in made.stdout.split()) == PROCESS_ENV
    mine = subprocess.run(["make", "-s", "--no-print-directory", "process-env"], cwd=REPO,
                          env={**clean, "OPENBLAS_NUM_THREADS": "3"}, capture_output=True,
                          text=True, check=True)
    assert "OPENBLAS_NUM_THREADS=3" in mine.stdout.split()  # the user's own value wins
    # The command sets them before numpy loads: `import pipeline.cli` starts
    # OpenBLAS with one thread, and neither it nor `import gpcore` loads TF.
    probe = ("import os, sys; import gpcore, gpcore.threads; "
             "assert 'numpy' not in sys.modules, 'gpcore imported numpy'; "
             "import pipeline.cli; from threadpoolctl import threadpool_info; "
             "print({k: os.environ.get(k) for k in gpcore.threads.PROCESS_ENV}, "
             "[i['num_threads'] for i in threadpool_info() if i['internal_api'] == 'openblas'], "
             "'tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], env={**clean, "PYTHONPATH": REPO},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == f"{PROCESS_ENV} [1] False", out


def test_tensorflow_loads_for_the_job_without_jax_which_stays_importable():
    """TensorFlow imports JAX at its own import where JAX is installed
    (TFLite's helpers); the job's import (builder.import_tensorflow) blocks
    that, and only while TensorFlow loads (docs/design.md, "Start-up")."""
    import importlib.util

    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed here (the jaxbench extra): nothing to block")
    probe = ("import sys; from pipeline import builder; builder.import_tensorflow(); "
             "import tensorflow as tf; loaded = 'jax' in sys.modules; import jax; "
             "print(loaded, tf.constant(2.0).numpy() * 2, jax.numpy.add(1, 1))")
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": REPO},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-3:] == ["False", "4.0", "2"]


def test_worker_processes_import_gpfit_not_a_pipeline_package_of_the_folder_run_in(tmp_path):
    """gpfit installed, started in a project that has a `pipeline` package of
    its own: local worker processes put that folder first on their path, as
    `python -m` and `-c` do, and failed every bundle with "No module named
    'pipeline.reading'". The launcher here starts as the console script
    does, without that folder on its path (-P)."""
    data = write_long(str(tmp_path / "in"), make_series(n_series=3))
    project = tmp_path / "project"
    (project / "pipeline").mkdir(parents=True)
    for name in ("__init__.py", "reading.py"):
        (project / "pipeline" / name).write_text("# the user's own package\n")
    done = command_in("", "-P", "-m", "pipeline", "--input", data, "--output",
                      str(tmp_path / "out"), "--direct_num_workers", "2",
                      "--direct_running_mode", "multi_processing", cwd=str(project))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("gpfit: 4 series: 3 ok, 1 skipped, 0 failed"), done.stdout


def test_a_worker_process_that_exits_before_it_connects_fails_the_run(tmp_path):
    """A local worker process (multi_processing) that exits before it
    connects to the runner: Beam's runner waited for it for ever, the
    output folder locked by the waiting launcher's heartbeat. Offline in a
    network namespace whose loopback is down (`unshare -rn`), each worker
    gave up reaching the runner on localhost after about 2.5 min and exited 1,
    and gpfit hung. Here each worker process exits 1 as it starts (a
    sitecustomize that sees Beam's worker environment), which is the same
    for the runner, at once. The run must end, exit 3, in one line, and
    leave the folder unlocked."""
    data = write_long(str(tmp_path / "in"), make_series(n_series=3))
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os\n"
        "if 'CONTROL_API_SERVICE_DESCRIPTOR' in os.environ:  # Beam's SDK worker process\n"
        "    os._exit(1)\n")
    output = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), REPO]))
    try:
        done = subprocess.run([sys.executable, "-m", "pipeline", "--input", data, "--output",
                               str(output), "--direct_num_workers", "2",
                               "--direct_running_mode", "multi_processing"],
                              env=env, capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"gpfit still waited for its dead workers after 150 s: {hung.stderr!r}")
    assert done.returncode == 3, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("gpfit: error: a worker process died") and "code 1" in last, \
        done.stderr
    assert "Traceback" not in done.stderr
    assert not (output / "_RUNNING.json").exists()
    assert not (output / "_SUCCESS.json").exists()


def _workers_of(pid: int) -> list[int]:
    """The Beam worker processes whose parent is pid (from /proc)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", encoding="ascii") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/cmdline", "rb") as f:
                worker = b"sdk_worker_main" in f.read()
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid and worker:
            found.append(int(name))
    return found


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads processes' parents in /proc")
def test_worker_processes_leave_at_once_when_the_launcher_is_killed(tmp_path):
    """SIGKILL of a gpfit run under multi_processing as its worker processes
    start (the OOM killer, kill -9): each outlived the launcher by about
    120 s, some 230 MB, waiting 60 s for its logging channel and 60 s for
    its control channel to the runner, which had died with the launcher
    (measured: 121.4 s). Each now watches its parent and leaves once it is
    re-parented (pipeline/launcher_watch.py): gone in 0.2-0.3 s."""
    data = write_long(str(tmp_path / "in"), make_series(n_series=3))
    launcher = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "--input", data, "--output", str(tmp_path / "out"),
         "--direct_num_workers", "2", "--direct_running_mode", "multi_processing"],
        env=dict(os.environ, PYTHONPATH=REPO), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and time.monotonic() < deadline and launcher.poll() is None:
            time.sleep(0.05)
            workers = _workers_of(launcher.pid)
        assert len(workers) == 2, "the run's two worker processes never started"
    finally:
        launcher.kill()
        launcher.wait()
    killed = time.monotonic()
    while any(map(_running, workers)) and time.monotonic() - killed < 10:
        time.sleep(0.05)
    left = [pid for pid in workers if _running(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"worker processes {left} outlived the killed launcher by 10 s"


# Each worker process reaches the runner's channels on localhost as a worker
# does with its loopback down (offline, in a network namespace), only at
# once instead of after 60 s a channel: gRPC's wait for the channel times out.
UNREACHABLE_RUNNER = (
    "import os\n"
    "if 'CONTROL_API_SERVICE_DESCRIPTOR' in os.environ:  # Beam's SDK worker process\n"
    "    import grpc\n"
    "    class _NeverReady:\n"
    "        def __init__(self, channel):\n"
    "            pass\n"
    "        def result(self, timeout=None):\n"
    "            raise grpc.FutureTimeoutError()\n"
    "    grpc.channel_ready_future = _NeverReady\n")


@pytest.mark.parametrize("level", ["info", "debug"])
def test_a_worker_that_cannot_reach_the_runner_says_why_in_a_line(tmp_path, level):
    """A local worker process that cannot reach the runner on localhost has
    no channel to log through: each printed Beam's error for the logging
    channel and the traceback it exited with, 80 lines for two workers
    before gpfit's one line. Below debug each says its errors in one line;
    --log_level debug still shows the tracebacks."""
    data = write_long(str(tmp_path / "in"), make_series(n_series=3))
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(UNREACHABLE_RUNNER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), REPO]))
    done = subprocess.run([sys.executable, "-m", "pipeline", "--input", data, "--output",
                           str(tmp_path / "out"), "--direct_num_workers", "2",
                           "--direct_running_mode", "multi_processing", "--log_level", level],
                          env=env, capture_output=True, text=True, timeout=150)
    assert done.returncode == 3, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("gpfit: error: a worker process died"), done.stderr
    if level == "debug":
        assert "Traceback (most recent call last)" in done.stderr
        assert "channel_ready_future" in done.stderr
        return
    assert "Traceback" not in done.stderr and not [l for l in lines if l.startswith("  ")], \
        done.stderr
    worker = [l for l in lines if " worker: " in l]
    assert worker and len(lines) <= 8, done.stderr
    assert any("exited: FutureTimeoutError at apache_beam/runners/worker/sdk_worker.py" in l
               for l in worker), done.stderr
