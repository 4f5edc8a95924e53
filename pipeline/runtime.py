"""Where and how the job runs: the local runner, its worker processes and
their TensorFlow threads (progress lines: pipeline/progress.py; the log
lines the gpfit command shows: pipeline/logs.py).

Local runs never try the network. Beam's DirectRunner first tries the Prism
runner, which downloads a binary at run time (and can hang on a network that
drops packets); only the Python FnApiRunner honours --direct_num_workers /
--direct_running_mode. So when no runner, DirectRunner or FnApiRunner is
asked for, gpfit runs the FnApiRunner itself, built the way the DirectRunner
builds it (workers get the options).

GP matrices are small; oversubscribed thread pools make them slower, not
faster (docs/design.md, "Measured facts"). N worker processes on C cores
therefore get max(1, C // N) cores each, used by as many fitters side by
side with one intra-op thread each, set before TensorFlow starts
(pipeline/fitters.py). The process's other settings, and the names of the
thread counts a user may set instead, are gpcore/threads.py's.
"""
from __future__ import annotations

import _thread
import contextlib
import functools
import logging
import os
import shlex
import signal
import threading
import time
from typing import Optional

from apache_beam.options.pipeline_options import (DebugOptions, DirectOptions,
                                                  PipelineOptions, PortableOptions,
                                                  StandardOptions)
from apache_beam.runners.runner import PipelineRunner

from gpcore.threads import INTER_OP_ENV, INTRA_OP_ENV  # noqa: F401  (re-exported)
from pipeline import fitters
from pipeline.io.errors import UsageError, first_line
from pipeline.io.lock import process_stat

try:  # POSIX only: Windows has no ulimit (docs/design.md, "Runners and quiet runs")
    import resource
except ImportError:
    resource = None
from pipeline.options import GPFitOptions, names_runner

_LOG = logging.getLogger(__name__)

# The runners gpfit runs as its local FnApiRunner (options.names_runner
# reads a --runner value as Beam does).
LOCAL_RUNNERS = ("DirectRunner", "SwitchingDirectRunner", "FnApiRunner")


# ---- the runner ----------------------------------------------------------------

def names_local(runner: Optional[str]) -> bool:
    """Whether a --runner value (None: not given) names the local runner.
    `--runner direct` was taken for a remote runner: Beam's own DirectRunner
    ran the job, and a Ctrl-C left the output folder locked as a remote
    job's, the next run refused (exit 4) for 10 minutes."""
    return runner is None or names_runner(runner, *LOCAL_RUNNERS)


def is_local(options: PipelineOptions) -> bool:
    return names_local(options.view_as(StandardOptions).runner)


def ends_here(options: PipelineOptions) -> bool:
    """Whether the job ends with this process: the local runner, or Beam's
    in-process BundleBasedDirectRunner. A stop then releases the lock and
    Beam's temporary files; under that runner a Ctrl-C had said the job
    goes on and left the folder locked (the next run exited 4)."""
    # Beam's in-process runner, which gpfit runs as given (docs/design.md,
    # "Start-up").
    return is_local(options) or names_runner(options.view_as(StandardOptions).runner,
                                             "BundleBasedDirectRunner")


def local_runner(options: PipelineOptions) -> Optional[PipelineRunner]:
    """An FnApiRunner for local runs; None to let Beam build the runner named
    by --runner (Dataflow, Prism, Flink, ...)."""
    if not is_local(options):
        return None
    prompt_state_sampler()
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    provision = fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded))
    debug = options.view_as(GPFitOptions).log_level == "debug"
    return _local_runner_class()(provision_info=provision, debug_workers=debug)


# A terminal's Ctrl-C sends SIGINT to the whole process group. Local worker
# processes (multi_processing) died of it, each printing a KeyboardInterrupt
# traceback on gpfit's stderr, while the launcher stopped the job and said so
# in one line. So they start with SIGINT ignored: a shell's `trap '' INT`
# holds through exec, and Python leaves an ignored SIGINT alone. The
# launcher ends them as it ends the job; SIGTERM and SIGKILL still do
# (docs/design.md, "Runners and quiet runs").
IGNORE_INTERRUPT = "trap '' INT; exec "

# Without the gcp extra (`make run`'s environment, a plain `pip install
# gpfit`), importing Beam logs "apitools not found" on the root logger, and
# logging.warning then gives that logger a stderr handler before Beam's
# worker adds its own, which sends to the launcher: each local worker
# process printed every line it logged, Beam's start-up and gpfit's own
# again, 20-25 a worker, on gpfit's stderr. So a worker imports Beam with a
# null handler on the root logger, as the gpfit command does
# (pipeline/io/beam_import.py, which a worker cannot import before Beam's
# worker module runs as __main__: pipeline/worker_stderr.py reads it), then
# runs that module as `-m` would (docs/design.md, "Runners and quiet runs").
# And as `-m` and `-c` do, Python put the folder gpfit was started in first
# on the worker's path: a project's own `pipeline` package there stood in
# for gpfit's, and every bundle failed. The worker puts it last, so that it
# imports the gpfit the launcher imported, installed or in a checkout.
# A worker that cannot reach the runner printed some 40 lines of Beam's
# errors and tracebacks; below --log_level debug it says each in one line
# (worker_stderr.quiet_local_worker). First of all, a worker watches the
# launcher that started it and leaves once it is gone
# (pipeline/launcher_watch.py): one still starting outlived a SIGKILL of
# the launcher by 120 s, waiting for channels to a runner that had died.
WORKER_MODULE = "apache_beam.runners.worker.sdk_worker_main"


def quiet_worker(debug: bool) -> str:
    """The Python code a local worker process runs (see above); made in the
    launcher, whose pid it watches."""
    return "\n".join((
        "import logging, runpy, sys",
        'if sys.path[:1] == [""]: sys.path.append(sys.path.pop(0))',
        "from pipeline import launcher_watch",
        f"launcher_watch.leave_with({os.getpid()})",
        "held = logging.NullHandler()",
        "logging.getLogger().addHandler(held)",
        "import apache_beam",
        "logging.getLogger().removeHandler(held)",
        "from pipeline import worker_stderr",
        f"worker_stderr.quiet_local_worker(debug={debug})",
        f'runpy.run_module("{WORKER_MODULE}", run_name="__main__", alter_sys=True)'))


def local_worker_command(command: str, debug: bool = False) -> str:
    """Beam's command line of a local worker process (`PYTHON -m
    WORKER_MODULE`) -> gpfit's: SIGINT ignored, the folder it starts in last
    on its path, Beam imported quietly, its errors in one line each unless
    `debug` (--log_level debug)."""
    module = f" -m {WORKER_MODULE}"
    if command.endswith(module):
        command = command[:-len(module)] + " -c " + shlex.quote(quiet_worker(debug))
    return IGNORE_INTERRUPT + command


@functools.cache
def _local_runner_class() -> type:
    """The FnApiRunner whose worker processes ignore SIGINT and import Beam
    quietly (see above)."""
    from apache_beam.portability import python_urns
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    class LocalRunner(fn_runner.FnApiRunner):
        def __init__(self, *, debug_workers: bool = False, **kwargs):
            super().__init__(**kwargs)
            self._debug_workers = debug_workers

        def run_via_runner_api(self, pipeline_proto, options):
            for environment in pipeline_proto.components.environments.values():
                if (environment.urn == python_urns.SUBPROCESS_SDK
                        and not environment.payload.startswith(IGNORE_INTERRUPT.encode())):
                    environment.payload = local_worker_command(
                        environment.payload.decode(), self._debug_workers).encode()
            return super().run_via_runner_api(pipeline_proto, options)

    return LocalRunner


# Beam's in-process worker samples each bundle's state on a thread that
# sleeps up to 200 ms between samples, and the bundle's end waits for its
# next wake: 22 bundles of a small night waited 0.23-0.27 s in all. Local
# runs sample every LOCAL_SAMPLING_MS instead (docs/design.md, "What a
# small night costs"); what the samples measure is the same.
LOCAL_SAMPLING_MS = 10


def prompt_state_sampler() -> None:
    """Makes this process's Beam state samplers sample every
    LOCAL_SAMPLING_MS (their default argument, the only way to set it)."""
    from apache_beam.runners.worker import statesampler

    init = statesampler.StateSampler.__init__
    if init.__defaults__ == (statesampler.DEFAULT_SAMPLING_PERIOD_MS,):
        init.__defaults__ = (LOCAL_SAMPLING_MS,)


def runner(options: PipelineOptions) -> PipelineRunner:
    """The runner of these options: local_runner's, or the one --runner names.

    Raises:
      UsageError: Beam has no runner of that name, or it cannot be loaded
        (its extra is not installed).
    """
    local = local_runner(options)
    if local is not None:
        return local
    from apache_beam.runners.runner import create_runner

    name = options.view_as(StandardOptions).runner
    try:
        return create_runner(name)
    except (ValueError, ImportError) as err:
        raise UsageError(f"--runner {name} cannot be built: {first_line(err)} Give one of "
                         "those, or no --runner to run here") from err
    except Exception as err:  # pylint: disable=broad-except
        # A runner whose module fails to load with the installed libraries
        # (Beam's InteractiveRunner and pandas 3: an AttributeError).
        raise UsageError(f"--runner {name} cannot be built: loading it raised "
                         f"{type(err).__name__}: {first_line(err)}; give no --runner to run "
                         "here, or a runner gpfit supports (README.md, \"Usage\")") from err


# ---- a stopped run's worker processes ----------------------------------------------
# A stopped launcher (SIGTERM, Ctrl-C: stops.Stopped) unwinds through Beam's
# runner, which waits for each local worker process (multi_processing) to
# end. One that is connected ends as its control stream closes, at once; one
# still starting (importing Beam) never connects and never ends, and the
# launcher hung, its lock's heartbeat going, until killed. So a stop ends
# the worker processes still there after WORKERS_GRACE_S. A stopped worker
# (SIGSTOP: frozen, the job waiting on it) holds a SIGTERM pending until it
# is continued, so each also gets SIGCONT: it then takes the SIGTERM and
# ends (docs/design.md, "Runners and quiet runs").
WORKERS_GRACE_S = 5.0
STOPPING = threading.Event()  # set by a stop; cleared as a run starts (pipeline/cli.py)


def end_workers_after(grace_s: float = WORKERS_GRACE_S) -> None:
    """The run is stopping: after grace_s, SIGTERM (and SIGCONT, for a
    stopped one) to this process's Beam worker processes still running
    (from a daemon thread; a signal handler may call it)."""
    STOPPING.set()
    threading.Thread(target=_end_workers, args=(grace_s,), name="gpfit-stop",
                     daemon=True).start()


def _end_workers(grace_s: float) -> None:
    time.sleep(grace_s)
    for pid in _worker_children():
        # A stopped one takes its SIGTERM only once continued.
        _send(pid, signal.SIGTERM, signal.SIGCONT)


# A job that fails as one worker process exits (killed, crashed) unwinds
# through Beam's runner, which closes the other workers' channels: each then
# ended through Python's own shutdown, where its gRPC threads, still in C++,
# were unwound by force, and the C++ runtime aborted the process, printing
# "terminate called after throwing an instance of ''" and "FATAL: exception
# not rethrown" on gpfit's stderr beside its one line. So before the
# unwinding the others get SIGTERM (and SIGCONT), whose default action ends
# a worker at once, without that shutdown (Beam's worker sets no handler for
# it); one still there after WORKERS_GONE_S gets SIGKILL. They end in a few
# milliseconds (docs/design.md, "Runners and quiet runs").
WORKERS_GONE_S = 1.0


def end_workers_now(gone_s: float = WORKERS_GONE_S, every_s: float = 0.005) -> None:
    """The job failed (a worker process exited, or was frozen): SIGTERM and
    SIGCONT to this process's other Beam worker processes now, waiting up to
    gone_s for them to end, then SIGKILL to any left; also marks the run as
    stopping (STOPPING), so that their ends are not reported."""
    STOPPING.set()
    pids = set(_worker_children())
    for pid in pids:
        _send(pid, signal.SIGTERM, signal.SIGCONT)
    deadline = time.monotonic() + gone_s
    while pids and time.monotonic() < deadline:
        time.sleep(every_s)
        # An ended one is a zombie until Beam reaps it: "Z", or no cmdline.
        pids &= {pid for pid, state in _worker_states().items() if state != "Z"}
    for pid in pids:
        _send(pid, signal.SIGKILL)


def _send(pid: int, *signums: int) -> None:
    for signum in signums:
        try:
            os.kill(pid, signum)
        except OSError:
            return  # ended meanwhile


def _worker_children() -> list[int]:
    """Pids of this process's children that run Beam's SDK worker (Linux's
    /proc; none elsewhere)."""
    return list(_worker_states())


def _worker_states() -> dict[int, str]:
    """{pid: state letter of /proc/<pid>/stat} of this process's children
    that run Beam's SDK worker ("T": stopped)."""
    found = {}
    for name in _child_pids():
        stat = process_stat(name)
        if stat is None or stat[1] != str(os.getpid()):
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if b"sdk_worker_main" in f.read():
                    found[int(name)] = stat[0]
        except OSError:
            continue  # ended meanwhile
    return found


def _child_pids() -> list[str]:
    """This process's children's pids as /proc names: from each thread's
    /proc/self/task/<tid>/children (a child is listed under the thread that
    started it), else, on a kernel without those files, every process in
    /proc (its parent checked by the caller): a look each second scanned
    every process of the host, 1.5 ms of CPU at 76 processes."""
    if not os.path.isdir("/proc"):
        return []
    try:
        tasks = os.listdir("/proc/self/task")
        if not os.path.exists(f"/proc/self/task/{tasks[0]}/children"):
            raise FileNotFoundError
    except (OSError, IndexError):
        return os.listdir("/proc")
    found = []
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as f:
                found.extend(f.read().split())
        except OSError:
            continue  # the thread ended meanwhile
    return found


# ---- a local worker process that exits --------------------------------------------
# Beam's local runner starts each worker process (multi_processing) from a
# thread, "run_worker", that raises once the process exits with an error;
# the runner itself learns that a worker is gone only through its channels,
# so it waited for ever for one that exited before it connected: one that
# died starting, or that could not reach the runner on localhost (offline,
# in a network namespace without loopback, each gave up after 2.5 min), the
# launcher's heartbeat keeping the output folder locked. So while the job
# runs, that thread's end stops the command: SIGTERM to its main thread,
# which pipeline/cli.py turns into WorkerExited (docs/design.md, "Runners
# and quiet runs").
WORKER_THREAD = "run_worker"
_WATCHING = threading.Event()  # set while the command's job runs (worker_exits_watched)
_WORKER_EXITS: list[str] = []  # what run_worker raised, this run; the first stopped it


class WorkerExited(RuntimeError):
    """A local worker process exited while the job ran (Beam's words, which
    errors.lost_worker reads)."""


def worker_exit_pending() -> Optional[WorkerExited]:
    """The WorkerExited a SIGTERM of the main thread stands for, once: the
    first worker exit while the job was watched; else None (a real
    SIGTERM)."""
    if not _WORKER_EXITS or not _WATCHING.is_set():
        return None
    _WATCHING.clear()  # one stop: a second exit, or a real signal, is a stop
    return WorkerExited(_WORKER_EXITS[0])


@contextlib.contextmanager
def worker_exits_watched(watch: bool = True, frozen_after_s: Optional[float] = None):
    """While the block runs (the command's job), a local worker process's
    exit stops it (worker_exited), and so does one stopped (frozen) for
    frozen_after_s (None: not watched; see watch_frozen); not where `watch`
    is False (a run outside the main thread, where the command's SIGTERM
    handler is not set)."""
    done = threading.Event()
    if watch:
        _WORKER_EXITS.clear()
        _WATCHING.set()
        if frozen_after_s is not None:
            threading.Thread(target=watch_frozen, args=(done, frozen_after_s),
                             name="gpfit-frozen", daemon=True).start()
    try:
        yield
    finally:
        done.set()
        _WATCHING.clear()


_STOP_LOCK = threading.Lock()


def _stop_job(why: str) -> None:
    """Stops the watched job for `why` (the first reason only): SIGTERM to
    the main thread, which cli's handler turns into WorkerExited(why)."""
    # Under a lock: a worker's exit and the frozen watch at once each saw
    # two reasons, and neither signalled, the job hung.
    with _STOP_LOCK:
        _WORKER_EXITS.append(why)
        first = len(_WORKER_EXITS) == 1
    # Only to a handler of the command's: SIGTERM's default would kill the process.
    if first and callable(signal.getsignal(signal.SIGTERM)):
        if hasattr(signal, "pthread_kill"):
            signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)
        else:  # POSIX's; elsewhere the handler runs once the main thread runs Python
            _thread.interrupt_main(signal.SIGTERM)


# ---- a local worker process that is stopped ------------------------------------------
# A worker process stopped (SIGSTOP by an operator or a tool: /proc state
# "T"; a debugger's stop, "t", is left alone) holds the job: the runner
# waits on its bundle, with no time limit, and gpfit hung, its lock's
# heartbeat going, until the scheduler's timeout. So while the job runs, a
# worker seen stopped at every look for FROZEN_AFTER_S stops the job as a
# worker's exit does: exit 3, and the stop's SIGCONT lets it take its
# SIGTERM. Looks are counted, not seconds: a launcher that is stopped too
# (Ctrl-Z stops the whole process group) looks at nothing meanwhile, and a
# `fg` continues the group at once.
FROZEN_AFTER_S, FROZEN_EVERY_S = 60.0, 1.0
FROZEN = "was stopped (frozen)"  # in the reason, which pipeline/cli.py reads


def watch_frozen(done: threading.Event, after_s: float = FROZEN_AFTER_S,
                 every_s: float = FROZEN_EVERY_S) -> None:
    """Until `done`, looks at the worker processes every every_s; one
    stopped at every look for after_s stops the job (_stop_job)."""
    needed, seen = max(1, round(after_s / every_s)), {}
    while not done.wait(every_s):
        if STOPPING.is_set():
            return
        stopped = [pid for pid, state in _worker_states().items() if state == "T"]
        seen = {pid: seen.get(pid, 0) + 1 for pid in stopped}
        frozen = [pid for pid, looks in seen.items() if looks >= needed]
        if frozen and _WATCHING.is_set():
            _stop_job(f"worker process {frozen[0]} {FROZEN} for {after_s:.0f} s")
            return


def worker_exited(args) -> bool:
    """Stops the command's job when `args` (threading.excepthook's) is a
    local worker process's exit, while the job runs; whether it did (the
    command's last line then says it)."""
    if (args.thread is None or args.thread.name != WORKER_THREAD
            or not _WATCHING.is_set() or STOPPING.is_set()):
        return False
    _stop_job(first_line(args.exc_value))
    return True


# ---- worker processes and their threads ----------------------------------------

def runs_worker_processes(options: PipelineOptions) -> bool:
    """Whether the local runner runs the job in worker processes
    (multi_processing), however many: --direct_num_workers 1, or 0 on a
    one-core machine, starts one, as open to a stop (watch_frozen) as two."""
    return (is_local(options)
            and options.view_as(DirectOptions).direct_running_mode == "multi_processing")


def processes_per_machine(options: PipelineOptions) -> Optional[int]:
    """How many SDK worker processes share one machine's cores.

    Returns:
      N for the local runner (N = --direct_num_workers in multi_processing
      mode, else 1: threads share one process); None where the runner starts
      one process per core (Dataflow's default for Python) or is unknown.
    """
    runner = options.view_as(StandardOptions).runner
    if names_local(runner):
        direct = options.view_as(DirectOptions)
        if direct.direct_running_mode != "multi_processing":
            return 1
        return direct.direct_num_workers or fitters.machine_cores()
    experiments = options.view_as(DebugOptions).experiments or []
    if "no_use_multiple_sdk_containers" in experiments:
        return 1
    return None


def check_workers(options: PipelineOptions) -> None:
    """Refuses a --direct_num_workers for the local runner that Beam's
    FnApiRunner takes and then fails or crawls with: below 0 ("list index
    out of range"), or more than the machine's cores. A worker past one per
    core only competes for them, and each costs start-up time and memory in
    any running mode: 200 threads on 2 cores took 185 s for 3 series (2 took
    9 s), and 1000000000 failed the job ("can't start new thread") after the
    output folder was cleared. 0 is Beam's one worker per core.

    Raises:
      UsageError: --direct_num_workers below 0 or above the cores.
    """
    workers = options.view_as(DirectOptions).direct_num_workers
    if not is_local(options) or workers is None:
        return
    if workers < 0:
        raise UsageError(f"--direct_num_workers must be >= 0 (0: one worker per core); "
                         f"got {workers}")
    cores = fitters.machine_cores()
    if workers > cores:
        raise UsageError(f"--direct_num_workers {workers} is more than this machine's {cores} "
                         "cores: a worker past one per core only competes for them, at a cost "
                         f"in start-up time and memory; give --direct_num_workers {cores} or "
                         "fewer, or 0 (one per core, on any machine)")


# Files a process may hold open (RLIMIT_NOFILE) that the local runner needs
# with N worker processes (multi_processing), each talking to the runner
# over gRPC channels: on 3 series 2 workers ran at a limit of 22 and failed
# at 21, 1 ran at 17 and failed at 14 (in one process 8 sufficed). Twice
# (FILES_BASE + FILES_PER_WORKER x N) is asked: inputs and shards hold more.
FILES_BASE, FILES_PER_WORKER = 12, 5


def open_files_needed(workers: int) -> int:
    """The open-files limit asked of a local run with `workers` worker processes."""
    return 2 * (FILES_BASE + FILES_PER_WORKER * workers)


def check_open_files(options: PipelineOptions) -> None:
    """Refuses a local run with worker processes under an open-files limit
    (ulimit -n) too low for them: at 8, gRPC's port failed to bind (exit 3)
    and the lock stayed behind, as its removal could not open a file; at
    16, two minutes of gRPC retries ended in "a worker process died".

    Raises:
      UsageError: the soft limit below open_files_needed.
    """
    workers = processes_per_machine(options)
    if not is_local(options) or workers == 1 or resource is None:
        return
    needed = open_files_needed(workers)
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if limit != resource.RLIM_INFINITY and limit < needed:
        raise UsageError(
            f"this process may open {limit} files at once (ulimit -n), and the local runner's "
            f"{workers} worker processes (--direct_running_mode multi_processing) need "
            f"{needed} (gRPC channels to each); raise the limit (ulimit -n {needed} in the "
            "shell that runs gpfit), or run fewer worker processes (--direct_num_workers), or "
            "all in one process (--direct_running_mode multi_threading)")


def check_thread_counts(options: PipelineOptions) -> None:
    """Checks the TF thread counts in this environment against this
    machine's cores (fitters.thread_counts_given) where the job's workers
    inherit them: every runner but Dataflow's, whose workers run on other
    machines with their own environment (the image's) and check it there
    against their own cores. A launcher's cores say nothing of the
    workers': a Flex Template's launcher VM runs the workers' image.

    Raises:
      UsageError: a count that is not a whole number from 1 to the cores.
    """
    if not names_runner(options.view_as(StandardOptions).runner, "DataflowRunner"):
        fitters.thread_counts_given()


def fits_in_this_process(options: PipelineOptions) -> bool:
    """Whether the job's fitting step runs in this process: the local
    runner's in-process worker (not multi_processing, no other worker
    environment)."""
    return (is_local(options) and processes_per_machine(options) == 1
            and not options.view_as(PortableOptions).environment_type)


def fitters_per_machine(options: PipelineOptions) -> int:
    """How many fitters a local run's workers run side by side on this
    machine: each process's (configure_tf_threads) times its processes."""
    processes = processes_per_machine(options) or fitters.machine_cores()
    intra, _ = fitters.thread_counts_given()
    return processes * max(1, cores_per_process(fitters.machine_cores(), processes) // intra)


def cores_per_process(cores: int, processes: Optional[int]) -> int:
    """Cores each of `processes` processes on `cores` cores has (None: one
    process per core)."""
    return max(1, cores // (processes or cores))


def configure_tf_threads(processes: Optional[int]) -> int:
    """Sets this process's TF thread pools, once, for its share of the
    machine's cores (cores_per_process); returns how many fitters it runs
    side by side (pipeline/fitters.py says how the counts are chosen)."""
    return fitters.configure_threads(cores_per_process(fitters.machine_cores(), processes))
