"""ReuseOrFit: tonight's series against the previous run's rows, by id.

  ReadPrevious:  the previous output's params shards -> (series_id, row),
                 matched and read on the workers (the job graph holds the
                 glob, as for the input)
  Compare:       after a CoGroupByKey on the id, per series:
                   unchanged (same fingerprint; the old row "ok" or
                   "skipped", complete: reusable) -> the old row,
                   reused=True                                [REUSED]
                   changed, new, or last "failed" -> the Series, fitted;
                   with the old parameters as its warm_start where the old
                   row is "ok" and of this kernel, and (but new
                   ones) the fingerprint it was compared by    [main]
                   gone (in the previous output only) -> nothing
Failed rows are refitted: a failure may be the machine's, and failures are
few. Nothing is gathered on one worker: the join is a shuffle by id.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import NamedTuple, Optional

import apache_beam as beam
from apache_beam.io import fileio

from gpcore import FitConfig
from gpcore.result import OK, SKIPPED
from pipeline import metrics
from pipeline.io import fingerprint, outputs, previous, rows, shards
from pipeline.io.errors import first_line
from pipeline.io.schema import COLUMNS

_LOG = logging.getLogger(__name__)

REUSED = "reused"              # output tag: output rows copied from the previous run
KEPT = "kept"                  # output tag: (Series, row) of reused "ok" rows, for forecasts
OFFERED = "warm_starts"        # output tag: 1 per series given a warm start
UNREADABLE = "unreadable"      # output tag: (path, reason) of a previous shard not read
REUSABLE = (OK, SKIPPED)       # statuses an unchanged series keeps
# Columns a reused row must hold a value in: the schema's non-null ones but
# those reuse sets. A row without one (a shard another tool rewrote without
# n_points, say) is fitted: written with its null, it failed the job (exit 3).
WRITTEN = tuple(c.name for c in COLUMNS
                if not c.nullable and c.name not in ("reused", "warm_started"))


def reusable(old: dict, fingerprint_now: str) -> bool:
    """Whether an unchanged series keeps the previous row `old`: its
    fingerprint is tonight's, its status REUSABLE, it holds every WRITTEN
    value, and an "ok" row's parameters give a model (rows.parameters). A
    row without one (a shard rewritten without `components`, which a sum
    needs) was copied night after night, never forecast."""
    if not (old["status"] in REUSABLE and old.get("fingerprint")
            and old["fingerprint"] == fingerprint_now
            and all(old.get(name) is not None for name in WRITTEN)):
        return False
    if old["status"] != OK:
        return True
    try:
        rows.parameters(old)
    except ValueError:
        return False
    return True


class Reuse(NamedTuple):
    """ReuseOrFit's outputs."""

    to_fit: beam.PCollection      # Series (warm_start set where it applies)
    reused: beam.PCollection      # output rows, reused=True
    kept: beam.PCollection        # (Series, row): reused "ok" rows with their data
    offered: beam.PCollection     # ints: warm starts given
    unreadable: beam.PCollection  # (path, reason): previous shards that could not be read


class ReuseOrFit(beam.PTransform):
    """Series -> Reuse, against the previous output's rows.

    Args:
      folder: the previous output folder (pipeline.io.previous.check).
      previous_kernel: the kernel it fitted (its manifest's), or None.
      config: this run's fit configuration.
      fingerprint_key: fingerprint.options_key of this run (default: of config).
    """

    def __init__(self, folder: str, previous_kernel: Optional[str], config: FitConfig,
                 fingerprint_key: Optional[bytes] = None):
        super().__init__()
        self._folder = folder
        self._previous_kernel = previous_kernel
        self._config = config
        self._key = fingerprint_key

    def expand(self, series):
        old = (series.pipeline
               | "ListPrevious" >> beam.Create(list(outputs.shard_patterns(self._folder)))
               | "MatchPrevious" >> fileio.MatchAll()
               | "SpreadPrevious" >> beam.Reshuffle()
               | "ReadPrevious" >> beam.ParDo(ReadShard()).with_outputs(UNREADABLE, main="rows"))
        keyed = series | "KeyById" >> beam.Map(lambda s: (str(s.series_id), s))
        compared = (
            {"series": keyed, "previous": old.rows}
            | "JoinPrevious" >> beam.CoGroupByKey()
            | "Compare" >> beam.ParDo(Compare(self._config, self._previous_kernel, self._key))
            .with_outputs(REUSED, KEPT, OFFERED, main="to_fit"))
        return Reuse(compared.to_fit, compared[REUSED], compared[KEPT], compared[OFFERED],
                     old[UNREADABLE])


class ReadShard(beam.DoFn):
    """A matched previous shard -> (series_id, row) per row. A shard that
    cannot be read goes to UNREADABLE: its series are fitted, not reused
    (the launcher checked every footer; this is a damaged data page)."""

    def process(self, match):
        try:
            for row in shards.read_rows(match.path):
                yield row["series_id"], row
        except Exception as err:  # pylint: disable=broad-except  (any damage: fit instead)
            _LOG.warning("gpfit: previous output shard %s unreadable, its series are fitted: %s",
                         match.path, first_line(err))
            yield beam.pvalue.TaggedOutput(UNREADABLE, (match.path, first_line(err)))


class Compare(beam.DoFn):
    """(id, {"series": [Series], "previous": [row]}) -> see the module doc."""

    def __init__(self, config: FitConfig, previous_kernel: Optional[str],
                 fingerprint_key: Optional[bytes] = None):
        self._kernel = config.kernel_name
        self._previous_kernel = previous_kernel
        self._key = fingerprint_key or fingerprint.options_key(config)
        self._reused = metrics.counter(metrics.REUSED)
        self._offered = metrics.counter(metrics.WARM_STARTS_OFFERED)

    def process(self, element):
        _, grouped = element
        tonight = list(grouped["series"])
        if not tonight:  # gone from the input: not in the output
            return
        old = next(iter(grouped["previous"]), None)
        if old is None:
            yield tonight[0]  # one per id: ReadSeries gathered them
            return
        # Hashed here once; its row takes the fingerprint from the series.
        series = fingerprint.stamped(self._key, tonight[0])
        if reusable(old, series.fingerprint):
            self._reused.inc()
            row = dict(old, reused=True, warm_started=False)
            yield beam.pvalue.TaggedOutput(REUSED, row)
            if row["status"] == OK:
                yield beam.pvalue.TaggedOutput(KEPT, (series, row))
            return
        warm = previous.warm_start(old, self._kernel, self._previous_kernel)
        if warm is not None:
            self._offered.inc()
            yield beam.pvalue.TaggedOutput(OFFERED, 1)
            series = dataclasses.replace(series, warm_start=warm)  # inputs are not mutated
        yield series

