"""The `gpfit` command: check everything, run the pipeline, write the manifest.

Exit codes: 0 done; 1 the run finished but more series failed than
--max_failure_fraction allows; 2 bad invocation or unusable input (one line
on stderr, before any output is touched or any fitting starts); 3 the
pipeline itself failed.
"""
from __future__ import annotations

import os

# Before numpy/TensorFlow load (here and in worker processes, which inherit
# the environment): small matrices and oversubscribed BLAS pools are slow,
# and TF's C++ start-up chatter buries gpfit's own lines.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import dataclasses  # noqa: E402  (after the environment above)
import datetime  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from pipeline import inputs, logs, outputs  # noqa: E402
from pipeline.errors import UsageError  # noqa: E402
from pipeline.options import (KERNEL_NAMES, GPFitOptions, help_parser,  # noqa: E402
                              parse_options)

_LOG = logging.getLogger("gpfit")

EXIT_OK, EXIT_TOO_MANY_FAILED, EXIT_USAGE, EXIT_PIPELINE_FAILED = 0, 1, 2, 3


@dataclasses.dataclass
class _Plan:
    """A checked invocation, ready to run."""

    options: object  # PipelineOptions
    gp: GPFitOptions
    spec: inputs.InputSpec
    config: object  # gpcore.FitConfig
    previous_files: list[str]


def run(argv: list[str] | None = None) -> int:
    """Runs gpfit with command-line arguments; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        help_parser().print_help()
        return EXIT_OK
    logs.configure()
    started_at = datetime.datetime.now(datetime.timezone.utc)
    started = time.monotonic()
    try:
        plan = _check(argv)
    except UsageError as err:
        print(f"gpfit: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    try:
        result = _execute(plan)
    except Exception as err:  # pylint: disable=broad-except
        _LOG.exception("gpfit: the pipeline failed")
        print(f"gpfit: error: the pipeline failed: {_first_line(err)}", file=sys.stderr)
        return EXIT_PIPELINE_FAILED
    return _finish(plan, result, started_at, time.monotonic() - started)


def main() -> None:
    sys.exit(run())


def _check(argv: list[str]) -> _Plan:
    """Everything that can be checked before touching the output folder.

    Raises:
      UsageError: with the one-line message for stderr.
    """
    options = parse_options(argv)
    gp = options.view_as(GPFitOptions)
    if not gp.input:
        raise UsageError("--input is required: a Parquet file, folder or glob")
    if not gp.output:
        raise UsageError("--output is required: the folder to write the parameters to")
    if gp.kernel not in KERNEL_NAMES:  # early: before TensorFlow's import chatter
        raise UsageError(f"kernel must be one of {', '.join(KERNEL_NAMES)}; got {gp.kernel!r}; "
                         "see gpfit --help")
    if not 0.0 <= gp.max_failure_fraction <= 1.0:
        raise UsageError(f"--max_failure_fraction must be between 0 and 1; "
                         f"got {gp.max_failure_fraction:g}")
    spec = inputs.inspect(gp.input, inputs.Columns(gp.id_column, gp.time_column,
                                                   gp.value_column))
    previous = outputs.check_output(gp.output, spec.files)
    return _Plan(options, gp, spec, _fit_config(gp), previous)


def _fit_config(gp: GPFitOptions):
    from gpcore import FitConfig  # loads TensorFlow: only once the input is known good

    try:
        return FitConfig(kernel=gp.kernel, restarts=gp.restarts, min_points=gp.min_points,
                         max_points=gp.max_points, batch_size=gp.batch_size)
    except ValueError as err:
        raise UsageError(f"{err}; see gpfit --help") from err


def _execute(plan: _Plan):
    """Clears the output folder, builds and runs the pipeline; returns its
    finished result. Raises whatever the runner raises on failure."""
    import apache_beam as beam
    from apache_beam.runners.runner import PipelineState

    from pipeline import builder, runner, workers

    outputs.clear_output(plan.gp.output, plan.previous_files)
    spec = plan.spec
    _LOG.info("gpfit: %d rows in %d file(s), %s layout, t %s -> %s", spec.rows,
              len(spec.files), spec.layout,
              "in days" if spec.time_units == "days" else "as given", plan.gp.output)
    pipeline = beam.Pipeline(runner=runner.local_runner(plan.options), options=plan.options)
    builder.build(pipeline, spec, plan.config, plan.gp.output,
                  workers.processes_per_machine(plan.options))
    result = pipeline.run()
    state = result.wait_until_finish()
    if state != PipelineState.DONE:
        raise RuntimeError(f"the pipeline ended in state {state}")
    return result


def _finish(plan: _Plan, result, started_at: datetime.datetime, wall_time_s: float) -> int:
    """Reads the counts, writes the manifest, says how it went; -> exit code."""
    from pipeline import metrics

    gp = plan.gp
    counters, distributions = metrics.counters(result), metrics.distributions(result)
    counts = {name: counters[name] for name in metrics.COUNT_NAMES}
    rows = counts[metrics.OK] + counts[metrics.SKIPPED] + counts[metrics.FAILED]
    if rows != counts[metrics.SERIES_READ]:
        _LOG.warning("gpfit: %d series read but %d rows counted; metrics may be "
                     "incomplete on this runner", counts[metrics.SERIES_READ], rows)
    failed_fraction = counts[metrics.FAILED] / max(counts[metrics.SERIES_READ], 1)
    too_many_failed = failed_fraction > gp.max_failure_fraction
    manifest = {
        "status": "failed" if too_many_failed else "succeeded",
        "counts": counts,
        "failed_fraction": failed_fraction,
        "max_failure_fraction": gp.max_failure_fraction,
        "kernel": plan.config.kernel,
        "time_units": plan.spec.time_units,
        "input": {"pattern": plan.spec.pattern, "files": len(plan.spec.files),
                  "layout": plan.spec.layout, "rows": plan.spec.rows},
        "output_files": outputs.params_files(gp.output),
        "options": _recorded_options(plan.options, gp),
        "fitters_built": counters[metrics.FITTERS_BUILT],
        "fit_ms_per_series": distributions.get(metrics.FIT_MS),
        "tracing_count_max": (distributions.get(metrics.TRACING_COUNT) or {}).get("max"),
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "wall_time_s": round(wall_time_s, 3),
    }
    summary = (f"{counts[metrics.SERIES_READ]} series: {counts[metrics.OK]} ok, "
               f"{counts[metrics.SKIPPED]} skipped, {counts[metrics.FAILED]} failed; "
               f"{counts[metrics.NULL_IDS]} rows with a null id")
    if too_many_failed:
        outputs.write_manifest(gp.output, outputs.FAILED, manifest)
        print(f"gpfit: error: {summary}: failed fraction {failed_fraction:.3g} is above "
              f"--max_failure_fraction {gp.max_failure_fraction:g}; see the error column "
              f"and {outputs.FAILED} in {gp.output}", file=sys.stderr)
        return EXIT_TOO_MANY_FAILED
    # Last: its presence tells readers that the parameters are complete.
    outputs.write_manifest(gp.output, outputs.SUCCESS, manifest)
    print(f"gpfit: {summary} -> {gp.output} ({wall_time_s:.1f} s)")
    return EXIT_OK


def _recorded_options(options, gp: GPFitOptions) -> dict:
    """gpfit's options (all) and the Beam options given (non-default)."""
    ours = {name: getattr(gp, name) for name in (
        "input", "output", "kernel", "id_column", "time_column", "value_column", "restarts",
        "min_points", "max_points", "batch_size", "max_failure_fraction")}
    given = options.get_all_options(drop_default=True)
    beam_options = {k: v for k, v in given.items() if k not in ours}
    return {**ours, "beam": {k: v if isinstance(v, (bool, int, float, str, type(None)))
                             else str(v) for k, v in beam_options.items()}}


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
