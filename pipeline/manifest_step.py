"""WriteManifest: the job combines its counts and writes its manifest, last.

The job writes the manifest (pipeline/io/manifest.py) itself, so that it
appears however the job was launched: by `gpfit`, which waits for the job,
or by a launcher that returns once the job is submitted (a Flex Template,
--template_location). Its counts are combined in the pipeline from the rows
the job writes, the null ids its read step drops and the fitter's FitStats;
they are not read back from Beam metrics, which only a launcher that waits
could do. The writing step takes WriteParams' finalised file names as a side
input, so it runs only once every shard is in place.
"""
from __future__ import annotations

import logging
import time
from typing import Iterable

import apache_beam as beam
from apache_beam.pvalue import AsList, AsSingleton

from gpcore.result import FAILED, OK, SKIPPED
from pipeline import metrics
from pipeline.io import manifest, outputs

_LOG = logging.getLogger(__name__)


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

    def __init__(self, record: manifest.RunRecord):
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

    def __init__(self, record: manifest.RunRecord, clock=time.time):
        self._record = record
        self._clock = clock

    def process(self, status_counts: dict, null_ids: int, fits: dict, written: list):
        composed = manifest.compose(self._record, status_counts, null_ids, fits,
                                    output_files=outputs.params_files(self._record.output),
                                    finished_at=self._clock())
        path = manifest.write(self._record.output, composed)
        _LOG.info("gpfit: wrote %s (%d shard(s) finalised)", path, len(written))
        yield path
