"""The run's manifest, _SUCCESS.json or _FAILED.json: what it holds, and
reading and writing it.

The job writes it last (pipeline/manifest_step.py), so its presence says the
shards beside it are complete. It holds: status ("succeeded" | "failed"),
counts (series_read, ok, skipped, failed, null_ids), failed_fraction,
max_failure_fraction, gpfit_version (the release that wrote it), kernel,
time_units, input (pattern, a local one made
absolute; files, layout, rows: counted by the job over the files it read),
unreadable_files (count, and the first files by path with their error),
output_files, options
(gpfit's, and the Beam options given in "beam"; secrets redacted here and
in the input pattern and previous_output: redaction.py),
fitters_built, fit_ms_per_series (count, sum, min, max, mean; each series
counts its call's wall ms / the call's series),
fit_call_seconds (count, median, max of the fit calls' wall seconds, and
max_over_estimate: the largest ratio of a call's wall seconds to
gpcore.batching's estimate, over calls that compiled nothing; null if
none), tracing_count_max, work_per_kernel ({kernel:
series fitted, newton_evaluations, grid_evaluations,
newton_evaluations_per_series}: each candidate's under "auto", a periodic
one's series those its screen passed), started_at, finished_at (ISO 8601, UTC) and wall_time_s.
Nightly runs add previous_output (the folder compared against, absolute
when local, or null), previous_note (why none was used, or null), reuse (reused,
warm_starts_offered, warm_started, fitted: rows fitted, skipped or failed
anew; previous_unreadable_shards), and predictions (horizon, points,
observed, series predicted, not_predicted; null without --predict_*) with
prediction_files, the predictions' shard names. predictions also hold
steps, levels, transform and holdout as asked, no_step ({reason: series}
without a forecast step) and coarse_grid (series whose forecast spacing is
coarser than a quarter of a fitted period); holdout (with --holdout; else
null) holds series, points, mase_mean, mase_median, coverage_95.

A run with unreadable input files is "failed" (_FAILED.json) whatever its
counts: its output lacks what those files held.
"""
from __future__ import annotations

import dataclasses
import functools
import datetime
import json
import os
from typing import Optional

from apache_beam.io.filesystems import FileSystems

from gpcore.result import FAILED, OK, SKIPPED
from pipeline.io.errors import with_value
from pipeline.io.files import open_file, write_whole
from pipeline.io.fingerprint import VERSION
from pipeline.io.inputs import InputSpec
from pipeline.io.outputs import FAILED_MARKER, SUCCESS_MARKER, TEMPORARY_SUFFIX, is_local
from pipeline.io.redaction import redacted

# Counts beside the statuses: distinct series ids read, and input rows whose
# id is null (dropped, not fitted). The job's Beam metrics share these names.
SERIES_READ = "series_read"
NULL_IDS = "null_ids"

# The run's status (not a series'): FAILED_RUN when more series failed than
# max_failure_fraction allows.
SUCCEEDED, FAILED_RUN = "succeeded", "failed"
# time_units and input layout of a run whose launcher did not read the input
# (an offline build): the job learns them only on its workers.
NOT_INSPECTED = "not inspected"


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What the manifest says that is known when the pipeline is built.

    Small and picklable: it travels to the worker that writes the manifest.

    Attributes:
      output: the output folder.
      kernel: the kernel fitted.
      max_failure_fraction: above this failed fraction the run writes
        _FAILED.json instead of _SUCCESS.json.
      time_units: inputs.DAYS, inputs.AS_GIVEN, or NOT_INSPECTED.
      input: {"pattern", "files", "layout", "rows"}: input_record(spec).
      options: the options recorded (pipeline.options.recorded).
      started_at: when the run was started, seconds since the epoch (UTC).
      run_id: the run's id in the output folder's lock (pipeline.io.lock).
      previous_output: the previous output compared against, or None.
      previous_note: why no previous output is used, or None.
      predict: {"horizon", "points", "steps", "observed", "levels", "transform",
        "holdout"}, or None without predictions.
    """

    output: str
    kernel: str
    max_failure_fraction: float
    time_units: str
    input: dict
    options: dict
    started_at: float
    run_id: str = ""
    previous_output: Optional[str] = None
    previous_note: Optional[str] = None
    predict: Optional[dict] = None


def run_record(spec: InputSpec, output: str, kernel: str, max_failure_fraction: float,
               options: dict, started_at: float, run_id: str = "", **nightly) -> RunRecord:
    """The RunRecord of a run on this input (inspected or not); `nightly`:
    previous_output, previous_note, predict (see RunRecord)."""
    if nightly.get("previous_output"):
        nightly["previous_output"] = located(nightly["previous_output"])
    return RunRecord(output=output, kernel=kernel, max_failure_fraction=max_failure_fraction,
                     time_units=spec.time_units if spec.inspected else NOT_INSPECTED,
                     input=input_record(spec), options=options, started_at=started_at,
                     run_id=run_id, **nightly)


def input_record(spec: InputSpec) -> dict:
    """The manifest's "input": pattern, files, layout (NOT_INSPECTED), rows
    (None when not inspected)."""
    if not spec.inspected:
        return {"pattern": located(spec.pattern), "files": None, "layout": NOT_INSPECTED,
                "rows": None}
    return {"pattern": located(spec.pattern), "files": len(spec.files), "layout": spec.layout,
            "rows": spec.rows}


def located(path: str) -> str:
    """A local path (or glob) made absolute, symbolic links kept; others as
    given. The report reads the input and the previous run from the
    manifest, and may be launched from another folder than the run was."""
    return os.path.abspath(path) if path and is_local(path) else path


def compose(record: RunRecord, status_counts: dict, null_ids: int, fits: dict,
            output_files: list[str], finished_at: float, read: Optional[dict] = None,
            nightly: Optional[dict] = None) -> dict:
    """The manifest (a JSON-ready dict) of a finished run.

    Args:
      status_counts: {status: output rows}.
      null_ids: input rows with a null id.
      fits: fitters_built, fit_ms_per_series, fit_call_seconds (optional),
        tracing_count_max and work_per_kernel (optional).
      output_files: names of the parameter shards.
      finished_at: seconds since the epoch.
      read: what the job read: {"files", "rows", "unreadable": {"count",
        "files"}}; None: the launcher's input record stands, nothing unread.
      nightly: {"reuse": {...}, "predicted": n, "not_predicted": n,
        "prediction_files": [names]}; None: nothing reused or predicted.
    """
    series = sum(status_counts.values())  # every series is exactly one row
    counts = {SERIES_READ: series, OK: status_counts.get(OK, 0),
              SKIPPED: status_counts.get(SKIPPED, 0), FAILED: status_counts.get(FAILED, 0),
              NULL_IDS: int(null_ids)}
    failed_fraction = counts[FAILED] / max(series, 1)
    too_many_failed = failed_fraction > record.max_failure_fraction
    unreadable = (read or {}).get("unreadable") or {"count": 0, "files": []}
    input_ = dict(record.input)
    input_["pattern"] = redacted("input", input_.get("pattern"))
    if read is not None:
        input_.update(files=read["files"], rows=read["rows"])
    return {
        "status": FAILED_RUN if too_many_failed or unreadable["count"] else SUCCEEDED,
        "counts": counts,
        "failed_fraction": failed_fraction,
        "max_failure_fraction": record.max_failure_fraction,
        "gpfit_version": VERSION,
        "kernel": record.kernel,
        "time_units": record.time_units,
        "input": input_,
        "unreadable_files": unreadable,
        "output_files": output_files,
        "options": record.options,
        "fitters_built": fits["fitters_built"],
        "fit_ms_per_series": fits["fit_ms_per_series"],
        "fit_call_seconds": fits.get("fit_call_seconds"),
        "tracing_count_max": fits["tracing_count_max"],
        "work_per_kernel": fits.get("work_per_kernel", {}),
        "started_at": _iso(record.started_at),
        "finished_at": _iso(finished_at),
        "wall_time_s": round(finished_at - record.started_at, 3),
        **_nightly(record, nightly or {}),
    }


def _nightly(record: RunRecord, nightly: dict) -> dict:
    """The manifest's previous_output, previous_note, reuse, predictions and
    prediction_files."""
    predictions = None
    if record.predict is not None:
        predictions = {**record.predict, "series": nightly.get("predicted", 0),
                       "not_predicted": nightly.get("not_predicted", 0),
                       "no_step": nightly.get("no_step", {}),
                       "coarse_grid": nightly.get("coarse_grid", 0)}
    return {"previous_output": redacted("previous_output", record.previous_output),
            "previous_note": record.previous_note,
            "reuse": nightly.get("reuse"), "predictions": predictions,
            "prediction_files": nightly.get("prediction_files", []),
            "holdout": nightly.get("holdout")}


def file_name(manifest: dict) -> str:
    """Where a composed manifest goes: SUCCESS_MARKER or FAILED_MARKER."""
    return SUCCESS_MARKER if manifest["status"] == SUCCEEDED else FAILED_MARKER


def write(output: str, manifest: dict) -> str:
    """Writes the manifest into the output folder; returns its path.

    Written under a temporary name and renamed, so that a reader never sees
    a half-written manifest.
    """
    path = FileSystems.join(output, file_name(manifest))
    write_whole(path, path + TEMPORARY_SUFFIX, json.dumps(
        manifest, indent=2, sort_keys=False).encode("utf-8") + b"\n", "application/json")
    return path


def find(output: str) -> Optional[str]:
    """The name of the manifest in the output folder: SUCCESS_MARKER if
    present, else FAILED_MARKER; None if neither is there."""
    for name in (SUCCESS_MARKER, FAILED_MARKER):
        if FileSystems.exists(FileSystems.join(output.rstrip("/"), name)):
            return name
    return None


def load(output: str, name: str) -> dict:
    """The content of the manifest `name` in the output folder.

    Raises:
      OSError: it cannot be read.
      ValueError: it is not a JSON object.
    """
    path = FileSystems.join(output.rstrip("/"), name)
    with open_file(path) as f:
        content = json.loads(f.read().decode("utf-8"))
    if not isinstance(content, dict):
        raise ValueError(f"{path} holds no JSON object")
    return content


def read(output: str) -> tuple[Optional[str], Optional[dict]]:
    """(name, content) of the manifest in the output folder (see find);
    (None, None) if there is none.

    Raises:
      OSError, ValueError: it is there but cannot be read (see load).
    """
    name = find(output)
    return (name, load(output, name)) if name else (None, None)


def summary(manifest: dict) -> str:
    """'23 series: 22 ok, 1 skipped, 0 failed; 3 rows with a null id', and
    on a run with --previous_output '; 20 reused, 3 warm-started, 3 fitted',
    and with --holdout '; holdout of 22 series: MASE mean 0.91, median 0.8,
    95 % coverage 0.94'."""
    counts = manifest["counts"]
    line = (f"{counts[SERIES_READ]} series: {counts[OK]} ok, {counts[SKIPPED]} skipped, "
            f"{counts[FAILED]} failed; {counts[NULL_IDS]} rows with a null id")
    reuse = manifest.get("reuse")
    if manifest.get("previous_output") and reuse:  # a nightly run: what it saved
        line += (f"; {reuse['reused']} reused, {reuse['warm_started']} warm-started, "
                 f"{reuse['fitted']} fitted")
    holdout = manifest.get("holdout")
    if holdout:
        said = lambda v: "n/a" if v is None else f"{v:.3g}"  # noqa: E731
        line += (f"; holdout of {holdout['series']} series: MASE mean "
                 f"{said(holdout['mase_mean'])}, median {said(holdout['mase_median'])}, "
                 f"95 % coverage {said(holdout['coverage_95'])}")
    return line


def warnings(manifest: dict) -> list[str]:
    """What the run's counts warn of, one line each: ok series that got no
    predictions or no forecast rows, and forecast grids too coarse to show
    a fitted period. Said after the job, from its counts: the job's own
    log lines are not shown by every launcher (docs/design.md, "Contracts")."""
    predictions = manifest.get("predictions") or {}
    return prediction_warnings(predictions.get("no_step") or {},
                               predictions.get("not_predicted") or 0,
                               predictions.get("coarse_grid") or 0)


def prediction_warnings(no_step: dict, not_predicted: int, coarse: int,
                        option: str = "--{}", counted: bool = True) -> list[str]:
    """warnings' lines from the counts: no_step {reason: series},
    not_predicted and coarse series; `option` spells the options ("{}="
    for fit_frame's keywords); `counted`: the manifest counts them (there
    is none of fit_frame's)."""
    name = option.format
    given = functools.partial(with_value, option)
    where = (lambda count: f" (predictions.{count} in the manifest)") if counted \
        else (lambda count: "")
    found = []
    if no_step:
        why = "; ".join(f"{count} {reason}" for reason, count in sorted(no_step.items()))
        manifest = "; predictions.no_step in the manifest" if counted else ""
        found.append(f"{sum(no_step.values())} ok series got no forecast rows ({why}{manifest}); "
                     f"see README.md, \"Where the forecast goes\": under {name('predict_steps')} "
                     f"a series needs a regular spacing, {given('predict_horizon', 'H')} "
                     f"{given('predict_points', 'K')} gives every series one grid")
    if not_predicted:
        log = "the job's log" if counted else "the log"
        found.append(f"{not_predicted} ok series got no predictions: their posterior could not "
                     f"be computed from their parameters, or under {name('transform')} passed "
                     f"float64's largest on y's scale{where('not_predicted')}; {log} names each "
                     "series and why")
    if coarse:
        found.append(f"{coarse} series have a forecast spacing coarser than a quarter of a "
                     f"fitted period, so their forecasts cannot show that cycle"
                     f"{where('coarse_grid')}; use a finer grid: {name('predict_steps')}, or "
                     f"more {name('predict_points')}")
    return found


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(
        timespec="seconds")
