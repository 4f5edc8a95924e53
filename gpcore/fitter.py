"""GPFitter: one compiled Gaussian-process fitter, built once, fitting batch
after batch of series; the batch driver around the in-graph search.

Its variables (the log shape parameters and noise ratio of a batch, behind
TFP bijectors) are created once in __init__. Each batch runs one
`tf.function`, the search of gpcore/search.py: a grid of starting points
scored (value only), Newton from the best, probes around each optimum, the
optimum assigned back to the variables. The function's input signature has
unknown batch size and length, so it is traced once per fitter (and its
twins, gpcore/traced.py), never per series. This module is the Python side: cleaning, batching by length, the
jitter escalation, and results in the caller's units.
"""
from __future__ import annotations

import functools
import threading
from typing import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from gpcore import newton, parameters, starts, trace_cache
from gpcore.batching import (MAX_BATCH_ELEMENTS, compiled_batches, flops_per_grid,
                             flops_per_newton_evaluation, padded_length)
from gpcore.config import (AUTO, MARKOV_ABOVE, MARKOV_KERNELS, FitConfig, check_memory, checked,
                           is_markov)
from gpcore.likelihood import bic
from gpcore.result import FAILED, OK, SKIPPED, FitResult, first_line, last_line, report_own
from gpcore.search import GIVEN_RANK, WARM_RANK, Search
from gpcore.series import OVER_MAX_POINTS, CleanSeries, Series, clean, listed
from gpcore.traced import Traced

tfb = tfp.bijectors
DTYPE = tf.float64

# Diagonal jitter added to the noise ratio (units of the kernel variance).
# Tried in order while a series' likelihood is not finite at any start; the
# reported noise variance includes it, so the reported parameters reproduce
# the reported nll.
JITTERS = (0.0, 1e-6, 1e-4, 1e-2)

# Points of warm_up's made-up series: the function's instantiation costs
# the same at any length, and a short series little else.
WARM_UP_POINTS = 16


class GPFitter(tf.Module):
    """Fits constant mean + kernel + Gaussian noise to many series by maximum
    marginal likelihood, batched, in one compiled TensorFlow function.

    The constant mean and the kernel variance have closed-form maximisers
    (profiled out, see likelihood.py); the optimiser searches the log shape
    parameters of the kernel and the log noise-to-signal ratio, within
    bounds set from each series' spacing and span (starts.py).

    Not thread-safe by nature (variables are shared state): `fit` holds a
    lock, so concurrent callers are served one at a time.
    """

    # The in-graph search this fitter compiles (gpcore/search.py).
    search_type = Search

    def __init__(self, config: FitConfig | None = None, name: str = "gp_fitter",
                 twin: "GPFitter | None" = None):
        """twin: a fitter built alike (the same config and search) whose
        trace this one shares (gpcore/traced.py): a copy of it, with
        variables of its own."""
        super().__init__(name=name)
        self.config = FitConfig() if config is None else checked(config, "GPFitter")
        if self.config.kernel == AUTO:
            raise ValueError(f"GPFitter fits one kernel; kernel {AUTO!r} is "
                             "gpcore.build_fitter's (a KernelChoice)")
        check_memory(self.config)  # this machine's, where the fit runs
        if twin is not None and (twin.config != self.config
                                 or twin.search_type is not self.search_type):
            raise ValueError("a twin shares the trace of a fitter built alike: same FitConfig "
                             f"and search; got {twin.config.kernel_name!r} for "
                             f"{self.config.kernel_name!r}")
        self.kernel = self.config.kernel
        self._lock = threading.Lock()
        # Series longer than MARKOV_ABOVE go to the O(n) fitter where the
        # kernel has a state-space form (docs/design.md, "Long series:
        # Markov kernels").
        self.long_fitter = None
        if is_markov(self.config.kernel):
            from gpcore.markov_fitter import MarkovFitter
            self.long_fitter = MarkovFitter(self.config, name=name + "_long",
                                            twin=twin.long_fitter if twin is not None else None)
        # Batch-shaped [C] (C = series x restarts in flight) with unknown
        # size, so that batches of any size re-use the same variables.
        self.shape_parameters = [self._positive(name) for name in self.kernel.parameters]
        self.noise_ratio = self._positive("noise_ratio")
        self.jitter = tf.Variable(JITTERS[0], dtype=DTYPE, trainable=False, name="jitter")
        # The log-space variables behind `parameters`, what the graph assigns:
        # listed once (a TransformedVariable's trainable_variables walks its
        # module tree, 2.4 ms a call), passed to every fit call.
        self.log_parameters = [tv.trainable_variables[0] for tv in self.parameters]
        # Work done so far, for benchmarks and the manifest: the series
        # fitted, member evaluations of the value alone (grid) and of value,
        # gradient and Hessian (Newton), and the floating-point operations
        # they needed.
        self.work = {"batches": 0, "series": 0, "members": 0, "grid_evaluations": 0,
                     "member_evaluations": 0, "flops": 0.0}
        self.search = self.search_type(self.kernel, self.config, self.log_parameters, self.jitter)
        if twin is not None:
            self._traced = twin._traced
            return
        n_params = len(self.parameters)
        rows, columns = starts.grid_shape(self.kernel)
        batch = tf.TensorSpec([None, None], DTYPE)  # [B, N] data or [C, P] bounds
        # A partial, not the method: TF counts traces per code object, so the
        # fitters of kernel auto (one trace each) would read as one retracing.
        fit_members = functools.partial(self.search_type.fit_members, self.search)
        self._traced = Traced(fit_members, [
            batch, batch, batch,                                      # t, y, mask [B, N]
            batch, batch,                                             # lower, upper [C, P]
            tf.TensorSpec([None, rows, n_params - 1], DTYPE),         # kernel grid rows [B, ...]
            tf.TensorSpec([None, columns], DTYPE),                    # noise grid columns [B, ...]
            tf.TensorSpec([None], tf.int32),                          # series of each member [C]
            tf.TensorSpec([None], tf.int32),                          # restart rank [C]; < 0: given, warm
            batch,                                                    # warm start [C, P]
        ], cache_parts=trace_cache.parts(self.config, type(self), self.search_type))

    @staticmethod
    def _positive(name: str) -> tfp.util.TransformedVariable:
        # Exp: the optimiser works in log space, natural for scale parameters.
        return tfp.util.TransformedVariable(
            tf.ones([1], DTYPE), tfb.Exp(), shape=tf.TensorShape([None]), name=name)

    @property
    def parameters(self) -> list[tfp.util.TransformedVariable]:
        """The TransformedVariables the optimiser searches, in position order."""
        return self.shape_parameters + [self.noise_ratio]

    @property
    def tracing_count(self) -> int:
        """Traces of the compiled fit so far, shared with its twins: 1 once
        the first of them has fitted."""
        return self._traced.tracing_count

    # ---- Python side ---------------------------------------------------

    def warm_up(self) -> bool:
        """Readies a kept trace (gpcore/trace_cache.py): runs it once on a
        made-up series, so that TensorFlow's one-off instantiation of the
        function, shared by every fitter of this process that runs the same
        kept entry, is done before real work; it is not counted in `work`.
        False, doing nothing, where the trace is not kept: tracing holds the
        GIL for a second or more (docs/design.md, "What a small night
        costs")."""
        if not self._traced.load_kept():
            return False
        # Within the configuration's bounds on points, or it is not fitted.
        points = max(WARM_UP_POINTS, self.config.min_points)
        t = np.linspace(0.0, 1.0, min(points, self.config.max_points or points))
        ready, results = self._ready_to_fit(
            [Series("warm-up", t, np.sin(2.0 * np.pi * t) + 0.1 * np.cos(17.0 * t))], None)
        # The counters are put back inside the fitter's lock, under which
        # every count is made: other threads' fits are kept whole.
        with self._lock:
            work = dict(self.work)
            self._fit_ready(ready, results)
            self.work = work
        return True

    def fit(self, series: Sequence[Series], starts_from=None) -> list[FitResult]:
        """Fits every series; returns one FitResult per series, in order.

        starts_from: optional, one per series: None, or parameters (mappings as
        FitResult.params gives them, of this kernel) that the series' fit
        starts from beside its search grid's best point, instead of the
        grid's restarts (kernel auto's periodic candidate: gpcore/choice.py).

        Never raises for a bad series: it comes back "skipped" or "failed"
        with the reason. Raises TypeError where `series` is one Series, or
        holds something that is not one.
        """
        ready, results = self._ready_to_fit(series, starts_from)
        with self._lock:
            self._fit_ready(ready, results)
        return results

    def _ready_to_fit(self, series, starts_from):
        """(ready: (index, CleanSeries) pairs to fit here, sorted by length;
        results: one per series, those skipped or fitted on the O(n) path
        filled in, the others None)."""
        config = self.config
        series = listed(series)
        results: list[FitResult | None] = [None] * len(series)
        ready: list[tuple[int, CleanSeries]] = []
        for i, s in enumerate(series):
            try:
                cleaned, n, reason = clean(s, config.min_points, config.max_points,
                                           MARKOV_ABOVE if self.long_fitter else None)
            except Exception as err:  # never let one series fail the caller
                cleaned, n, reason = None, 0, (f"series could not be read: "
                                                f"{type(err).__name__}: {first_line(err)}")
            if cleaned is None:
                results[i] = FitResult(str(s.series_id), SKIPPED, config.kernel_name, n,
                                       error=_long_advice(reason, n, config))
            else:
                if starts_from is not None and starts_from[i]:
                    cleaned.starts = list(starts_from[i])
                ready.append((i, cleaned))
        if self.long_fitter is not None:
            long = [(i, c) for i, c in ready if c.n_points > MARKOV_ABOVE]
            ready = [(i, c) for i, c in ready if c.n_points <= MARKOV_ABOVE]
            for (i, _), result in zip(long, self.long_fitter.fit_clean([c for _, c in long])):
                results[i] = result
        # Similar lengths together: padding is wasted work (cost ~ N^3).
        ready.sort(key=lambda item: item[1].n_points)
        return ready, results

    def _fit_ready(self, ready, results) -> None:
        """Fits `ready` (_ready_to_fit) into results, in compiled batches; the
        caller holds the fitter's lock."""
        for batch in self._batches(ready):
            fitted = self._fit_robustly([s for _, s in batch])
            for (i, _), result in zip(batch, fitted):
                results[i] = result

    def _batches(self, ready):
        return compiled_batches(
            ready, self.config.batch_size, padded_length,
            lambda n_max: MAX_BATCH_ELEMENTS // (self.config.restarts * n_max * n_max))

    def _fit_robustly(self, batch: list[CleanSeries]) -> list[FitResult]:
        """Fits a batch, escalating the jitter for series whose likelihood is
        not finite at any start (a failed Cholesky gives NaN on CPU; some
        devices raise). A batch that raises is split, so that one bad series
        fails alone."""
        results: dict[int, FitResult] = {}
        pending = list(range(len(batch)))
        error = None
        try:
            for jitter in JITTERS:
                self.jitter.assign(jitter)
                try:
                    fitted = self._fit_batch([batch[i] for i in pending])
                except tf.errors.InvalidArgumentError as err:
                    error = err
                    continue
                error = None
                results.update(zip(pending, fitted))
                pending = [i for i in pending if results[i].status == FAILED]
                if not pending:
                    break
        except Exception as err:  # never let one series fail the caller
            report_own(err)
            error = err
        finally:
            self.jitter.assign(JITTERS[0])
        if error is not None and len(pending) > 1:
            for i in pending:
                results[i] = self._fit_robustly([batch[i]])[0]
        elif error is not None:
            series = batch[pending[0]]
            results[pending[0]] = FitResult(
                str(series.series_id), FAILED, self.config.kernel_name, series.n_points,
                error=f"fit failed with jitter up to {JITTERS[-1]:g}: {last_line(error)}")
        return [results[i] for i in range(len(batch))]

    def _fit_batch(self, batch: list[CleanSeries]) -> list[FitResult]:
        kernel, restarts = self.kernel, self.config.restarts
        spans = [s.t[-1] - s.t[0] for s in batch]
        warm = [parameters.search_start(kernel, s.warm_start, span)
                for s, span in zip(batch, spans)]
        given = [[g for g in (parameters.search_start(kernel, p, span) for p in s.starts or ())
                  if g is not None] for s, span in zip(batch, spans)]
        # Members: restart r of series b (series with given starts: only the
        # grid's best point, r = 0), then each given start, then one warm
        # start for each series that has one.
        gridded = [(r, b) for r in range(restarts) for b in range(len(batch))
                   if r == 0 or not given[b]]
        handed = [(b, g) for b, mine in enumerate(given) for g in mine]
        placed = handed + [(b, w) for b, w in enumerate(warm) if w is not None]
        warmed = [b for b, _ in placed]
        group = np.r_[[b for _, b in gridded], warmed].astype(np.int32)
        rank = np.r_[[r for r, _ in gridded], np.full(len(handed), GIVEN_RANK),
                     np.full(len(placed) - len(handed), WARM_RANK)].astype(np.int32)
        data = _StandardisedBatch(batch, group)
        grids = [starts.search_grid(kernel, t, y) for t, y in zip(data.t_std, data.y_standard)]
        lower, upper = (np.stack(side)[group] for side in
                        zip(*(starts.bounds(kernel, t) for t in data.t_std)))
        start = np.zeros_like(lower)
        if warmed:
            start[len(group) - len(warmed):] = [p for _, p in placed]
        out = {k: v.numpy() for k, v in self._traced(
            self.log_parameters + [self.jitter], data.t, data.y, data.mask, lower, upper,
            np.stack([rows for rows, _ in grids]), np.stack([columns for _, columns in grids]),
            group, rank, np.clip(start, lower, upper)).items()}
        self._count_work(len(group), len(batch), int(out.pop("evaluations")), data.t.shape[1])
        return [data.result(b, out, kernel, warm[b] is not None) for b in range(len(batch))]

    def _count_work(self, members: int, series: int, evaluations: int, n: int) -> None:
        # The far probes counted on every series: under FitConfig.probe_check
        # an upper bound (they run only where the residual check fails).
        far = self.config.far_probes
        grid_points = (int(np.prod(starts.grid_shape(self.kernel)))
                       + starts.probe_count(self.kernel, far)
                       + starts.far_probe_count(self.kernel, far))
        self.work["batches"] += 1
        self.work["series"] += series
        self.work["members"] += members
        self.work["grid_evaluations"] += series * grid_points
        self.work["member_evaluations"] += evaluations
        self.work["flops"] += (series * flops_per_grid(self.kernel, n, self.config.far_probes)
                               + evaluations * flops_per_newton_evaluation(n, len(self.parameters)))


def _long_advice(reason, n: int, config: FitConfig):
    """reason, with the kernels that fit a series of n points in O(n) named
    where the kernel lacks a state-space form and n is what stopped it."""
    if OVER_MAX_POINTS in reason and not is_markov(config.kernel):
        return (f"{reason}; kernel {config.kernel_name} has no exact O(n) form: "
                f"{', '.join(MARKOV_KERNELS)} and their sums fit series longer than "
                f"{MARKOV_ABOVE} points in O(n)")
    return reason


class _StandardisedBatch:
    """A batch standardised (t to [0, 1], y to zero mean and unit variance),
    padded to [B, N] with masks, one row per series, and the way back to
    the caller's units (member c fits series group[c])."""

    def __init__(self, batch: list[CleanSeries], group: np.ndarray, pad=padded_length):
        """pad: points -> the padded length (the dense batch's; the O(n)
        path, which has no Cholesky of the whole, passes quantised_length)."""
        self.batch = batch
        self.group = group
        n_pad = pad(max(s.n_points for s in batch))
        self.t0 = np.array([s.t[0] for s in batch])
        self.span = np.array([s.t[-1] - s.t[0] for s in batch])
        self.y_mean = np.array([s.y.mean() for s in batch])
        self.y_scale = np.array([s.y.std() for s in batch])
        self.t_std = [(s.t - t0) / span for s, t0, span in zip(batch, self.t0, self.span)]
        self.y_standard = [(s.y - m) / sd for s, m, sd in zip(batch, self.y_mean, self.y_scale)]
        t = np.zeros((len(batch), n_pad))
        y = np.zeros((len(batch), n_pad))
        mask = np.zeros((len(batch), n_pad))
        for b, (ts, ys) in enumerate(zip(self.t_std, self.y_standard)):
            t[b, :ts.size], y[b, :ys.size], mask[b, :ys.size] = ts, ys, 1.0
            # Padding repeats the last time: finite, and masked out anyway.
            t[b, ts.size:] = ts[-1]
        self.t, self.y, self.mask = t, y, mask

    def result(self, b: int, out: dict, kernel, warm_started: bool) -> FitResult:
        """FitResult of series b, from its best member, in the caller's units."""
        series = self.batch[b]
        members = np.flatnonzero(self.group == b)
        nll = out["nll"][members]
        if not np.isfinite(nll).any():
            return FitResult(str(series.series_id), FAILED, kernel.name, series.n_points,
                             error="likelihood is not finite at any start (covariance "
                                   "not positive definite even with jitter "
                                   f"{out['jitter'][b]:g}); check the series for "
                                   "extreme or degenerate values")
        m = members[np.nanargmin(np.where(np.isfinite(nll), nll, np.nan))]
        sd = self.y_scale[b]
        scale2 = out["scale2"][m]
        parts = parameters.component_rows(kernel, out["params"][m][:-1], scale2, sd, self.span[b])
        single = parts[0] if len(parts) == 1 else {}
        fitted = dict(
            mean=self.y_mean[b] + sd * out["mean"][m],
            amplitude=single.get("amplitude"),
            length_scale=single.get("length_scale"),
            period=single.get("period"),
            noise_variance=sd * sd * scale2 * out["noise_ratio"][m],
            # Standardising y by sd divides the density by sd^n.
            nll=out["nll"][m] + series.n_points * np.log(sd),
        )
        numbers = [v for v in fitted.values() if v is not None]
        numbers += [v for part in parts for k, v in part.items() if k != "kernel" and v is not None]
        if not all(np.isfinite(numbers)):
            return FitResult(str(series.series_id), FAILED, kernel.name, series.n_points,
                             error=f"fit gave non-finite parameters {fitted} {parts}; check "
                                   "the series for extreme values")
        status = int(out["status"][m])
        return FitResult(str(series.series_id), OK, kernel.name, series.n_points,
                         converged=status == newton.CONVERGED,
                         stop_reason=newton.STOP_REASONS[status],
                         at_bound=bool(out["at_bound"][m]),
                         iterations=int(out["iterations"][m]),
                         components=parts, bic=bic(kernel, fitted["nll"], series.n_points),
                         warm_started=warm_started, **fitted)

