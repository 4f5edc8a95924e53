"""The `gpfit` command: check everything, build and run the job, report.

The job writes its own manifest, last (pipeline/manifest_step.py): _SUCCESS.json,
or _FAILED.json when more series failed than --max_failure_fraction allows.
Where the runner hands back a job to wait for, gpfit waits, reads the
manifest and reports it. Where it does not (a template, as a Flex Template
launch builds; a Dataflow --dry_run), gpfit's work ends once the job is
built, and the job writes the manifest when it runs.

While it runs, gpfit holds the output folder's lock (pipeline/io/lock.py):
a second run into the same folder exits 2 naming the first.

Exit codes: 0 done (or, without a job to wait for, built); 1 the run
finished but more series failed than --max_failure_fraction allows; 2 bad
invocation or unusable input (one line on stderr, before any output is
touched or any fitting starts), or the output folder is locked by another
run; 3 the pipeline itself failed, or an input file could not be read
(named in the last lines).
"""
from __future__ import annotations

import os

# Before numpy/TensorFlow load (here and in worker processes, which inherit
# the environment): small matrices and oversubscribed BLAS pools are slow,
# and TF's C++ start-up chatter buries gpfit's own lines. gpfit uses no
# Keras, but importing TensorFlow eagerly imports Keras 3 (1.4 s of every
# start) unless told to use tf-keras, which TFP imports anyway
# (docs/design.md, "Start-up").
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import logging  # noqa: E402  (after the environment above)
import sys  # noqa: E402
import time  # noqa: E402

from pipeline import builder, runtime  # noqa: E402
from pipeline.io import inputs, lock, manifest, outputs  # noqa: E402
from pipeline.io.errors import UsageError, first_line  # noqa: E402
from pipeline.options import help_parser, parse_options  # noqa: E402

_LOG = logging.getLogger("gpfit")

EXIT_OK, EXIT_TOO_MANY_FAILED, EXIT_USAGE, EXIT_PIPELINE_FAILED = 0, 1, 2, 3
_NAMED_AT_MOST = 10  # unreadable files named in gpfit's last lines


def run(argv: list[str] | None = None) -> int:
    """Runs gpfit with command-line arguments; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        help_parser().print_help()
        return EXIT_OK
    runtime.configure_logs()
    started_at, started = time.time(), time.monotonic()
    try:
        options = parse_options(argv)
        dry_run = _is_dry_run(options)
        built = builder.build_from_options(options, check_paths=not dry_run,
                                           started_at=started_at)
    except UsageError as err:
        print(f"gpfit: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    output = built.gp.output
    if dry_run:
        return _launch(options, built, dry_run, output, started)
    try:
        lock.acquire(output, built.run_id, built.gp.break_lock, runtime.is_local(options))
    except UsageError as err:
        print(f"gpfit: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with lock.Heartbeat(output, built.run_id):
            return _launch(options, built, dry_run, output, started)
    finally:
        # Also after a launch that does not wait (a template): nothing would
        # refresh the lock, and a template may run later or never. The job
        # removes it too, after its manifest, should this process be gone.
        lock.release(output, built.run_id)


def _launch(options, built: builder.Built, dry_run: bool, output: str, started: float) -> int:
    """Clears the output, runs the job and waits for it; -> exit code."""
    try:
        if not dry_run:
            _prepare_output(built)
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
        _LOG.exception("gpfit: the pipeline failed")
        print(f"gpfit: error: the pipeline failed: {first_line(err)}", file=sys.stderr)
        return EXIT_PIPELINE_FAILED
    return _report(name, found, output, time.monotonic() - started)


def main() -> None:
    """The console script: run, then leave at once. The work is done and
    every file closed by then; Python's own finalisation of TensorFlow's and
    Beam's modules would add 1.6 s to every command and do nothing gpfit
    needs (docs/design.md, "Start-up")."""
    code = run()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _is_dry_run(options) -> bool:
    """--dry_run: build the Dataflow job, submit nothing, read nothing.

    Raises:
      UsageError: --dry_run with another runner, which would ignore it and
        run the job for real.
    """
    from apache_beam.options.pipeline_options import StandardOptions, TestOptions

    if not options.view_as(TestOptions).dry_run:
        return False
    runner_name = (options.view_as(StandardOptions).runner or "").rsplit(".", 1)[-1]
    if runner_name.lower() not in ("dataflowrunner", "dataflow"):
        raise UsageError(f"--dry_run builds a Dataflow job without submitting it; it needs "
                         f"--runner DataflowRunner, got {runner_name or 'the local runner'}")
    return True


def _prepare_output(built: builder.Built) -> None:
    """Clears the previous run's files (no stale shard or manifest survives)."""
    outputs.clear_output(built.gp.output, list(built.previous_files))
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
        print("gpfit: dry run: the Dataflow job was built; nothing was submitted, read or "
              "written")
        return
    template = options.view_as(GoogleCloudOptions).template_location
    where = f" as a template, {template}" if template else ""
    marker = FileSystems.join(gp.output, outputs.SUCCESS_MARKER)
    print(f"gpfit: the job was built{where}, and is not waited for here; when it finishes, "
          f"it writes {marker} last ({outputs.FAILED_MARKER} instead if the fraction of series "
          f"that failed is above {gp.max_failure_fraction:g})")


def _report(name, found, output: str, wall_time_s: float) -> int:
    """Says how the run went, from the manifest the job wrote; -> exit code."""
    if name is None:
        print(f"gpfit: error: the pipeline finished but wrote neither {outputs.SUCCESS_MARKER} "
              f"nor {outputs.FAILED_MARKER} in {output}", file=sys.stderr)
        return EXIT_PIPELINE_FAILED
    summary = manifest.summary(found)
    unreadable = found.get("unreadable_files") or {"count": 0}
    if unreadable["count"]:
        named = unreadable["files"]
        print(f"gpfit: error: {summary}; {unreadable['count']} input file(s) could not be "
              f"read, so the output is incomplete and {outputs.FAILED_MARKER} was written "
              f"instead of {outputs.SUCCESS_MARKER} in {output}; fix or remove them and run "
              f"again:", file=sys.stderr)
        for item in named[:_NAMED_AT_MOST]:
            # The reasons name their file already (pipeline.io.inputs).
            said = (item["error"] if item["error"].startswith(item["path"])
                    else f"{item['path']}: {item['error']}")
            print(f"gpfit: unreadable: {said}", file=sys.stderr)
        if unreadable["count"] > min(len(named), _NAMED_AT_MOST):
            print(f"gpfit: ... and {unreadable['count'] - min(len(named), _NAMED_AT_MOST)} "
                  f"more (the first {len(named)} are in {outputs.FAILED_MARKER})",
                  file=sys.stderr)
        return EXIT_PIPELINE_FAILED
    if name == outputs.FAILED_MARKER:
        print(f"gpfit: error: {summary}: failed fraction {found['failed_fraction']:.3g} is "
              f"above --max_failure_fraction {found['max_failure_fraction']:g}; see the error "
              f"column and {outputs.FAILED_MARKER} in {output}", file=sys.stderr)
        return EXIT_TOO_MANY_FAILED
    print(f"gpfit: {summary} -> {output} ({wall_time_s:.1f} s)")
    return EXIT_OK
