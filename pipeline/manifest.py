"""The run's manifest, _SUCCESS.json or _FAILED.json: written by the job, last.

The job writes it itself, so that it appears however the job was launched:
by `gpfit`, which waits for the job, or by a launcher that returns once the
job is submitted (a Flex Template, --template_location). Its counts are
combined in the pipeline from the rows the job writes, the null ids its read
step drops and the fitter's FitStats; they are not read back from Beam
metrics, which only a launcher that waits could do. The writing step takes
WriteParams' finalised file names as a side input, so it runs only once
every shard is in place.

A manifest holds: status ("succeeded" | "failed"), counts (series_read, ok,
skipped, failed, null_ids), failed_fraction, max_failure_fraction, kernel,
time_units, input (pattern, files, layout, rows), output_files, options
(gpfit's, and the Beam options given in "beam"), fitters_built,
fit_ms_per_series (count, sum, min, max, mean), tracing_count_max,
started_at, finished_at (ISO 8601, UTC) and wall_time_s.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import time
from typing import Iterable, Optional

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import AsList, AsSingleton

from pipeline import metrics, outputs
from pipeline.metrics import FAILED, NULL_IDS, OK, SERIES_READ, SKIPPED
from pipeline.options import GPFitOptions

_LOG = logging.getLogger(__name__)

# The options a manifest records in full (all of GPFitOptions).
GPFIT_OPTION_NAMES = ("input", "output", "kernel", "id_column", "time_column", "value_column",
                      "restarts", "min_points", "max_points", "batch_size",
                      "max_failure_fraction")


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What the manifest says that is known when the pipeline is built.

    Small and picklable: it travels to the worker that writes the manifest.

    Attributes:
      output: the output folder.
      kernel: the kernel fitted.
      max_failure_fraction: above this failed fraction the run writes
        _FAILED.json instead of _SUCCESS.json.
      time_units: "days", "as given", or "not inspected".
      input: {"pattern", "files", "layout", "rows"} of the checked input.
      options: as recorded_options() returns them.
      started_at: when the run was started, seconds since the epoch (UTC).
    """

    output: str
    kernel: str
    max_failure_fraction: float
    time_units: str
    input: dict
    options: dict
    started_at: float


def recorded_options(options) -> dict:
    """gpfit's options (all) and, under "beam", the Beam options given
    (non-default, as JSON values)."""
    gp = options.view_as(GPFitOptions)
    ours = {name: getattr(gp, name) for name in GPFIT_OPTION_NAMES}
    given = options.get_all_options(drop_default=True)
    beam_options = {k: v for k, v in given.items() if k not in ours}
    return {**ours, "beam": {k: v if isinstance(v, (bool, int, float, str, type(None)))
                             else str(v) for k, v in beam_options.items()}}


class CountStatuses(beam.CombineFn):
    """Output rows -> {status: rows}, with ok, skipped and failed always present."""

    def create_accumulator(self) -> dict:
        return {OK: 0, SKIPPED: 0, FAILED: 0}

    def add_input(self, counts: dict, row: dict) -> dict:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
        return counts

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        merged = self.create_accumulator()
        for counts in accumulators:
            for status, n in counts.items():
                merged[status] = merged.get(status, 0) + n
        return merged

    def extract_output(self, counts: dict) -> dict:
        return counts


class SummariseFits(beam.CombineFn):
    """metrics.FitStats -> the manifest's fitters_built, fit_ms_per_series
    (a distribution over series: count, sum, min, max, mean; None if nothing
    was fitted) and tracing_count_max."""

    def create_accumulator(self) -> dict:
        return {"fitters_built": 0, "count": 0, "sum": 0, "min": None, "max": None,
                "tracing_count_max": None}

    def add_input(self, acc: dict, stats: metrics.FitStats) -> dict:
        return self.merge_accumulators([acc, {
            "fitters_built": stats.fitters_built, "count": stats.series,
            "sum": stats.series * stats.ms_per_series, "min": stats.ms_per_series,
            "max": stats.ms_per_series, "tracing_count_max": stats.tracing_count}])

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        merged = self.create_accumulator()
        for acc in accumulators:
            merged["fitters_built"] += acc["fitters_built"]
            merged["count"] += acc["count"]
            merged["sum"] += acc["sum"]
            for key, pick in (("min", min), ("max", max), ("tracing_count_max", max)):
                if acc[key] is not None:
                    merged[key] = acc[key] if merged[key] is None else pick(merged[key], acc[key])
        return merged

    def extract_output(self, acc: dict) -> dict:
        fit_ms = None
        if acc["count"]:
            fit_ms = {"count": acc["count"], "sum": acc["sum"], "min": acc["min"],
                      "max": acc["max"], "mean": acc["sum"] / acc["count"]}
        return {"fitters_built": acc["fitters_built"], "fit_ms_per_series": fit_ms,
                "tracing_count_max": acc["tracing_count_max"]}


class WriteManifest(beam.PTransform):
    """{"rows", "null_ids", "fits", "written"} -> the manifest, written last.

    Inputs: rows, the output rows; null_ids, ints to add up; fits,
    metrics.FitStats; written, WriteParams' result (the finalised shard
    names): a side input, so the manifest waits for every shard. Returns the
    manifest's path (one element).
    """

    def __init__(self, record: RunRecord):
        super().__init__()
        self._record = record

    def expand(self, inputs: dict):
        counts = inputs["rows"] | "CountStatuses" >> beam.CombineGlobally(CountStatuses())
        null_ids = inputs["null_ids"] | "SumNullIds" >> beam.CombineGlobally(sum)
        fits = inputs["fits"] | "SummariseFits" >> beam.CombineGlobally(SummariseFits())
        return counts | "Write" >> beam.ParDo(
            _WriteManifestFn(self._record), null_ids=AsSingleton(null_ids),
            fits=AsSingleton(fits), written=AsList(inputs["written"]))


class _WriteManifestFn(beam.DoFn):
    """Writes _SUCCESS.json or _FAILED.json from the combined counts."""

    def __init__(self, record: RunRecord, clock=time.time):
        self._record = record
        self._clock = clock

    def process(self, status_counts: dict, null_ids: int, fits: dict, written: list):
        manifest = compose(self._record, status_counts, null_ids, fits,
                           output_files=outputs.params_files(self._record.output),
                           finished_at=self._clock())
        name = outputs.SUCCESS if manifest["status"] == "succeeded" else outputs.FAILED
        # Under a temporary name, then renamed: a reader never sees half a manifest.
        path = outputs.write_manifest(self._record.output, name, manifest)
        _LOG.info("gpfit: wrote %s (%d shard(s) finalised)", path, len(written))
        yield path


def compose(record: RunRecord, status_counts: dict, null_ids: int, fits: dict,
            output_files: list[str], finished_at: float) -> dict:
    """The manifest (a JSON-ready dict) of a finished run."""
    series = sum(status_counts.values())  # every series is exactly one row
    counts = {SERIES_READ: series, OK: status_counts.get(OK, 0),
              SKIPPED: status_counts.get(SKIPPED, 0), FAILED: status_counts.get(FAILED, 0),
              NULL_IDS: int(null_ids)}
    failed_fraction = counts[FAILED] / max(series, 1)
    too_many_failed = failed_fraction > record.max_failure_fraction
    return {
        "status": "failed" if too_many_failed else "succeeded",
        "counts": counts,
        "failed_fraction": failed_fraction,
        "max_failure_fraction": record.max_failure_fraction,
        "kernel": record.kernel,
        "time_units": record.time_units,
        "input": record.input,
        "output_files": output_files,
        "options": record.options,
        "fitters_built": fits["fitters_built"],
        "fit_ms_per_series": fits["fit_ms_per_series"],
        "tracing_count_max": fits["tracing_count_max"],
        "started_at": _iso(record.started_at),
        "finished_at": _iso(finished_at),
        "wall_time_s": round(finished_at - record.started_at, 3),
    }


def read(output: str) -> tuple[Optional[str], Optional[dict]]:
    """(name, content) of the manifest in the output folder: _SUCCESS.json
    if present, else _FAILED.json; (None, None) if neither is there.

    Raises:
      ValueError: the file is there but is not a JSON object.
    """
    for name in (outputs.SUCCESS, outputs.FAILED):
        path = FileSystems.join(output, name)
        if not FileSystems.exists(path):
            continue
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            content = json.loads(f.read().decode("utf-8"))
        if not isinstance(content, dict):
            raise ValueError(f"{path} holds no JSON object")
        return name, content
    return None, None


def summary(manifest: dict) -> str:
    """'23 series: 22 ok, 1 skipped, 0 failed; 3 rows with a null id'."""
    counts = manifest["counts"]
    return (f"{counts[SERIES_READ]} series: {counts[OK]} ok, {counts[SKIPPED]} skipped, "
            f"{counts[FAILED]} failed; {counts[NULL_IDS]} rows with a null id")


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(
        timespec="seconds")
