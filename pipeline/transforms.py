"""FitSeries: Series -> fit calls sized by cost -> fitted output rows.

  BatchByLength: Series -> FitCalls: series whose estimated cost
                 (gpcore.batching) reaches the target seconds per fit call
  FitBatches:    FitDoFn, one fitter per worker process, built and run by a
                 FitterHandler (pipeline/handler.py: gpcore.build_fitter, a
                 GPFitter, or under kernel "auto" a KernelChoice)

FitSeries also puts out one FitStats per fit call (FIT_STATS), for the
manifest, and, when asked (forecasts), each "ok" row with its Series
(FITTED). Every row carries the series' fingerprint (pipeline/io/fingerprint.py),
for the next run to compare: the one the series carries, if compared with a
previous run, else of its points. Reading the input is pipeline/reading.py.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Callable, NamedTuple, Optional

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows
from apache_beam.utils import shared

from gpcore import quiet

# A worker process loads TensorFlow here (gpcore.choice), when it unpickles
# FitDoFn: without TF's start-up lines (gpcore/quiet.py).
quiet.import_tensorflow(keep_lines=logging.getLogger("gpfit").isEnabledFor(logging.DEBUG))

from gpcore import Batching, FitConfig, FitResult, Series  # noqa: E402
from gpcore.result import FAILED, OK  # noqa: E402
from gpcore.batching import finite_points  # noqa: E402
from pipeline import metrics  # noqa: E402
from pipeline.progress import Progress, start_heartbeat  # noqa: E402
from pipeline.handler import FitterHandler  # noqa: E402
from pipeline.fitted_scale import said_in_y  # noqa: E402
from pipeline.io import conversion, fingerprint, scales  # noqa: E402
from pipeline.io.errors import first_line  # noqa: E402
from pipeline.io.schema import completed  # noqa: E402

_LOG = logging.getLogger(__name__)

FIT_STATS = "fit_stats"      # output tag: metrics.FitStats, one per fit call
FITTED = "fitted"            # output tag: (Series, row) per "ok" row, if kept


class FitCall(NamedTuple):
    """One fit call's series and their estimated core-seconds, as
    BatchByLength summed them: the progress lines and FitStats take this
    sum, not a second count of every point (and, under "auto", a second
    lookup of each series' periodic screen)."""

    series: list[Series]
    estimated_s: float


class FitSeries(beam.PTransform):
    """Series -> output rows (dicts of schema.OUTPUT_COLUMNS).

    Returns the outputs of FitBatches: rows (main), FIT_STATS and FITTED
    (empty unless keep_series).
    """

    def __init__(self, config: FitConfig, processes_per_machine: Optional[int],
                 seconds_per_call: float, keep_series: bool = False,
                 fingerprint_key: Optional[bytes] = None, holdout=None,
                 transform: str = scales.NONE):
        super().__init__()
        self._config = config
        self._transform = transform
        self._processes = processes_per_machine
        self._batching = Batching(config, seconds_per_call)
        self._keep_series = keep_series
        self._key = fingerprint_key
        self._holdout = holdout

    def expand(self, series):
        # The series to fit, counted for the progress lines' total: all of
        # them are read (a shuffle) before any is fitted, so waiting for the
        # count holds nothing up.
        total = series | "CountSeries" >> beam.combiners.Count.Globally()
        return (series
                | "BatchByLength" >> beam.ParDo(BatchByLength(self._batching))
                | "FitBatches" >> beam.ParDo(FitDoFn(
                    FitterHandler(self._config, self._processes), self._processes,
                    keep_series=self._keep_series,
                    fingerprint_key=self._key, holdout=self._holdout,
                    transform=self._transform),
                    total=beam.pvalue.AsSingleton(total))
                .with_outputs(FIT_STATS, FITTED, main="rows"))


class BatchByLength(beam.DoFn):
    """Series -> FitCalls, sized by estimated cost.

    Series gather per length bucket (gpcore.batching.Batching.bucket) until
    their summed cost reaches the target seconds per call: a series of
    thousands of points goes alone or with a few, short ones in calls of
    thousands. Calls are bounded because Dataflow cannot split an element
    and a retried bundle redoes all of its work. Calls are formed within a
    bundle (no extra shuffle); what is left at the end of a bundle goes out
    sorted by length, also cut by cost.
    """

    def __init__(self, batching: Batching):
        self._batching = batching
        # Per bucket: its series, their finite points, their costs and the
        # costs' sum. Points and cost are kept, not asked again at the
        # bundle's end: counting reads every point, and under "auto" the
        # cost runs the periodic screen (Batching.cost_of).
        self._buckets: dict[int, tuple[list[Series], list[int], list[float], float]] = {}

    def start_bundle(self):
        self._buckets = {}

    def process(self, series: Series):
        n = finite_points(series)
        key = self._batching.bucket(n)
        bucket, points, costs, seconds = self._buckets.get(key, ([], [], [], 0.0))
        bucket.append(series)
        points.append(n)
        costs.append(self._batching.cost_of(series, n))
        seconds += costs[-1]
        if self._batching.is_full(seconds):
            self._buckets.pop(key, None)
            yield FitCall(bucket, seconds)
        else:
            self._buckets[key] = (bucket, points, costs, seconds)

    def finish_bundle(self):
        rest = sorted((kept for bucket, points, costs, _ in self._buckets.values()
                       for kept in zip(points, bucket, costs)), key=lambda kept: kept[0])
        self._buckets = {}
        call, seconds = [], 0.0
        for _, series, cost in rest:
            call.append(series)
            seconds += cost
            if self._batching.is_full(seconds):
                yield GlobalWindows.windowed_value(FitCall(call, seconds))
                call, seconds = [], 0.0
        if call:
            yield GlobalWindows.windowed_value(FitCall(call, seconds))


class _FitterSlot:
    """A worker process's one fitter, with its lock and its progress.

    A plain class so that apache_beam.utils.shared can hold a weak reference.
    """

    def __init__(self, fitter, progress: Progress, heartbeat_s: float):
        self.fitter = fitter
        self.progress = progress
        self.lock = threading.Lock()
        self.id = uuid.uuid4().hex  # FitStats.fitter: this build, in every call's stats
        self.counted = False  # the fitters_built metric is counted once, in a bundle
        # Lines also while a call runs: an "auto" call can take minutes.
        self.heartbeat = start_heartbeat(progress, _LOG.info, heartbeat_s)


class FitDoFn(beam.DoFn):
    """Fits each FitCall's series with the worker process's one fitter.

    The fitter is the handler's (pipeline/handler.py: how to build it, what
    a call costs, the call); this DoFn holds the Beam lifecycle. Beam runs
    several instances of a DoFn per process, on threads. Building a fitter
    costs seconds (TF variables, a traced function), so the process builds
    one, in the first setup(), through a Shared handle, and every instance
    uses it under a lock. Besides the rows, each batch puts out a FitStats
    on FIT_STATS (the figures of its metrics, for the manifest), and with
    keep_series each "ok" row with its Series on FITTED.
    Under a --transform (`transform`) the series come on its scale; a skip
    reason that quotes their values is said in y's (fitted_scale.said_in_y).
    With a holdout (pipeline.backtest.Holdout) the fitter sees each series
    without its held-out points, and the rows get the backtest's scores;
    the fingerprint and FITTED keep the whole series.
    A fitter's fit never raises for a series (a bad one comes back skipped or
    failed); a call that raises all the same (the machine, not a series)
    becomes "failed" rows with the reason (failed_results): on Dataflow an
    exception would retry the bundle four times and then fail the job.
    """

    def __init__(self, handler: FitterHandler, processes_per_machine: Optional[int] = None,
                 clock: Callable[[], float] = time.monotonic, progress_every_s: float = 30.0,
                 keep_series: bool = False, heartbeat_s: Optional[float] = None,
                 fingerprint_key: Optional[bytes] = None, holdout=None,
                 transform: str = scales.NONE):
        self._handler = handler
        self._transform = transform
        self._kernel = handler.config.kernel_name
        self._key = fingerprint_key or fingerprint.options_key(handler.config)
        self._holdout = holdout
        self._keep_series = keep_series
        self._processes = processes_per_machine
        self._clock = clock
        self._progress_every_s = progress_every_s
        # Wall seconds between the heartbeat's checks (progress_every_s / 2
        # by default); a test driving `clock` sets it long.
        self._heartbeat_s = heartbeat_s or progress_every_s / 2
        self._shared = shared.Shared()
        self._slot: Optional[_FitterSlot] = None
        self._fitters_built = metrics.counter(metrics.FITTERS_BUILT)
        self._fit_ms = metrics.distribution(metrics.FIT_MS)
        self._traces = metrics.distribution(metrics.TRACING_COUNT)
        self._traces_now = metrics.gauge(metrics.TRACING_COUNT)

    def setup(self):
        self._slot = self._shared.acquire(self._build_slot)

    def _build_slot(self) -> _FitterSlot:
        progress = Progress(self._clock, self._progress_every_s, self._processes)
        return _FitterSlot(self._handler.load_fitter(), progress, self._heartbeat_s)

    def teardown(self):
        # The process's slot lives while an instance holds it (Shared keeps
        # a weak reference); its heartbeat ends with it.
        self._slot = None

    def process(self, call: FitCall, total: Optional[int] = None):
        """Fits one call's series; `total`: the series the job fits (the
        progress lines' total; None where not known)."""
        slot = self._slot
        batch, estimated = call
        slot.progress.set_total(total)
        with slot.lock:
            slot.progress.start_call(len(batch), estimated)
            if not slot.counted:
                # Metrics only count inside a bundle, not in setup().
                self._fitters_built.inc()
                slot.counted = True
            before = self._handler.counters(slot.fitter)
            start = self._clock()
            fitted = [self._holdout.fitted_part(s) for s in batch] if self._holdout else batch
            try:
                results = self._handler.fit(slot.fitter, fitted)
                if len(results) != len(batch):  # zipped below: a series without one is lost
                    raise RuntimeError(f"the fitter returned {len(results)} results for "
                                       f"{len(batch)} series")
            except Exception as err:  # pylint: disable=broad-except  (the machine's, not a series')
                _LOG.warning("gpfit: a fit call of %d series raised: %s", len(batch),
                             first_line(err))
                results = failed_results(batch, self._kernel, err)
            elapsed = self._clock() - start
            after = self._handler.counters(slot.fitter)
            work = self._handler.work_done(before, after)
            line = slot.progress.add(len(batch))
        if line:
            _LOG.info(line)
        per_series_ms = int(round(1000.0 * elapsed / max(len(batch), 1)))
        for _ in batch:
            self._fit_ms.update(per_series_ms)
        self._traces.update(after.tracing_count)
        self._traces_now.set(after.tracing_count)
        for series, seen, result in zip(batch, fitted, results):
            row = said_in_y(self._transform, seen, conversion.fitted_row(result, series, self._key))
            if self._holdout:
                row = self._holdout.scored(series, row)
            yield row
            if self._keep_series and row["status"] == OK:
                yield beam.pvalue.TaggedOutput(FITTED, (series, row))
        yield beam.pvalue.TaggedOutput(FIT_STATS, metrics.FitStats(
            len(batch), per_series_ms, after.tracing_count, slot.id, round(elapsed, 3),
            round(estimated, 3), work, after.tracing_count > before.tracing_count))


def failed_results(batch: list[Series], kernel: str, err: BaseException) -> list[FitResult]:
    """Every series of a fit call that raised `err`, "failed" with the reason
    (n_points 0: the call never reported them)."""
    return [FitResult(str(s.series_id), FAILED, kernel, 0,
                      error=f"fit raised {type(err).__name__}: {first_line(err)}")
            for s in batch]


def count_status(row: dict) -> dict:
    """Counts an output row under its status; returns it with every output
    column (schema.completed: a FitResult's row, or a reused row of an
    older release, lacks the holdout columns)."""
    metrics.counter(row["status"]).inc()
    return completed(row)
