"""Where and how the job runs: the local runner, worker processes' TensorFlow
threads, progress lines, and the log lines the gpfit command shows.

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

import functools
import logging
import os
import re
import shlex
import signal
import sys
import threading
import time
import weakref
from typing import Callable, Optional

from apache_beam.options.pipeline_options import (DebugOptions, DirectOptions,
                                                  PipelineOptions, PortableOptions,
                                                  StandardOptions)
from apache_beam.runners.runner import PipelineRunner

from gpcore.threads import INTER_OP_ENV, INTRA_OP_ENV  # noqa: F401  (re-exported)
from pipeline import fitters
from pipeline.io.errors import UsageError, first_line, one_line
from pipeline.io.lock import process_stat
from pipeline.options import names_runner

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
    return _local_runner_class()(provision_info=provision)


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
WORKER_MODULE = "apache_beam.runners.worker.sdk_worker_main"
QUIET_WORKER = "\n".join((
    "import logging, runpy, sys",
    'if sys.path[:1] == [""]: sys.path.append(sys.path.pop(0))',
    "held = logging.NullHandler()",
    "logging.getLogger().addHandler(held)",
    "import apache_beam",
    "logging.getLogger().removeHandler(held)",
    f'runpy.run_module("{WORKER_MODULE}", run_name="__main__", alter_sys=True)'))


def local_worker_command(command: str) -> str:
    """Beam's command line of a local worker process (`PYTHON -m
    WORKER_MODULE`) -> gpfit's: SIGINT ignored, the folder it starts in last
    on its path, Beam imported quietly."""
    module = f" -m {WORKER_MODULE}"
    if command.endswith(module):
        command = command[:-len(module)] + " -c " + shlex.quote(QUIET_WORKER)
    return IGNORE_INTERRUPT + command


@functools.cache
def _local_runner_class() -> type:
    """The FnApiRunner whose worker processes ignore SIGINT and import Beam
    quietly (see above)."""
    from apache_beam.portability import python_urns
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    class LocalRunner(fn_runner.FnApiRunner):
        def run_via_runner_api(self, pipeline_proto, options):
            for environment in pipeline_proto.components.environments.values():
                if (environment.urn == python_urns.SUBPROCESS_SDK
                        and not environment.payload.startswith(IGNORE_INTERRUPT.encode())):
                    environment.payload = local_worker_command(
                        environment.payload.decode()).encode()
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
# A stopped launcher (SIGTERM, Ctrl-C: cli.Stopped) unwinds through Beam's
# runner, which waits for each local worker process (multi_processing) to
# end. One that is connected ends as its control stream closes, at once; one
# still starting (importing Beam) never connects and never ends, and the
# launcher hung, its lock's heartbeat going, until killed. So a stop ends
# the worker processes still there after WORKERS_GRACE_S.
WORKERS_GRACE_S = 5.0
STOPPING = threading.Event()  # set by a stop; cleared as a run starts (pipeline/cli.py)


def end_workers_after(grace_s: float = WORKERS_GRACE_S) -> None:
    """The run is stopping: after grace_s, SIGTERM to this process's Beam
    worker processes still running (from a daemon thread; a signal handler
    may call it)."""
    STOPPING.set()
    threading.Thread(target=_end_workers, args=(grace_s,), name="gpfit-stop",
                     daemon=True).start()


def _end_workers(grace_s: float) -> None:
    time.sleep(grace_s)
    for pid in _worker_children():
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass  # ended meanwhile


def _worker_children() -> list[int]:
    """Pids of this process's children that run Beam's SDK worker (Linux's
    /proc; none elsewhere)."""
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        stat = process_stat(name)
        if stat is None or stat[1] != str(os.getpid()):
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if b"sdk_worker_main" in f.read():
                    found.append(int(name))
        except OSError:
            continue  # ended meanwhile
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
STOP_ON_WORKER_EXIT = threading.Event()  # set by the command while its job runs
_WORKER_EXITS: list[str] = []  # what run_worker raised, this run; the first stopped it


class WorkerExited(RuntimeError):
    """A local worker process exited while the job ran (Beam's words, which
    errors.lost_worker reads)."""


def worker_exit_pending() -> Optional[WorkerExited]:
    """The WorkerExited a SIGTERM of the main thread stands for, once: the
    first worker exit while STOP_ON_WORKER_EXIT was set; else None (a real
    SIGTERM)."""
    if not _WORKER_EXITS or not STOP_ON_WORKER_EXIT.is_set():
        return None
    STOP_ON_WORKER_EXIT.clear()  # one stop: a second exit, or a real signal, is a stop
    return WorkerExited(_WORKER_EXITS[0])


def watch_worker_exits() -> None:
    """Starts a run's watch (the command, just before its job runs)."""
    _WORKER_EXITS.clear()
    STOP_ON_WORKER_EXIT.set()


def _worker_exited(args) -> None:
    """Stops the command's job when `args` (threading.excepthook's) is a
    local worker process's exit, while the job runs."""
    if (args.thread is None or args.thread.name != WORKER_THREAD
            or not STOP_ON_WORKER_EXIT.is_set() or STOPPING.is_set()):
        return
    _WORKER_EXITS.append(first_line(args.exc_value))
    # Only to a handler of the command's: SIGTERM's default would kill the process.
    if len(_WORKER_EXITS) == 1 and callable(signal.getsignal(signal.SIGTERM)):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)


# ---- worker processes and their threads ----------------------------------------

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
        return direct.direct_num_workers or (os.cpu_count() or 1)
    experiments = options.view_as(DebugOptions).experiments or []
    if "no_use_multiple_sdk_containers" in experiments:
        return 1
    return None


def check_workers(options: PipelineOptions) -> None:
    """Refuses a negative --direct_num_workers for the local runner, which
    Beam's FnApiRunner takes and then fails the job with ("list index out of
    range"); 0 is Beam's one worker per core.

    Raises:
      UsageError: --direct_num_workers below 0.
    """
    workers = options.view_as(DirectOptions).direct_num_workers
    if is_local(options) and workers is not None and workers < 0:
        raise UsageError(f"--direct_num_workers must be >= 0 (0: one worker per core); "
                         f"got {workers}")


def fits_in_this_process(options: PipelineOptions) -> bool:
    """Whether the job's fitting step runs in this process: the local
    runner's in-process worker (not multi_processing, no other worker
    environment)."""
    return (is_local(options) and processes_per_machine(options) == 1
            and not options.view_as(PortableOptions).environment_type)


def cores_per_process(cores: int, processes: Optional[int]) -> int:
    """Cores each of `processes` processes on `cores` cores has (None: one
    process per core)."""
    return max(1, cores // (processes or cores))


def configure_tf_threads(processes: Optional[int]) -> int:
    """Sets this process's TF thread pools, once, for its share of the
    machine's cores (cores_per_process); returns how many fitters it runs
    side by side (pipeline/fitters.py says how the counts are chosen)."""
    return fitters.configure_threads(cores_per_process(os.cpu_count() or 1, processes))


class Progress:
    """Counts the series this process fitted; says so at most every
    `every_s` seconds: when a fit call ends (add) and, during a long call,
    from a heartbeat thread (beat, see start_heartbeat).

    A line gives done/total series, the rate and an ETA. `total` is the
    number of series the job fits (set_total; the pipeline counts them
    once they are all read); before that the line says "of ? (not counted
    yet)". `processes` is how many processes fit the job's series (None:
    not known, as on Dataflow); the ETA assumes they share the series
    evenly and is left out where their number is not known. The rate is
    per second of fit calls, not of the process's life (which holds the
    wait for the job's reading), and the ETA counts the running call's
    series as due when the rate says, less the time it has run.
    The clock is injected so that tests can drive it.
    """

    def __init__(self, clock: Callable[[], float], every_s: float = 30.0,
                 processes: Optional[int] = 1):
        self._clock = clock
        self._every_s = every_s
        self._processes = processes
        self._start = clock()
        self._last = self._start
        self._lock = threading.Lock()
        self._call: Optional[tuple[int, float, float]] = None  # series, started, estimated s
        # Wall seconds in finished fit calls, and where the next began (a
        # call counted by `add` alone, without start_call: at the last one's end).
        self._fitting_s = 0.0
        self._since = self._start
        self.done = 0
        self.total: Optional[int] = None

    def set_total(self, total: Optional[int]) -> None:
        if total is not None:
            self.total = int(total)

    def start_call(self, series: int, estimated_s: float) -> None:
        """A fit call of `series` series, estimated at `estimated_s` core-seconds, began."""
        with self._lock:
            self._call = (series, self._clock(), estimated_s)

    def add(self, n: int) -> Optional[str]:
        """Records n more series (a call ended); returns a line when one is due."""
        with self._lock:
            now = self._clock()
            started = self._call[1] if self._call is not None else self._since
            self._fitting_s += max(now - started, 0.0)
            self._since = now
            self.done += n
            self._call = None
            return self._due()

    def beat(self) -> Optional[str]:
        """A line when one is due and a fit call is running (the heartbeat
        thread's check; an idle process says nothing)."""
        with self._lock:
            return self._due() if self._call is not None else None

    def _due(self) -> Optional[str]:
        now = self._clock()
        if now - self._last < self._every_s:
            return None
        self._last = now
        return self._line(now)

    def _line(self, now: float) -> str:
        elapsed = max(now - self._start, 1e-9)
        where = (f"in process {os.getpid()}" if self._processes == 1 else
                 f"in process {os.getpid()} (one of {self._processes or '?'}; total: the job's)")
        of = f"{self.done}/{self.total}" if self.total is not None else f"{self.done} of ? (not counted yet)"
        if self.done:
            rate = self.done / max(self._fitting_s, 1e-9)
            eta = None
            if self.total is not None and self._processes:
                eta = self._eta(max(self.total / self._processes - self.done, 0.0), rate, now)
            # Two significant digits below 1 series/s: long series fit at
            # minutes each, which two decimals said as "0.00 series/s".
            said = f"{rate:.2f}" if rate >= 1.0 else f"{rate:.2g}"
            pace = f"{said} series/s, ETA " + (f"{eta:.0f} s" if eta is not None
                                                   else "not known")
        else:
            pace = "rate and ETA not known yet (no fit call finished)"
        line = f"gpfit progress: {of} series fitted {where} in {elapsed:.0f} s; {pace}"
        if self._call is not None:
            series, started, estimated = self._call
            line += (f"; a fit call of {series} series running for {now - started:.0f} s "
                     f"(estimated {estimated:.1f} core-s)")
        return line

    def _eta(self, left: float, rate: float, now: float) -> float:
        """Seconds until this process's `left` series are fitted at `rate`
        (series per second of fit calls): the running call's share of them
        is due `series / rate` after it began, which may be soon when it
        has run long (a call of most of the series left)."""
        if self._call is None:
            return left / rate
        series, started, _ = self._call
        running = min(series, left)
        return max(running / rate - (now - started), 0.0) + (left - running) / rate


def start_heartbeat(progress: Progress, log: Callable[[str], None],
                    every_s: float) -> threading.Event:
    """Checks `progress` every every_s seconds (wall clock) on a daemon
    thread and logs its due lines, so that lines come while a fit call
    runs for minutes; the thread ends when the returned event is set or
    `progress` is no longer used (it holds only a weak reference)."""
    stop = threading.Event()
    watched = weakref.ref(progress)
    del progress

    def run():
        while not stop.wait(every_s):
            current = watched()
            if current is None:
                return
            line = current.beat()
            del current
            if line:
                log(line)

    threading.Thread(target=run, name="gpfit-progress", daemon=True).start()
    return stop


# ---- log lines -------------------------------------------------------------------
# Worker processes of the local runner send their log records to the runner,
# which logs each as 'Worker: <protobuf text>' at INFO. Those lines are cut
# down to the ones from gpfit (progress, fitter built) and warnings, and
# shown as plain messages.

_WORKER_LOGGER = "apache_beam.runners.portability.local_job_service"
_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')
# Warnings every local worker process gives, and harmless here: the worker
# parses the options without gpfit's option class, and has no staging folder.
_HARMLESS = ("Discarding unparseable args", "No semi_persistent_directory found")


# Python's warnings, which a worker logs (pipeline/worker_stderr.py) from the
# warnings module.
_PYTHON_WARNING = re.compile(r'log_location: "[^"]*/warnings\.py:')


class _WorkerLines(logging.Filter):
    """Keeps gpfit's own worker lines and warnings; drops Beam's chatter on
    the worker lines' logger (held at INFO for them: the portable job
    service's "Completed job in ... seconds" comes there too), and Python's
    warnings, unless `debug` (--log_level debug)."""

    def __init__(self, debug: bool = False):
        super().__init__()
        self._debug = debug

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != "Worker: %s":
            return self._debug or record.levelno >= logging.WARNING
        if not record.args:
            return True
        entry = str(record.args[0])
        found = _MESSAGE.search(entry)
        message = _unescape(found.group(1)) if found else entry
        if message.startswith(_HARMLESS):
            return False
        if not self._debug and _PYTHON_WARNING.search(entry):
            return False
        if record.levelno < logging.WARNING and not message.startswith("gpfit"):
            return False
        if message.startswith("gpfit"):  # one line, as in the launcher (_OneLine)
            message = one_line(message)
        record.msg, record.args = "worker: %s", (message,)
        return True


class _BeamChatter(logging.Filter):
    """Below debug, drops Beam's INFO lines logged on the root logger, where
    the portable job service's client relays the job's messages ("Completed
    job in ... seconds")."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.msg == "Worker: %s"


# Beam's Dataflow runner says "Created job with id: [...]" and where to watch
# the job at INFO; Airflow's Beam and Dataflow operators read the job id from
# that line, so it stays visible.
DATAFLOW_LOGGER = "apache_beam.runners.dataflow"
# ... but not its advice, at INFO on every launch with --setup_file, to
# pre-build a container (docs/dataflow.md shows gpfit's image).
_DATAFLOW_ADVICE = "Pipeline has additional dependencies to be installed"


class _DataflowAdvice(logging.Filter):
    """Below debug, drops the Dataflow runner's advice line (a handler's
    filter: the runner logs on a child of DATAFLOW_LOGGER)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name.startswith(DATAFLOW_LOGGER)
                    and str(record.msg).startswith(_DATAFLOW_ADVICE))


def log_level_in(argv: list[str]) -> str:
    """--log_level's value in argv, before the options are parsed (so that a
    refusal of them is logged at the level asked for); "info" by default.
    The last one given, as the parser takes it (a wrapper's default followed
    by the user's own)."""
    found = "info"
    for i, arg in enumerate(argv):
        if arg.startswith("--log_level="):
            found = arg.split("=", 1)[1]
        elif arg == "--log_level" and i + 1 < len(argv):
            found = argv[i + 1]
    return found


# A traceback's text: Python's header, or Beam's retries' ("Traceback for
# above exception (most recent call last)", four times over for gs://
# credentials on a machine without them).
_TRACEBACK = re.compile(r"Traceback[^\n]*\(most recent call last\)")


class _NoTracebacks(logging.Filter):
    """Below debug, a record carrying a traceback (Beam logs one for a failed
    bundle and for each retry, workers send theirs as text) is cut to its
    first line: gpfit ends with one line saying what failed, and
    --log_level debug shows the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a bad format: logging's own error says so
            return True
        if record.exc_info or _TRACEBACK.search(message):
            first = message.strip().splitlines()[0] if message.strip() else record.levelname
            record.msg, record.args = "%s (traceback: --log_level debug)", (first,)
            record.exc_info = record.exc_text = record.stack_info = None
        return True


# gpfit's own loggers: their lines name paths, and quote errors that quote data.
_GPFIT_LOGGERS = ("gpfit", "pipeline", "gpcore")


class _OneLine(logging.Filter):
    """gpfit's own lines, at every level, with what does not print written as
    Python escapes it (errors.one_line): a path or an error's text with a
    newline or a carriage return made two lines, the second one free text a
    log collector takes for a record of its own (docs/design.md, "Runners
    and quiet runs"). A traceback at debug keeps its lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".")[0] in _GPFIT_LOGGERS:
            try:
                message = record.getMessage()
            except (TypeError, ValueError):  # a bad format: logging's own error says so
                return True
            if not message.isprintable():
                record.msg, record.args = "%s", (one_line(message),)
        return True


class _QuietStop(logging.Filter):
    """Below debug, once the run is stopping (STOPPING), Beam's records are
    dropped: they say the bundle the stop cut short failed ("ERROR
    pipeline.cli.Stopped: 15 [while running 'FitSeries/...']"), which read as
    a crash beside gpfit's one "stopped by SIGTERM" line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (STOPPING.is_set() and record.name.startswith("apache_beam"))


def configure_logs(level: str = "info") -> None:
    """gpfit's lines at `level` (--log_level), Beam's Dataflow runner at INFO,
    the rest of Beam at WARNING; worker lines filtered (see above); tracebacks
    and Python's warnings only at debug."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(message)s")
    numeric = getattr(logging, str(level).upper(), logging.INFO)
    for name in ("gpfit", "pipeline"):
        logging.getLogger(name).setLevel(numeric)
    logging.getLogger("apache_beam").setLevel(max(numeric, logging.WARNING))
    logging.getLogger(DATAFLOW_LOGGER).setLevel(max(numeric, logging.INFO))
    worker = logging.getLogger(_WORKER_LOGGER)
    worker.setLevel(max(numeric, logging.INFO))
    worker.filters = [f for f in worker.filters if not isinstance(f, _WorkerLines)]
    worker.addFilter(_WorkerLines(debug=numeric <= logging.DEBUG))
    root.filters = [f for f in root.filters if not isinstance(f, _BeamChatter)]
    if numeric > logging.DEBUG:
        root.addFilter(_BeamChatter())
    # Python's warnings (numpy's overflow on a series that then fails, a
    # library's deprecation) were printed whole at every --log_level: like
    # TensorFlow's and Beam's lines, they show at debug only (worker
    # processes log theirs: pipeline/worker_stderr.py).
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").setLevel(
        logging.WARNING if numeric <= logging.DEBUG else logging.CRITICAL + 1)
    for handler in root.handlers:
        handler.filters = [f for f in handler.filters if not isinstance(
            f, (_NoTracebacks, _QuietStop, _DataflowAdvice, _OneLine))]
        if numeric > logging.DEBUG:
            handler.addFilter(_NoTracebacks())
            handler.addFilter(_QuietStop())
            handler.addFilter(_DataflowAdvice())
        handler.addFilter(_OneLine())
    # Beam's runner threads (gRPC readers, worker watchers) die with a
    # traceback printed straight to stderr when a worker process is lost;
    # below debug they get one log line (the run's last line says what to do).
    # At every level a worker process's exit stops the job (_worker_exited).
    global _THREAD_TRACEBACKS
    _THREAD_TRACEBACKS = numeric <= logging.DEBUG
    threading.excepthook = _thread_ended


_THREAD_TRACEBACKS = False  # a thread's error is printed whole (--log_level debug)


def _thread_ended(args) -> None:
    _worker_exited(args)
    if _THREAD_TRACEBACKS:
        threading.__excepthook__(args)
        return
    if args.exc_type is SystemExit or STOPPING.is_set():  # a stop's workers, ended
        return
    name = args.thread.name if args.thread is not None else "?"
    _LOG.warning("thread %s ended: %s: %s (traceback: --log_level debug)", name,
                 args.exc_type.__name__, str(args.exc_value).strip().split("\n")[0])


def _unescape(text: str) -> str:
    try:
        return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return text
