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
from typing import Iterable, Optional

import apache_beam as beam
from apache_beam.pvalue import AsList

from gpcore.result import FAILED, OK, SKIPPED
from pipeline import metrics
from pipeline.io import holdout_totals, lock, manifest, outputs
from pipeline.io.log_bins import log_bin, median_of_bins

_LOG = logging.getLogger(__name__)


class CountEach(beam.CombineFn):
    """Values -> {key(value): how many times it came}."""

    def key(self, value):
        return value

    def create_accumulator(self) -> dict:
        return {}

    def add_input(self, counts: dict, value) -> dict:
        key = self.key(value)
        counts[key] = counts.get(key, 0) + 1
        return counts

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        merged = self.create_accumulator()
        for counts in accumulators:
            for key, n in counts.items():
                merged[key] = merged.get(key, 0) + n
        return merged

    def extract_output(self, counts: dict) -> dict:
        return counts


class CountStatuses(CountEach):
    """Output rows -> {status: rows}, with ok, skipped and failed always present."""

    def key(self, row: dict):
        return row["status"]

    def create_accumulator(self) -> dict:
        return {OK: 0, SKIPPED: 0, FAILED: 0}


# Fit-call seconds below this share its bin of the median's histogram.
SHORTEST_CALL_S = 1e-3


class SummariseFits(beam.CombineFn):
    """metrics.FitStats -> the manifest's fitters_built (the distinct fitters
    that made the calls: a retried bundle's calls name the fitter its failed
    attempt used), fit_ms_per_series
    (a distribution over series: count, sum, min, max, mean; None if nothing
    was fitted), fit_call_seconds (count, median, max of the fit calls' wall
    seconds, and the largest ratio of a call's seconds to its estimate;
    None if none), tracing_count_max and work_per_kernel ({kernel: series,
    newton_evaluations, grid_evaluations, newton_evaluations_per_series})."""

    def create_accumulator(self) -> dict:
        return {"fitters": set(), "count": 0, "sum": 0, "min": None, "max": None,
                "tracing_count_max": None, "calls": 0, "call_bins": {}, "call_min": None,
                "call_max": None,
                "over_estimate_max": None, "kernels": {}}

    def add_input(self, acc: dict, stats: metrics.FitStats) -> dict:
        # A call that compiled ran seconds of one-off work beside its
        # estimate's: the ratio would say nothing of the estimate.
        over = (stats.call_seconds / stats.estimated_seconds
                if stats.estimated_seconds > 0 and not stats.compiled else None)
        return self.merge_accumulators([acc, {
            "fitters": {stats.fitter}, "count": stats.series,
            "sum": stats.series * stats.ms_per_series, "min": stats.ms_per_series,
            "max": stats.ms_per_series, "tracing_count_max": stats.tracing_count,
            "calls": 1, "call_bins": {log_bin(stats.call_seconds, SHORTEST_CALL_S): 1},
            "call_min": stats.call_seconds, "call_max": stats.call_seconds,
            "over_estimate_max": over,
            "kernels": {kernel: [series, newton, grid]
                        for kernel, series, newton, grid in stats.work}}])

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        merged = self.create_accumulator()
        for acc in accumulators:
            merged["fitters"] |= acc["fitters"]
            for key in ("count", "sum", "calls"):
                merged[key] += acc[key]
            for key, n in acc["call_bins"].items():
                merged["call_bins"][key] = merged["call_bins"].get(key, 0) + n
            for key, pick in (("min", min), ("max", max), ("tracing_count_max", max),
                              ("call_min", min), ("call_max", max), ("over_estimate_max", max)):
                if acc[key] is not None:
                    merged[key] = acc[key] if merged[key] is None else pick(merged[key], acc[key])
            for kernel, figures in acc["kernels"].items():
                into = merged["kernels"].setdefault(kernel, [0, 0, 0])
                for i, n in enumerate(figures):
                    into[i] += n
        return merged

    def extract_output(self, acc: dict) -> dict:
        fit_ms = calls = None
        if acc["count"]:
            fit_ms = {"count": acc["count"], "sum": acc["sum"], "min": acc["min"],
                      "max": acc["max"], "mean": acc["sum"] / acc["count"]}
        if acc["calls"]:
            # A bin's centre may lie outside the calls' range (one call of
            # 17.914 s had a median of 17.84): the median is within it.
            median = min(max(median_of_bins(acc["call_bins"], acc["calls"]), acc["call_min"]),
                         acc["call_max"])
            over = acc["over_estimate_max"]
            calls = {"count": acc["calls"], "median": median,
                     "max": acc["call_max"],
                     "max_over_estimate": None if over is None else round(over, 3)}
        work = {kernel: {"series": series, "newton_evaluations": newton,
                         "grid_evaluations": grid,
                         "newton_evaluations_per_series": round(newton / max(series, 1), 2)}
                for kernel, (series, newton, grid) in sorted(acc["kernels"].items())}
        return {"fitters_built": len(acc["fitters"]), "fit_ms_per_series": fit_ms,
                "fit_call_seconds": calls, "tracing_count_max": acc["tracing_count_max"],
                "work_per_kernel": work}


class SummariseInput(beam.CombineFn):
    """The read step's FILES ((1, rows) per file) and UNREADABLE ((path,
    reason)) -> {"files", "rows", "unreadable": {"count", "files": the first
    MAX_NAMED by path, as {"path", "error"}}}."""

    MAX_NAMED = 100

    def create_accumulator(self) -> dict:
        return {"files": 0, "rows": 0, "unreadable": 0, "named": []}

    def add_input(self, acc: dict, element) -> dict:
        kind, value = element
        if kind == "file":
            return self.merge_accumulators([acc, {"files": value[0], "rows": value[1],
                                                  "unreadable": 0, "named": []}])
        return self.merge_accumulators([acc, {"files": 0, "rows": 0, "unreadable": 1,
                                              "named": [value]}])

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        merged = self.create_accumulator()
        for acc in accumulators:
            for key in ("files", "rows", "unreadable"):
                merged[key] += acc[key]
            merged["named"] = sorted(merged["named"] + acc["named"])[:self.MAX_NAMED]
        return merged

    def extract_output(self, acc: dict) -> dict:
        return {"files": acc["files"], "rows": acc["rows"],
                "unreadable": {"count": acc["unreadable"],
                               "files": [{"path": p, "error": e} for p, e in acc["named"]]}}


class CountReuse(beam.CombineFn):
    """Output rows -> {"reused", "warm_started", "fitted"}: rows copied from
    the previous run, rows whose fit also started from its parameters, and
    rows fitted (or skipped or failed) anew."""

    def create_accumulator(self) -> dict:
        return {"reused": 0, "warm_started": 0, "fitted": 0}

    def add_input(self, counts: dict, row: dict) -> dict:
        counts["reused" if row["reused"] else "fitted"] += 1
        counts["warm_started"] += bool(row["warm_started"])
        return counts

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        merged = self.create_accumulator()
        for counts in accumulators:
            for key, n in counts.items():
                merged[key] += n
        return merged

    def extract_output(self, counts: dict) -> dict:
        return counts


class SummariseHoldout(beam.CombineFn):
    """Output rows -> the manifest's holdout totals (pipeline.io.holdout_totals,
    which the report sums too); None when no row was scored."""

    def create_accumulator(self) -> dict:
        return holdout_totals.create()

    def add_input(self, acc: dict, row: dict) -> dict:
        return holdout_totals.add(acc, row)

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        return holdout_totals.merge(accumulators)

    def extract_output(self, acc: dict) -> Optional[dict]:
        return holdout_totals.extract(acc)


class Summaries(beam.CombineFn):
    """(input name, value) -> {summary name: summary}: several CombineFns in
    one combine, each over the values of one input. `parts` maps a summary's
    name to (the input it reads, its CombineFn)."""

    def __init__(self, parts: dict):
        super().__init__()
        self._parts = parts

    def create_accumulator(self) -> dict:
        return {name: fn.create_accumulator() for name, (_, fn) in self._parts.items()}

    def add_input(self, acc: dict, element) -> dict:
        source, value = element
        for name, (reads, fn) in self._parts.items():
            if reads == source:
                acc[name] = fn.add_input(acc[name], value)
        return acc

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        accumulators = list(accumulators)
        return {name: fn.merge_accumulators([acc[name] for acc in accumulators])
                for name, (_, fn) in self._parts.items()}

    def extract_output(self, acc: dict) -> dict:
        return {name: fn.extract_output(acc[name]) for name, (_, fn) in self._parts.items()}


# WriteManifest's optional inputs: PCollections of ints to add up.
_TOTALS = ("warm_starts_offered", "previous_unreadable_shards", "predicted", "not_predicted",
           "coarse_grid")


def _summaries() -> Summaries:
    """The manifest's summaries, by the name _WriteManifestFn reads them:
    what the rows, the fits, the read step and the totals add up to."""
    total = lambda: beam.CombineFn.from_callable(sum)  # noqa: E731
    return Summaries({
        "status_counts": ("rows", CountStatuses()), "reuse": ("rows", CountReuse()),
        "holdout": ("rows", SummariseHoldout()), "null_ids": ("null_ids", total()),
        "fits": ("fits", SummariseFits()), "read": ("read", SummariseInput()),
        "no_step": ("no_step", CountEach()),
        **{name: (name, total()) for name in _TOTALS}})


class WriteManifest(beam.PTransform):
    """{"rows", "null_ids", "fits", "files", "unreadable", "written", and
    optionally "predictions_written", "no_step" and the _TOTALS} -> the
    manifest, written last.

    Inputs: rows, the output rows; null_ids, ints to add up; fits,
    metrics.FitStats; files, (1, rows) per input file read; unreadable,
    (path, reason) per input that could not be read; no_step, the reasons
    a series had no forecast step, one a series; written, WriteParams'
    result (the finalised shard names): a side input, so the manifest waits
    for every shard, and predictions_written likewise for the predictions;
    _TOTALS, ints (warm starts given, previous shards not read, series
    predicted or not). Returns the manifest's path (one element).

    Every count and summary is one CombineGlobally over the inputs tagged
    by name (`Summaries`): a combine of its own cost each summary 13
    transforms and a shuffle, and the job's 13 had made two thirds of its graph
    (docs/design.md, "Runners and quiet runs").
    """

    def __init__(self, record: manifest.RunRecord):
        super().__init__()
        self._record = record

    def expand(self, inputs: dict):
        tagged = [inputs["rows"] | "TagRows" >> beam.Map(lambda v: ("rows", v)),
                  inputs["files"] | "TagFiles" >> beam.Map(lambda v: ("read", ("file", v))),
                  inputs["unreadable"] | "TagUnreadable" >> beam.Map(
                      lambda v: ("read", ("unreadable", v)))]
        for name in ("null_ids", "fits", "no_step") + _TOTALS:
            if inputs.get(name) is not None:
                tagged.append(inputs[name] | f"Tag_{name}" >> beam.Map(lambda v, n=name: (n, v)))
        summary = (tagged | "AllCounts" >> beam.Flatten()
                   | "Summarise" >> beam.CombineGlobally(_summaries()))
        predictions_written = (inputs.get("predictions_written")
                               or inputs["rows"].pipeline | "NoPredictions" >> beam.Create([]))
        return summary | "Write" >> beam.ParDo(
            _WriteManifestFn(self._record), written=AsList(inputs["written"]),
            predictions_written=AsList(predictions_written))


class _WriteManifestFn(beam.DoFn):
    """Writes _SUCCESS.json or _FAILED.json from the combined counts."""

    def __init__(self, record: manifest.RunRecord, clock=time.time):
        self._record = record
        self._clock = clock

    def process(self, summary: dict, written: list, predictions_written: list):
        """summary: `_summaries()`'s output; written, predictions_written:
        the finalised shards (side inputs, so that this runs last)."""
        output = self._record.output
        nightly = {
            "reuse": {**summary["reuse"],
                      "warm_starts_offered": summary["warm_starts_offered"],
                      "previous_unreadable_shards": summary["previous_unreadable_shards"]},
            "predicted": summary["predicted"], "not_predicted": summary["not_predicted"],
            "no_step": dict(sorted(summary["no_step"].items())),
            "coarse_grid": summary["coarse_grid"], "holdout": summary["holdout"],
            "prediction_files": (outputs.params_files(output, outputs.PREDICTIONS_PREFIX)
                                 if self._record.predict is not None else [])}
        composed = manifest.compose(self._record, summary["status_counts"], summary["null_ids"],
                                    summary["fits"], output_files=outputs.params_files(output),
                                    finished_at=self._clock(), read=summary["read"],
                                    nightly=nightly)
        path = manifest.write(self._record.output, composed)
        _LOG.info("gpfit: wrote %s (%d shard(s) finalised)", path, len(written))
        # The run is over: a launcher that did not wait (a Flex Template)
        # cannot release the output folder, so the job does.
        lock.release(self._record.output, self._record.run_id)
        yield path
