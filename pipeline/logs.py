"""The log lines the gpfit command shows: gpfit's own, one line each and
escaped; Beam's, TensorFlow's and Python's warnings, and tracebacks, only
at --log_level debug (docs/design.md, "Runners and quiet runs")."""
from __future__ import annotations

import logging
import re
import sys
import threading

from pipeline.io.beam_import import log_level_in  # noqa: F401  (re-exported)
from pipeline.io.errors import one_line
from pipeline.runtime import STOPPING, worker_exited
from pipeline.worker_stderr import HARMLESS

_LOG = logging.getLogger(__name__)

# ---- log lines -------------------------------------------------------------------
# Worker processes of the local runner send their log records to the runner,
# which logs each as 'Worker: <protobuf text>' at INFO. Those lines are cut
# down to the ones from gpfit (progress, fitter built) and warnings, and
# shown as plain messages.

_WORKER_LOGGER = "apache_beam.runners.portability.local_job_service"
_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')


# Python's warnings, which a worker logs (pipeline/worker_stderr.py) from the
# warnings module.
_PYTHON_WARNING = re.compile(r'log_location: "[^"]*/warnings\.py:')


# The trace cache's notes on its folder (gpcore/trace_cache.py), each said
# once a process: under multi_processing every worker process said the
# same line, one per --direct_num_workers.
_ONCE_A_RUN = ("gpfit: no trace cache:", "gpfit: not using the trace cache ",
               "gpfit: could not keep a traced fit in ")


class _WorkerLines(logging.Filter):
    """Keeps gpfit's own worker lines and warnings; drops Beam's chatter on
    the worker lines' logger (held at INFO for them: the portable job
    service's "Completed job in ... seconds" comes there too), Python's
    warnings, unless `debug` (--log_level debug), and a note of
    _ONCE_A_RUN that another worker process already said this run."""

    def __init__(self, debug: bool = False):
        super().__init__()
        self._debug = debug
        self._said: set[str] = set()  # notes of _ONCE_A_RUN shown

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != "Worker: %s":
            return self._debug or record.levelno >= logging.WARNING
        if not record.args:
            return True
        entry = str(record.args[0])
        found = _MESSAGE.search(entry)
        message = _unescape(found.group(1)) if found else entry
        if message.startswith(HARMLESS):
            return False
        if not self._debug and _PYTHON_WARNING.search(entry):
            return False
        if record.levelno < logging.WARNING and not message.startswith("gpfit"):
            return False
        if message.startswith(_ONCE_A_RUN):
            # Up to the error's words, which may name a temporary folder
            # of the worker's own (mkdtemp's).
            note = message.split(" (", 1)[0]
            if note in self._said:
                return False
            self._said.add(note)
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
    pipeline.io.stops.Stopped: 15 [while running 'FitSeries/...']"), which
    read as a crash beside gpfit's one "stopped by SIGTERM" line. Told by
    the flag and the logger, not by the exception's name."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (STOPPING.is_set() and record.name.startswith("apache_beam"))


def _is_rpc_error(kind) -> bool:
    """Whether an exception type is gRPC's RpcError (grpc is not imported here)."""
    return isinstance(kind, type) and any(
        c.__name__ == "RpcError" and c.__module__.split(".")[0] == "grpc" for c in kind.__mro__)


# Beam's logger of the runner's side of a worker's data channel.
_DATA_PLANE = "apache_beam.runners.worker.data_plane"


class _LostChannel(logging.Filter):
    """Below debug, drops Beam's "Failed to read inputs in the data plane"
    with gRPC's RpcError: the runner's side of a channel to a worker
    process that went away (killed, crashed), logged before the runner
    learns the worker is gone. The job then fails, and gpfit's last line
    says a worker process died, and how (pipeline/cli.py); --log_level
    debug shows it with its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == _DATA_PLANE and record.exc_info
                    and _is_rpc_error(record.exc_info[0]))


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
            f, (_LostChannel, _NoTracebacks, _QuietStop, _DataflowAdvice, _OneLine))]
        if numeric > logging.DEBUG:
            handler.addFilter(_LostChannel())  # before _NoTracebacks takes the exception off
            handler.addFilter(_NoTracebacks())
            handler.addFilter(_QuietStop())
            handler.addFilter(_DataflowAdvice())
        handler.addFilter(_OneLine())
    # Beam's runner threads (gRPC readers, worker watchers) die with a
    # traceback printed straight to stderr when a worker process is lost;
    # below debug they get one log line (the run's last line says what to do).
    # At every level a worker process's exit stops the job (runtime.worker_exited).
    global _THREAD_TRACEBACKS
    _THREAD_TRACEBACKS = numeric <= logging.DEBUG
    threading.excepthook = _thread_ended


_THREAD_TRACEBACKS = False  # a thread's error is printed whole (--log_level debug)


def _thread_ended(args) -> None:
    stopped = worker_exited(args)
    if _THREAD_TRACEBACKS:
        threading.__excepthook__(args)
        return
    if args.exc_type is SystemExit or STOPPING.is_set():  # a stop's workers, ended
        return
    if stopped or _is_rpc_error(args.exc_type):
        # A worker process's exit, which the run's last line says, and the
        # runner's gRPC threads whose channel to it broke (_LostChannel):
        # whole at --log_level debug, above.
        return
    name = args.thread.name if args.thread is not None else "?"
    _LOG.warning("thread %s ended: %s: %s (traceback: --log_level debug)", name,
                 args.exc_type.__name__, str(args.exc_value).strip().split("\n")[0])


def _unescape(text: str) -> str:
    try:
        return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return text
