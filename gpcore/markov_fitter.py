"""MarkovFitter: the O(n) fitter of Markov kernels (matern12, matern32,
matern52 and their sums) for long series, built once, fitting batch after
batch.

The objective is the dense fitter's, the profiled nll (likelihood.py), but
computed by a Kalman filter in O(n) time and memory (statespace.py). The
search follows the dense fitter's (gpcore/fitter.py) in fewer stages, because
every evaluation now touches the whole series (docs/design.md, "Long
series: Markov kernels"):

1. The search grid (starts.search_grid) is scored on a window of the
   series' first WINDOW_POINTS points, value only, and so is a series'
   warm start (Series.warm_start, a previous fit's parameters).
2. Newton (gpcore/newton.py) runs on the window from the best grid point.
   A warm start that scores at or below every grid point skips this
   stage: it is the next stage's start, and the window's Hessian is taken
   there (docs/design.md, "Long series: Markov kernels", warm starts).
3. Newton runs on the whole series from there: exact value and gradient
   (the chunked scan's recomputing gradient, statespace.chunked_sums), and
   as Hessian the window's at its optimum (stage 2's last), scaled by the
   ratio of observed points, computed once. A series within one window has
   its own exact objective in stage 2 and stops at stage 3's first
   evaluation. Each step updates that Hessian from the step and the
   change of the exact gradient (BFGS, secant_update).

Window Hessians come from forward differences of autodiff gradients,
batched as members with the gradient itself (P + 1 gradients). The function's input signature has
unknown batch size and length: one trace per fitter.
"""
from __future__ import annotations

import functools
import threading
from typing import NamedTuple, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from gpcore import newton, starts, statespace, trace_cache
from gpcore.batching import compiled_batches, quantised_length
from gpcore.config import MARKOV_ABOVE, FitConfig, is_markov
from gpcore.kernels import components
from gpcore.parameters import search_start
from gpcore.result import FAILED, SKIPPED, FitResult, first_line, report_own
from gpcore.series import CleanSeries, Series, clean, listed
from gpcore.traced import Traced

tfb = tfp.bijectors
DTYPE = tf.float64

# Points of the window that scores the grid and shapes the Hessian: at 4096
# a grid of 40 values costs about what one whole-series gradient does at
# 10^5 points (docs/design.md, "Long series: Markov kernels").
WINDOW_POINTS = 4096
# Forward-difference step of the Hessian, log units: truncation error
# ~ step (1e-4 relative, far below what Newton's steps need), round-off
# ~ eps |g| / step, below 1e-10 relative.
HESSIAN_STEP = 1e-4
# The secant update's least curvature along a step, relative to |s| |y|:
# below it the pair is noise or negative curvature and the Hessian stays.
SECANT_CURVATURE = 1e-8
# The modified secant's cubic term (secant_update): used where the value
# changed by more than this share of the value (far above the nll's
# round-off, docs/design.md "Long series: Markov kernels"), and held
# within this share of the secant's curvature.
SECANT_VALUE_CHANGE = 1e-10
SECANT_CUBIC_SHARE = 0.5
# Largest batch, in points (members x padded length): the gradient keeps
# one chunk of the scan alive (statespace.CHUNK_POINTS), the rest grows with
# the points of inputs (the bytes per point: docs/design.md, "Long series:
# Markov kernels").
MAX_BATCH_POINTS = 1 << 18

class MarkovFitter(tf.Module):
    """Fits constant mean + Markov kernel + Gaussian noise to long series by
    maximum marginal likelihood in O(n), batched, in one compiled function.

    Like GPFitter: variables created once, assigned per batch; `fit` never
    raises for a bad series; not thread-safe by nature, so `fit` holds a lock.
    """

    def __init__(self, config: FitConfig | None = None, name: str = "markov_fitter",
                 twin: "MarkovFitter | None" = None):
        """twin: a MarkovFitter of the same config whose trace this one
        shares (gpcore/traced.py)."""
        super().__init__(name=name)
        self.config = config or FitConfig(kernel="matern32")
        self.kernel = self.config.kernel
        if not is_markov(self.kernel):
            raise ValueError(f"MarkovFitter fits {', '.join(statespace.STATE_DIMENSION)} and "
                             f"their sums; got {self.config.kernel_name!r}")
        self._lock = threading.Lock()
        self.shape_parameters = [self._positive(n) for n in self.kernel.parameters]
        self.noise_ratio = self._positive("noise_ratio")
        # The log-space variables behind `parameters`, what the graph assigns:
        # listed once (a TransformedVariable's trainable_variables walks its
        # module tree, 2.4 ms a call), passed to every fit call.
        self.log_parameters = [tv.trainable_variables[0] for tv in self.parameters]
        self.work = {"batches": 0, "series": 0, "members": 0, "grid_evaluations": 0,
                     "member_evaluations": 0, "series_evaluations": 0, "points": 0.0,
                     "warm_started": 0}
        # The likelihood and its gradient are functions traced once and
        # called from each stage: inline, the fitter's first call took far
        # longer to trace (docs/design.md, "Long series: Markov kernels").
        compiled = functools.partial(tf.function, autograph=False, reduce_retracing=True,
                                     experimental_attributes={"_noinline": True})
        self._nll_compiled = compiled(self._nll)
        self._gradient_compiled = compiled(self._value_and_gradient)
        rows, columns = starts.grid_shape(self.kernel)
        p = len(self.kernel.parameters) + 1
        batch = tf.TensorSpec([None, None], DTYPE)
        if twin is not None:
            self._traced = twin._traced
            return
        self._traced = Traced(functools.partial(MarkovFitter._fit_graph, self),
                              [batch, batch, batch, batch, batch,
                               tf.TensorSpec([None, rows, p - 1], DTYPE),
                               tf.TensorSpec([None, columns], DTYPE),
                               tf.TensorSpec([None, p], DTYPE)],
                              cache_parts=trace_cache.parts(self.config, type(self)))

    @staticmethod
    def _positive(name: str) -> tfp.util.TransformedVariable:
        return tfp.util.TransformedVariable(
            tf.ones([1], DTYPE), tfb.Exp(), shape=tf.TensorShape([None]), name=name)

    @property
    def parameters(self):
        return self.shape_parameters + [self.noise_ratio]

    @property
    def tracing_count(self) -> int:
        return self._traced.tracing_count

    # ---- compiled part -------------------------------------------------

    def _nll(self, x, t, y, mask):
        """(nll, mean, scale2) [M] at log parameters x [M, P]."""
        shape = tf.unstack(tf.exp(x[:, :-1]), num=len(self.shape_parameters), axis=-1)
        return statespace.profiled_nll(self.kernel, shape, tf.exp(x[:, -1]), t, y, mask)

    def _value_and_gradient(self, x, t, y, mask):
        with tf.GradientTape() as tape:
            tape.watch(x)
            nll, mean, scale2 = self._nll(x, t, y, mask)
            # Members are independent: the gradient of the sum is each one's.
            total = tf.reduce_sum(nll)
        return nll, tape.gradient(total, x), mean, scale2

    def _with_hessian(self, x, t, y, mask):
        """(nll, gradient, Hessian [M, P, P], mean, scale2) at x [M, P]: the
        Hessian by forward differences of autodiff gradients, evaluated in
        one call with the gradient at x (P + 1 members, not 1 + 2P)."""
        p = x.shape[-1]
        offsets = tf.concat([tf.zeros([1, p], DTYPE), tf.eye(p, dtype=DTYPE) * HESSIAN_STEP], 0)
        moved = tf.reshape(x[:, None, :] + offsets[None], [-1, p])       # [M * (P + 1), P]
        spread = lambda v: tf.repeat(v, p + 1, axis=0)
        nll, g, mean, scale2 = self._gradient_compiled(moved, spread(t), spread(y), spread(mask))
        at_x = lambda v: tf.reshape(v, [-1, p + 1])[:, 0]
        g = tf.reshape(g, [-1, p + 1, p])
        h = (g[:, 1:] - g[:, :1]) / HESSIAN_STEP
        # Non-finite differences (a step out of range) leave Newton a failed
        # member rather than an eigendecomposition of NaN.
        h = 0.5 * (h + tf.linalg.matrix_transpose(h))
        return at_x(nll), g[:, 0], h, at_x(mean), at_x(scale2)

    def _fit_graph(self, variables, t, y, mask, lower, upper, kernel_grid, noise_grid, warm):
        """Grid on the window, Newton on the window, Newton on the series;
        variables: the calling fitter's log-parameter variables (assigned
        the optimum); t, y, mask [B, N]; lower, upper [B, P]; grids as
        GPFitter's; warm [B, P]: each series' warm start (log standardised
        coordinates, within the bounds), NaN rows where it has none."""
        series = tf.shape(t)[0]
        window = tf.minimum(WINDOW_POINTS, tf.shape(t)[1])
        tw, yw, mw = t[:, :window], y[:, :window], mask[:, :window]
        rows, columns = kernel_grid.shape[1], noise_grid.shape[1]
        p = len(self.parameters)
        points = tf.concat([tf.repeat(kernel_grid, columns, axis=1),
                            tf.tile(noise_grid, [1, rows])[..., None]], axis=-1)  # [B, G, P]
        grid = rows * columns
        spread = lambda v: tf.repeat(v, grid, axis=0)
        values = self._nll_compiled(tf.reshape(points, [-1, p]), spread(tw), spread(yw), spread(mw))[0]
        values = tf.reshape(values, [series, grid])
        values = tf.where(tf.math.is_finite(values), values, tf.constant(np.inf, DTYPE))
        start = tf.gather(points, tf.argmin(values, axis=-1, output_type=tf.int32), batch_dims=1)
        # A warm start replaces the window's Newton only where it beats the
        # grid's start on the window: the grid's start stays in play for one
        # window value, not a second whole-series start (docs/design.md,
        # "Long series: Markov kernels", warm starts).
        warmed = self._warm_wins(warm, tf.reduce_min(values, axis=-1), tw, yw, mw)  # [B]

        def on_window(x, members):
            take = lambda v: tf.gather(v, members)
            nll, g, h, mean, scale2 = self._with_hessian(x, take(tw), take(yw), take(mw))
            return nll, g, h, {"mean": mean, "scale2": scale2, "hessian": h}

        def on_series(window_hessian):
            """Newton's objective on the whole series: exact value and
            gradient; as Hessian the window's at its optimum,
            window_hessian [B, P, P], scaled by the ratio of observed points
            (computed once: secant_update corrects it step by step)."""
            scaled = window_hessian * (tf.reduce_sum(mask, -1)
                                       / tf.reduce_sum(mw, -1))[:, None, None]

            def evaluate(x, members):
                take = lambda v: tf.gather(v, members)
                nll, g, mean, scale2 = self._gradient_compiled(x, take(t), take(y), take(mask))
                return nll, g, take(scaled), {"mean": mean, "scale2": scale2}
            return evaluate

        floor = (newton.RIDGE_EIGEN_FLOOR if len(components(self.kernel)) > 1
                 else newton.EIGEN_FLOOR)
        minimize = functools.partial(newton.minimize, lower=lower, upper=upper,
                                     max_iterations=self.config.max_iterations,
                                     tolerance=self.config.tolerance, eigen_floor=floor)
        first = self._window_stage(minimize, on_window, start, warmed)
        at_warm = self._warm_hessian(warm, warmed, tw, yw, mw)
        window_hessian = tf.where(warmed[:, None, None], at_warm, first.hessian)
        result = minimize(on_series(window_hessian), tf.where(warmed[:, None], warm, first.position),
                          hessian_update=secant_update)
        for i, variable in enumerate(variables):
            variable.assign(result.position[:, i])
        params = tf.exp(result.position)
        zero = tf.zeros_like(result.value)
        return {
            "nll": result.value, "mean": result.aux["mean"], "scale2": result.aux["scale2"],
            "params": params, "noise_ratio": params[:, -1], "jitter": zero,
            "status": result.status, "at_bound": result.at_bound,
            "iterations": first.iterations + result.iterations,
            "evaluations": (first.evaluations + result.evaluations
                            + tf.reduce_sum(tf.cast(warmed, tf.int32))),
            "series_evaluations": result.evaluations,
            "warm_started": warmed,
        }

    def _warm_wins(self, warm, grid_best, tw, yw, mw):
        """[B] bool: the series' warm start [B, P] scores on the window (tw,
        yw, mw [B, W]) at or below its grid's best value grid_best [B]. A
        batch without warm starts scores none (it fits as before them)."""
        given = tf.reduce_all(tf.math.is_finite(warm), axis=-1)

        def scored():
            value = self._nll_compiled(tf.where(given[:, None], warm, 0.0), tw, yw, mw)[0]
            return given & tf.math.is_finite(value) & (value <= grid_best)
        return tf.cond(tf.reduce_any(given), scored, lambda: tf.zeros_like(given))

    def _window_stage(self, minimize, on_window, start, warmed):
        """Newton on the window from start [B, P] for the series not
        warmed [B]: (position, hessian, iterations, evaluations), the
        start and zeros for the warmed ones (none run when all are)."""
        def run():
            first = minimize(on_window, start, active=~warmed)
            return _Window(first.position, first.aux["hessian"], first.iterations,
                           first.evaluations)
        p = len(self.parameters)
        skipped = lambda: _Window(start, tf.zeros([tf.shape(start)[0], p, p], DTYPE),
                                  tf.zeros_like(warmed, tf.int32), tf.constant(0))
        return tf.cond(tf.reduce_all(warmed), skipped, run)

    def _warm_hessian(self, warm, warmed, tw, yw, mw):
        """[B, P, P] the window's Hessian at the warm starts of the warmed
        series [B] (one window evaluation each), zeros elsewhere."""
        p = len(self.parameters)
        zeros = tf.zeros([tf.shape(warm)[0], p, p], DTYPE)

        def at_warm():
            members = tf.cast(tf.squeeze(tf.where(warmed), -1), tf.int32)
            take = lambda v: tf.gather(v, members)
            h = self._with_hessian(take(warm), take(tw), take(yw), take(mw))[2]
            return tf.tensor_scatter_nd_update(zeros, members[:, None], h)
        return tf.cond(tf.reduce_any(warmed), at_warm, lambda: zeros)

    # ---- Python side ---------------------------------------------------

    def fit(self, series: Sequence[Series]) -> list[FitResult]:
        """One FitResult per series, in order; never raises for a bad series."""
        series = listed(series)
        results: list[FitResult | None] = [None] * len(series)
        ready = []
        for i, s in enumerate(series):
            try:
                cleaned, n, reason = clean(s, self.config.min_points, self.config.max_points,
                                           MARKOV_ABOVE)
            except Exception as err:  # never let one series fail the caller
                cleaned, n, reason = None, 0, (f"series could not be read: "
                                                f"{type(err).__name__}: {first_line(err)}")
            if cleaned is None:
                results[i] = FitResult(str(s.series_id), SKIPPED, self.config.kernel_name, n,
                                       error=reason)
            else:
                ready.append((i, cleaned))
        ready.sort(key=lambda item: item[1].n_points)
        with self._lock:
            for batch in self._batches(ready):
                for (i, _), result in zip(batch, self._fit_safely([s for _, s in batch])):
                    results[i] = result
        return results

    def fit_clean(self, batch: Sequence[CleanSeries]) -> list[FitResult]:
        """FitResults of series already cleaned (GPFitter hands over its long
        series this way), in order."""
        order = sorted(range(len(batch)), key=lambda i: batch[i].n_points)
        results: list[FitResult | None] = [None] * len(batch)
        with self._lock:
            for part in self._batches([(i, batch[i]) for i in order]):
                for (i, _), result in zip(part, self._fit_safely([s for _, s in part])):
                    results[i] = result
        return results

    def _batches(self, ready):
        return compiled_batches(ready, self.config.batch_size, quantised_length,
                                lambda n_max: MAX_BATCH_POINTS // n_max)

    def _fit_safely(self, batch: list[CleanSeries]) -> list[FitResult]:
        """A batch that raises is split, so that one bad series fails alone."""
        try:
            return self._fit_batch(batch)
        except Exception as err:  # never let one series fail the caller
            report_own(err)
            if len(batch) > 1:
                return [r for s in batch for r in self._fit_safely([s])]
            return [FitResult(str(batch[0].series_id), FAILED, self.config.kernel_name,
                              batch[0].n_points, error=f"fit failed: {first_line(err)}")]

    def _fit_batch(self, batch: list[CleanSeries]) -> list[FitResult]:
        from gpcore.fitter import _StandardisedBatch  # one way back to the caller's units
        kernel = self.kernel
        group = np.arange(len(batch), dtype=np.int32)
        # No Cholesky of the whole series here: the quantised length, not the
        # dense batch's padding off multiples of 256.
        data = _StandardisedBatch(batch, group, pad=quantised_length)
        grids = [_search_grid(kernel, t, y) for t, y in zip(data.t_std, data.y_standard)]
        lower, upper = (np.stack(side) for side in
                        zip(*(starts.bounds(kernel, t) for t in data.t_std)))
        out = {k: v.numpy() for k, v in self._traced(
            self.log_parameters, data.t, data.y, data.mask, lower, upper,
            np.stack([rows for rows, _ in grids]),
            np.stack([columns for _, columns in grids]),
            _warm_starts(kernel, batch, data.span, lower, upper)).items()}
        self.work["batches"] += 1
        self.work["series"] += len(batch)
        self.work["members"] += len(batch)
        self.work["grid_evaluations"] += len(batch) * int(np.prod(starts.grid_shape(kernel)))
        self.work["member_evaluations"] += int(out.pop("evaluations"))
        self.work["series_evaluations"] += int(out.pop("series_evaluations"))
        self.work["points"] += float(data.t.size)
        warmed = out.pop("warm_started")
        self.work["warm_started"] += int(warmed.sum())
        return [data.result(b, out, kernel, bool(warmed[b])) for b in range(len(batch))]


def secant_update(x, g, h, x_new, g_new, h_new, f=None, f_new=None):
    """BFGS: the Hessian h [M, P, P] at x corrected so that it maps the step
    s = x_new - x [M, P] to the change of the exact gradient y = g_new - g;
    h itself where the pair shows no positive curvature. The whole-series
    stage's Hessian, the window's scaled, errs along one direction at
    10^6 points, which made Newton converge linearly; the update learns
    that direction from the steps themselves (docs/design.md, "Long
    series: Markov kernels"). h_new, the fixed scaled window Hessian, is
    unused.

    With the values f, f_new [M], the secant condition is Zhang, Deng and
    Chen's modified one (JOTA 102, 1999): y + theta s / s's, theta =
    6 (f - f_new) + 3 (g + g_new)'s, the curvature at x_new of the cubic
    through both values and slopes along s instead of the secant's average
    over s. The first whole-series step is long (tenths in log units) and
    the nll is not quadratic over it, so the average misled the second
    step (design.md). theta is used only where the value change is far
    above round-off (SECANT_VALUE_CHANGE) and is held within
    SECANT_CUBIC_SHARE of s'y: a correction of the secant, not a new one.
    """
    del h_new
    step, change = x_new - x, g_new - g
    ys = tf.reduce_sum(change * step, -1)
    if f is not None:
        theta = 6.0 * (f - f_new) + 3.0 * tf.reduce_sum((g + g_new) * step, -1)
        trusted = (tf.math.is_finite(theta) & (ys > 0.0)
                   & (tf.abs(f - f_new) > SECANT_VALUE_CHANGE * tf.abs(f)))
        bound = SECANT_CUBIC_SHARE * tf.abs(ys)
        theta = tf.where(trusted, tf.clip_by_value(theta, -bound, bound), tf.zeros_like(theta))
        squared = tf.reduce_sum(step * step, -1)
        change = change + (theta / tf.where(squared > 0.0, squared, 1.0))[:, None] * step
        ys = ys + theta
    hs = tf.linalg.matvec(h, step)
    shs = tf.reduce_sum(step * hs, -1)
    size = tf.norm(step, axis=-1) * tf.norm(change, axis=-1)
    usable = (ys > SECANT_CURVATURE * size) & (shs > 0.0) & tf.math.is_finite(ys)
    one = tf.ones_like(ys)
    shs, ys = tf.where(usable, shs, one), tf.where(usable, ys, one)
    updated = (h - hs[:, :, None] * hs[:, None, :] / shs[:, None, None]
               + change[:, :, None] * change[:, None, :] / ys[:, None, None])
    return tf.where(usable[:, None, None], updated, h)


class _Window(NamedTuple):
    """The window stage's results that the whole-series stage takes, [B, ...]."""
    position: tf.Tensor
    hessian: tf.Tensor
    iterations: tf.Tensor
    evaluations: tf.Tensor


def _warm_starts(kernel, batch: Sequence[CleanSeries], spans: np.ndarray, lower: np.ndarray,
                 upper: np.ndarray) -> np.ndarray:
    """[B, P] each series' warm start in log standardised coordinates
    (parameters.search_start over its span, clipped to the bounds), as the
    dense fitter takes it; NaN rows where there is none or it does not
    apply."""
    warm = np.full(lower.shape, np.nan)
    for b, (s, span) in enumerate(zip(batch, spans)):
        start = search_start(kernel, s.warm_start, span)
        if start is not None:
            warm[b] = np.clip(start, lower[b], upper[b])
    return warm


def _search_grid(kernel, t, y):
    """starts.search_grid on the window for sums (their grid takes a
    periodogram, whose cost grows as n^2; its periods go unused here), on
    the whole series for a single kernel (its median spacing)."""
    if len(components(kernel)) > 1:
        return starts.search_grid(kernel, t[:WINDOW_POINTS], y[:WINDOW_POINTS])
    return starts.search_grid(kernel, t, y)
