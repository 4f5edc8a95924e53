"""The `gpfit` command: check everything, build and run the job, report.

The job writes its own manifest, last (pipeline/manifest_step.py): _SUCCESS.json,
or _FAILED.json when more series failed than --max_failure_fraction allows.
Where the runner hands back a job to wait for, gpfit waits, reads the
manifest and reports it. Where it does not (a template, as a Flex Template
launch builds; a Dataflow --dry_run), gpfit's work ends once the job is
built, and the job writes the manifest when it runs.

While it runs, gpfit holds the output folder's lock (pipeline/io/lock.py):
a second run into the same folder exits 4 naming the first.

Exit codes (pipeline/io/errors.py; the table: README.md, "Exit codes"):
0 done (or, without a job to wait for, built); 1 the run finished but more
series failed than --max_failure_fraction allows; 2 refused before any work:
a bad option or runner, unusable input or --previous_output, an unusable
output folder; 3 the job failed: it raised, a worker process died, an input
file could not be read (named), or it ended without a manifest; 4 the output
folder is locked by another run; 5 the output's storage refused a write
(full, read-only, no permission); 128 + N stopped by signal N (SIGINT 130,
SIGTERM 143). Each ends with one line on stderr naming the thing and the
fix; tracebacks only with --log_level debug.
"""
from __future__ import annotations

# Before numpy/TensorFlow load (here and in worker processes, which inherit
# the environment): gpfit's process settings, one BLAS thread among them
# (gpcore/threads.py; it imports nothing heavy, nor does `gpcore`).
from gpcore import threads

threads.set_process_env()

import logging  # noqa: E402  (after the environment above)
import os  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from pipeline.io import beam_import, streams  # noqa: E402
from pipeline.io.errors import EXIT_USAGE, descriptor_limit  # noqa: E402

# gRPC's C++ lines off below --log_level debug, before Beam imports grpc
# (beam_import.quiet_grpc: it reads its setting at import), from the
# command line this process was started with.
beam_import.quiet_grpc(sys.argv[1:])

if beam_import.refusal() is not None:
    # At import: the console script imports this module before main runs,
    # and Beam's import below would fail with a traceback and exit 1
    # ("too many series failed").
    streams.opened()
    streams.write(f"gpfit: error: {beam_import.refusal()}", sys.stderr)
    raise SystemExit(EXIT_USAGE)

# Beam's import with Python's garbage collector paused (gpcore/threads.py),
# and without the line it logs where the gcp extra is missing, which also
# configured the root logger before gpfit does (logs.configure_logs).
with threads.collection_paused("apache_beam"), beam_import.quietly():
    from pipeline import builder, fitters, logs, portable, runtime, sdist_build
    from pipeline.io import inputs, lock, manifest, outputs, stops
    from pipeline.io.errors import (EXIT_OK, EXIT_PIPELINE_FAILED, EXIT_STORAGE,
                                    EXIT_TOO_MANY_FAILED, SIGNAL_BASE, UsageError,
                                    first_line, last_line, lost_worker, one_line, storage_error,
                                    storage_line)
    from pipeline.io.fingerprint import VERSION
    from pipeline.options import help_parser, parse_options


_LOG = logging.getLogger("gpfit")

_NAMED_AT_MOST = 10  # unreadable files named in gpfit's last lines
_CLEARING, _CLEARED = "clearing", "cleared"  # how far a run got with its output folder
_SIGNALLED: list[int] = []  # the stop signal received, for a Stopped that Beam wrapped
# How Beam's local runner says a worker process ended (runtime.WorkerExited).
_EXIT_CODE = re.compile(r"Worker subprocess exited with return code (-?\d+)")
# How runtime.watch_frozen says a worker process was stopped too long.
_FROZEN = re.compile(r"worker process (\d+) " + re.escape(runtime.FROZEN) + r" for (\d+) s")


def run(argv: list[str] | None = None) -> int:
    """Runs gpfit with command-line arguments; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    streams.opened()  # a closed stdout or stderr: before anything opens a file or logs
    if "-h" in argv or "--help" in argv:
        streams.write(help_parser().format_help().rstrip("\n"))  # `gpfit --help | head`
        return EXIT_OK
    if "--version" in argv:
        streams.write(f"gpfit {VERSION}")  # the release's one home: pipeline/io/fingerprint.py
        return EXIT_OK
    logs.configure_logs(logs.log_level_in(argv))
    started_at, started = time.time(), time.monotonic()
    handlers = _stop_on_signals()
    try:
        return _run(argv, started_at, started)
    except stops.Stopped as stop:
        if not stop.said:
            _say(f"gpfit: error: stopped by {stop.name} before any work; nothing was written")
        return SIGNAL_BASE + stop.signum
    except Exception as err:  # pylint: disable=broad-except  (a bug: one line, the code)
        _LOG.debug("gpfit: unexpected error", exc_info=True)
        _say(f"gpfit: error: gpfit failed unexpectedly: {type(err).__name__}: "
             f"{first_line(err)}; run again with --log_level debug for the traceback and "
             "report it")
        return EXIT_PIPELINE_FAILED
    finally:
        stops.restore(handlers)


def _run(argv: list[str], started_at: float, started: float) -> int:
    try:
        fitters.check_blas_threads()
        options = parse_options(argv)
        runtime.check_thread_counts(options)  # read by every worker, once the job runs
        dry_run = _is_dry_run(options)
        # The folders are made under the lock (_prepare_output), not here.
        built = builder.build_from_options(options, check_paths=not dry_run,
                                           started_at=started_at, make_folders=False)
    except UsageError as err:
        return _refused(err)
    output = built.gp.output
    if dry_run:
        return _launch(options, built, dry_run, output, started)
    local, keep_lock, cleared = runtime.ends_here(options), False, []
    made = outputs.missing_folders(output)  # the lock's creation makes them
    code = None  # the run's exit code, once it has one
    try:
        lock.acquire(output, built.run_id, built.gp.break_lock, local)
        with lock.Heartbeat(output, built.run_id):
            code = _launch(options, built, dry_run, output, started, cleared)
    except UsageError as err:
        code = _refused(err)
    except stops.Stopped as stop:
        finished = _finished(output) if _CLEARED in cleared else None
        if finished is not None:  # the stop came after the job's manifest: the run is done
            stop.said = True
            _warn(f"{stop.name} came after the job had written {finished[0]}; the run is "
                  "complete")
            code = _report(*finished, output, time.monotonic() - started)
            return code
        _say_stopped(stop, output, local, bool(cleared))
        if local:  # the job ended with this process: nothing else will clean up
            lock.release(output, built.run_id)
            _remove_temporary(output)
        # A remote job outlives its launcher, and holds the folder; before the
        # folder was touched no job was launched.
        keep_lock = not local and bool(cleared)
        raise
    finally:
        # Also after a launch that does not wait (a template): nothing would
        # refresh the lock, and a template may run later or never. The job
        # removes it too, after its manifest, should this process be gone.
        if not keep_lock:
            _release(output, built.run_id, made, code)
    return code


def _release(output: str, run_id: str, made: list[str], code: int | None) -> None:
    """Releases the lock and removes the folders the run made (`made`:
    outputs.missing_folders) where empty: a run stopped or refused in a
    folder it made leaves none (docs/design.md, "Output folder"). A stop
    meanwhile waits for both; once the run has its exit code (`code`), it
    is said and the code stands: the stop replaced a run's exit 0 beside
    its _SUCCESS.json (docs/design.md, "The fitter", A stop as the lock is
    released)."""
    try:
        with stops.deferred():
            lock.release(output, run_id)
            outputs.remove_empty(made)
    except stops.Stopped as stop:
        if code is None:
            raise
        stop.said = True
        _warn(f"{stop.name} came after the run had ended; its result stands")


def _launch(options, built: builder.Built, dry_run: bool, output: str, started: float,
            cleared: list | None = None) -> int:
    """Clears the output, runs the job and waits for it; -> exit code.
    `cleared` gets _CLEARING as the output folder's clearing begins and
    _CLEARED once it is done (what a stop then says: _run)."""
    if not dry_run:
        portable.check_workers_start(options)  # bounded: Beam would wait for them for ever
        cleared = [] if cleared is None else cleared
        try:
            _prepare_output(built, cleared)
        except OSError as err:  # BeamIOError is one too
            refused = storage_error(err, output)
            if refused is None:
                raise
            raise refused from err
        cleared.append(_CLEARED)  # a manifest from now on is this run's job's
    warming = None
    if not dry_run and runtime.fits_in_this_process(options):
        # The kept trace's one-off start in TensorFlow, off the job's path
        # (docs/design.md, "What a small night costs").
        # The same thread counts as the job's fitting step sets.
        runtime.configure_tf_threads(runtime.processes_per_machine(options))
        warming = fitters.warm_up_in_background(builder.fit_config(built.gp))
    try:
        # A worker process that exits would be waited for for ever; watched
        # where the command's signal handlers are set.
        # So would one that is stopped (frozen), under multi_processing.
        frozen_after_s = (runtime.FROZEN_AFTER_S if runtime.runs_worker_processes(options)
                          else None)
        with (runtime.worker_exits_watched(stops.in_main_thread(), frozen_after_s),
              sdist_build.quiet(_LOG.isEnabledFor(logging.DEBUG))):
            result = built.pipeline.run()
        # A dry run or a template (a Flex launch, --template_location): Beam
        # built the job and handed it over, and there is no job here to wait
        # for. The job writes its own manifest when it runs.
        if dry_run or not getattr(result, "has_job", True):
            _say_built(options, built, dry_run)
            return EXIT_OK
        _wait(result)
        name, found = manifest.read(output)
    except Exception as err:  # pylint: disable=broad-except
        if _SIGNALLED:  # Beam caught Stopped inside a step and failed the job with it
            raise stops.Stopped(_SIGNALLED[0]) from err
        _joined(warming)
        if cleared and _CLEARING in cleared:
            _remove_empty_tables(output)
        return _failed(err, output)
    # Stopped (a signal) goes on at once: the warm-up's daemon thread ends with the process.
    _joined(warming)
    return _report(name, found, output, time.monotonic() - started)


def _joined(warming) -> None:
    """Waits for the warm-up thread, if any: one short fit, done long before
    the job is; no thread of the run outlives it."""
    if warming is not None:
        warming.join()


def _say(line: str) -> None:
    """Prints one of gpfit's lines on stderr with what does not print in it
    (a path's or an error's newline) escaped: one line (README, "Exit
    codes")."""
    streams.write(one_line(line), sys.stderr)


def _warn(line: str) -> None:
    """One of gpfit's warnings, said as _say does; not under --log_level
    error (a scheduler's quiet run), as none of its logged ones are."""
    if _LOG.isEnabledFor(logging.WARNING):
        _say(f"gpfit: warning: {line}")


def _refused(err: UsageError) -> int:
    """One line for a refusal; its exit code (errors.UsageError.exit_code)."""
    _LOG.debug("gpfit: refused", exc_info=True)
    _say(f"gpfit: error: {err}")
    return err.exit_code


def _failed(err: Exception, output: str) -> int:
    """One line for a job that failed, by what its error says; -> exit code."""
    _LOG.debug("gpfit: the pipeline failed", exc_info=True)
    text = _full_text(err)
    storage = storage_line(text, output)
    if storage is not None:
        _say(f"gpfit: error: the job failed: {storage}")
        return EXIT_STORAGE
    frozen = _FROZEN.search(text)
    if frozen:
        _say(f"gpfit: error: a worker process (pid {frozen.group(1)}) was stopped (SIGSTOP: "
             f"frozen) for {frozen.group(2)} s, and the job waited on it; it was ended and the "
             f"job stopped; no {outputs.SUCCESS_MARKER} was written; run again into {output} "
             "(its files are replaced)")
        return EXIT_PIPELINE_FAILED
    if _GRPC_BIND in text:
        _say(f"gpfit: error: the pipeline failed: the local runner could not open a port on "
             f"localhost for its workers (gRPC: {_GRPC_BIND} [::]:0): this process may have "
             f"no file descriptor left ({descriptor_limit()}) or no loopback; raise the "
             "limit, e.g. ulimit -n 4096 in the shell that runs gpfit, and run again "
             f"(--log_level debug shows gRPC's error); no {outputs.SUCCESS_MARKER} was written")
        return EXIT_PIPELINE_FAILED
    if lost_worker(text):
        code = _EXIT_CODE.search(text)
        how = ("killed, or out of memory: see the system log" if code is None else
               _worker_end(int(code.group(1))))
        _say(f"gpfit: error: a worker process died mid-run ({how}) and the job stopped; no "
             f"{outputs.SUCCESS_MARKER} was written; run again into {output} (its files are "
             "replaced), with fewer or smaller worker processes if memory ran out")
        return EXIT_PIPELINE_FAILED
    _say(f"gpfit: error: the pipeline failed: {_what_failed(err)}; no "
         f"{outputs.SUCCESS_MARKER} was written; run again with --log_level debug for the "
         "traceback")
    return EXIT_PIPELINE_FAILED


# gRPC's error where the local runner's server could not take a port: out
# of descriptors (ulimit -n) mid-run, or no loopback. Below debug gRPC's own
# lines, which said why, are off (beam_import.quiet_grpc).
_GRPC_BIND = "Failed to bind to address"


def _worker_end(code: int) -> str:
    """How a worker process ended, from its exit code as Python's subprocess
    gives it (-N: killed by signal N), in words: "exit code -11" named no
    signal (a crash, SIGSEGV) and "-9" not the OOM killer."""
    if code >= 0:
        return (f"exit code {code}: out of memory, or unable to start or to reach the runner "
                "on localhost; see the system log, or --log_level debug for its errors")
    if -code == getattr(signal, "SIGKILL", None):  # POSIX only
        return "killed (SIGKILL: the OOM killer or kill -9); see the system log"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = "a signal"
    return f"killed by {name} (signal {-code}); see the system log"


# Beam runs pip (and the setup file's build) as it stages a job; its error
# (apache_beam.utils.processes) starts "Full traceback: Traceback (most
# recent call last):", which was all gpfit's line said, and ends with the
# process's output, escaped, where pip's last "ERROR:" says what failed.
_STAGING_COMMAND = ("Full traceback:", "Full trace:")
_PIP_PACKAGE = re.compile(r"Pip install failed for package: (\S+)")
_PROCESS_ERROR = re.compile(r"ERROR: (.*?)(?:\\[nr]|$)", re.M)


def _what_failed(err: Exception) -> str:
    """The line of a job's error that says what failed: its message's first,
    or where the message is a traceback (a worker process's, which Beam's
    runner passes on as text), its last, the exception that was raised; for
    a command Beam ran to stage the job, the command's last error."""
    text = str(err).lstrip()
    if text.startswith(_STAGING_COMMAND):
        package = _PIP_PACKAGE.search(text)
        said = _PROCESS_ERROR.findall(text)
        what = (f"pip failed for {package.group(1)}" if package
                else "a command Beam ran to stage the job failed")
        return f"{what}: {said[-1].strip()}" if said else what
    if text.startswith("Traceback (most recent call last)"):
        return last_line(err)
    return first_line(err)


def _full_text(err: BaseException) -> str:
    """The messages of err and its causes, as one text."""
    texts, seen = [], set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        texts.append(f"{type(err).__name__}: {err}")
        err = err.__cause__ or err.__context__
    return "\n".join(texts)


def _stop_on_signals() -> dict:
    """Makes SIGTERM and SIGINT raise Stopped in the main thread (pipeline/io/stops.py);
    returns the handlers to restore. Elsewhere (a thread) signals are left alone."""
    if not stops.in_main_thread():
        return {}

    _SIGNALLED.clear()
    runtime.STOPPING.clear()

    def stop(signum, _frame):
        exited = runtime.worker_exit_pending() if signum == signal.SIGTERM else None
        if exited is not None:  # runtime.worker_exited's: the job fails, it was not stopped
            runtime.end_workers_now()  # before the unwinding closes their channels
            runtime.end_workers_after()  # one still starting among them
            raise exited
        _SIGNALLED.append(signum)
        # A second signal while unwinding: default action; a worker still
        # starting would hold the unwinding for ever.
        stops.stop(signum, before=runtime.end_workers_after)

    return stops.handle(stop)


def _finished(output: str):
    """(name, content) of the manifest in output, or None: after this run
    cleared the folder, one there is this run's job's, written last."""
    try:
        name, found = manifest.read(output)
    except (OSError, ValueError):
        return None
    return None if name is None else (name, found)


def _say_stopped(stop: stops.Stopped, output: str, local: bool, cleared: bool = True) -> None:
    stop.said = True
    if not cleared:  # the lock was taken and released; the earlier run's files are as they were
        _say(f"gpfit: error: stopped by {stop.name} before any work; the output folder "
             f"{output} was left as it was")
    elif local:
        _say(f"gpfit: error: stopped by {stop.name} before the run finished; no "
             f"{outputs.SUCCESS_MARKER} was written, the lock and Beam's temporary files were "
             f"removed; run again into {output} (its files are replaced)")
    else:
        _say(f"gpfit: error: stopped by {stop.name} while waiting for the job, which goes on: "
             f"it writes its manifest in {output} when it finishes and the folder stays "
             "locked until then; cancel the job with the runner's tools if it should stop")


def _remove_temporary(output: str) -> None:
    """Deletes Beam's temporary folders of this run's writes (a stopped local
    run's; the next run would clear them too)."""
    try:
        temporary = [path for path in outputs.existing_files(output)
                     if outputs.is_temporary(outputs.relative(path, output))]
        if temporary:
            from apache_beam.io.filesystems import FileSystems
            FileSystems.delete(temporary)
        if outputs.is_local(output):
            outputs.remove_empty_folders(output)
    except Exception:  # pylint: disable=broad-except  (best effort: the next run clears them)
        _LOG.debug("gpfit: temporary files left", exc_info=True)


def _remove_empty_tables(output: str) -> None:
    """Removes the empty folders this run made in a local output whose job
    failed without a manifest (tables', Beam's temporary ones), as a stop
    does: with them, a new folder looked like an output and was not
    removed (docs/design.md, "The fitter", A stop of a run into a new
    folder). A manifest makes the folder a result: it is left whole."""
    try:
        if (outputs.is_local(output) and os.path.isdir(output)
                and manifest.find(output) is None):
            outputs.remove_empty_folders(output)
    except Exception:  # pylint: disable=broad-except  (best effort: the next run clears them)
        _LOG.debug("gpfit: empty folders left", exc_info=True)


def main() -> None:
    """The console script: run, then leave at once. The work is done and
    every file closed by then; Python's own finalisation of TensorFlow's and
    Beam's modules would add seconds to every command and do nothing gpfit
    needs (docs/design.md, "Start-up")."""
    streams.leave(run())


def _is_dry_run(options) -> bool:
    """--dry_run: build the Dataflow job, submit nothing, read nothing.

    Raises:
      UsageError: --dry_run with another runner, which would ignore it and
        run the job for real; a --dry_run value that is not true.
    """
    from apache_beam.options.pipeline_options import StandardOptions, TestOptions

    value = options.view_as(TestOptions).dry_run
    if not value:
        return False
    if str(value).lower() not in ("true", "1", "yes"):
        # Beam's --dry_run is a string, and Beam's runner reads any but ''
        # as true: --dry_run=False built the job and submitted nothing.
        raise UsageError(f"--dry_run={value}: Beam takes any value as true; give "
                         "--dry_run=True to build the job without submitting it, or leave "
                         "--dry_run out to submit it")
    from pipeline.dataflow import names_dataflow

    runner_name = options.view_as(StandardOptions).runner
    if not names_dataflow(runner_name):
        raise UsageError(f"--dry_run builds a Dataflow job without submitting it; it needs "
                         f"--runner DataflowRunner, got {runner_name or 'the local runner'}")
    return True


def _prepare_output(built: builder.Built, cleared: list) -> None:
    """Clears the previous run's files (no stale shard or manifest survives);
    `cleared` gets _CLEARING just before the first deletion.

    Raises:
      OSError: the storage refused (errors.storage_error says which).
      UsageError: the folder now holds a file gpfit did not write.
    """
    # Listed again under the lock: a run that started and finished between
    # this run's checks and its lock left files the first listing lacked
    # (its shards beside this run's, every series twice), or had deleted
    # ones it held (docs/design.md, "Output folder").
    files = outputs.check_output(built.gp.output, built.spec.files)
    # From the first deletion on, the earlier run is gone; a stop during the
    # listing above leaves it whole, and says so (docs/design.md, "The
    # fitter", A stop before the clearing).
    cleared.append(_CLEARING)
    outputs.clear_output(built.gp.output, files, built.tables)
    spec = built.spec
    if not spec.inspected:  # a build that did not read the input has nothing to say of it
        return
    sampled = ("" if spec.footers_checked == len(spec.files)
               else f" (in the {spec.footers_checked} footers checked)")
    _LOG.info("gpfit: %d file(s), %d rows%s, %s layout, t %s -> %s", len(spec.files),
              spec.rows, sampled, spec.layout,
              "in days" if spec.time_units == inputs.DAYS else inputs.AS_GIVEN,
              built.gp.output)


def _wait(result) -> None:
    """Waits for the job to finish. Raises unless it finished successfully."""
    from apache_beam.runners.runner import PipelineState

    state = result.wait_until_finish()
    if state != PipelineState.DONE:
        raise RuntimeError(f"the pipeline ended in state {state}")


def _say_built(options, built: builder.Built, dry_run: bool) -> None:
    """Says what was built, where there is no job to wait for."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    gp = built.gp
    if dry_run:
        streams.write("gpfit: dry run: the Dataflow job was built; nothing was submitted, read "
                      "or written")
        return
    template = options.view_as(GoogleCloudOptions).template_location
    where = f" as a template, {template}" if template else ""
    marker = FileSystems.join(gp.output, outputs.SUCCESS_MARKER)
    streams.write(f"gpfit: the job was built{where}, and is not waited for here; when it "
                  f"finishes, it writes {marker} last ({outputs.FAILED_MARKER} instead if the "
                  f"fraction of series that failed is above {gp.max_failure_fraction:g})")


def _report(name, found, output: str, wall_time_s: float) -> int:
    """Says how the run went, from the manifest the job wrote; -> exit code."""
    if name is None:
        _say(f"gpfit: error: the pipeline finished but wrote neither {outputs.SUCCESS_MARKER} "
             f"nor {outputs.FAILED_MARKER} in {output}")
        return EXIT_PIPELINE_FAILED
    summary = manifest.summary(found)
    for warning in manifest.warnings(found):  # once per run, from the job's counts
        _warn(warning)
    unreadable = found.get("unreadable_files") or {"count": 0}
    if unreadable["count"]:
        named = unreadable["files"]
        _say(f"gpfit: error: {summary}; {unreadable['count']} input file(s) could not be "
             f"read, so the output is incomplete and {outputs.FAILED_MARKER} was written "
             f"instead of {outputs.SUCCESS_MARKER} in {output}; fix or remove them and run "
             f"again:")
        for item in named[:_NAMED_AT_MOST]:
            # The reasons name their file already (pipeline.io.inputs).
            said = (item["error"] if item["error"].startswith(item["path"])
                    else f"{item['path']}: {item['error']}")
            _say(f"gpfit: unreadable: {said}")
        if unreadable["count"] > min(len(named), _NAMED_AT_MOST):
            _say(f"gpfit: ... and {unreadable['count'] - min(len(named), _NAMED_AT_MOST)} "
                 f"more (the first {len(named)} are in {outputs.FAILED_MARKER})")
        return EXIT_PIPELINE_FAILED
    if name == outputs.FAILED_MARKER:
        _say(f"gpfit: error: {summary}: failed fraction {found['failed_fraction']:.3g} is "
             f"above --max_failure_fraction {found['max_failure_fraction']:g}; see the error "
             f"column and {outputs.FAILED_MARKER} in {output}")
        return EXIT_TOO_MANY_FAILED
    streams.write(f"gpfit: {summary} -> {one_line(output)} ({wall_time_s:.1f} s)")
    return EXIT_OK
