"""GPFitter: one compiled Gaussian-process fitter, built once, fitting batch
after batch of series.

Its variables (the log shape parameters and noise ratio of a batch, behind
TFP bijectors) are created once in __init__. Each batch runs one
`tf.function` that scores a grid of starting points (value only), assigns
the best to the variables, runs damped Newton from there (gpcore/newton.py)
and assigns the optimum back. The function's input signature has unknown
batch size and length, so it is traced once per fitter, never per series.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from gpcore import likelihood, newton, starts
from gpcore.batching import (flops_per_newton_evaluation, flops_per_value,
                             padded_length)
from gpcore.config import FitConfig
from gpcore.kernels import distances, kernel as kernel_named
from gpcore.result import FAILED, OK, SKIPPED, FitResult, first_line
from gpcore.series import CleanSeries, Series, clean

tfb = tfp.bijectors
DTYPE = tf.float64

# Diagonal jitter added to the noise ratio (units of the kernel variance).
# Tried in order while a series' likelihood is not finite at any start; the
# reported noise variance includes it, so the reported parameters reproduce
# the reported nll.
JITTERS = (0.0, 1e-6, 1e-4, 1e-2)

# Restarts of one series within this distance (log units) of a lower one
# have reached its basin: they stop rather than finish it again.
MERGE_WITHIN = 0.1

# Largest batch, in covariance elements (batch members x N x N): a Newton
# evaluation keeps about ten such float64 tensors alive (~64 MB each).
MAX_BATCH_ELEMENTS = 1 << 23


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

    def __init__(self, config: FitConfig | None = None, name: str = "gp_fitter"):
        super().__init__(name=name)
        self.config = config or FitConfig()
        self.kernel = kernel_named(self.config.kernel)
        self._lock = threading.Lock()
        # Batch-shaped [C] (C = series x restarts in flight) with unknown
        # size, so that batches of any size re-use the same variables.
        self.shape_parameters = [self._positive(name) for name in self.kernel.parameters]
        self.noise_ratio = self._positive("noise_ratio")
        self.jitter = tf.Variable(JITTERS[0], dtype=DTYPE, trainable=False, name="jitter")
        # Work done so far, for benchmarks: member evaluations of the value
        # alone (grid) and of value, gradient and Hessian (Newton), and the
        # floating-point operations they needed.
        self.work = {"batches": 0, "members": 0, "grid_evaluations": 0,
                     "member_evaluations": 0, "flops": 0.0}
        n_params = len(self.parameters)
        rows, columns = starts.grid_shape(self.kernel.has_period)
        batch = tf.TensorSpec([None, None], DTYPE)  # [C, N] data or [C, P] bounds
        # autograph=False: the Python control flow here is static (loops over
        # grid rows, parameters); tracing without conversion is seconds faster.
        self._fit_members = tf.function(self._fit_members_graph, autograph=False, input_signature=[
            batch, batch, batch,                                      # t, y, mask [C, N]
            batch, batch,                                             # lower, upper [C, P]
            tf.TensorSpec([None, rows, n_params - 1], DTYPE),         # kernel grid rows
            tf.TensorSpec([None, columns], DTYPE),                    # noise grid columns
            tf.TensorSpec([None], tf.int32),                          # restart rank [C]
        ])

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
        """Total traces of the compiled fit so far."""
        return self._fit_members.experimental_get_tracing_count()

    # ---- compiled part -------------------------------------------------

    def _fit_members_graph(self, t, y, mask, lower, upper, kernel_grid, noise_grid, rank):
        """Grid search, then Newton, for C members; t, y, mask [C, N].

        Member c starts from the rank[c]-th best grid point of its series:
        restarts of one series start from its best grid points, and a start
        that reaches the basin of a better one stops there.
        """
        feature = self.kernel.feature(distances(t, t))  # [C, N, N], fixed for the batch
        start, _ = self._grid_start(feature, y, mask, kernel_grid, noise_grid, rank)
        for i, tv in enumerate(self.parameters):
            tv.trainable_variables[0].assign(start[:, i])
        position = tf.stack([tv.trainable_variables[0] for tv in self.parameters], axis=-1)

        def evaluate(x, members):
            everyone = tf.equal(tf.shape(members)[0], tf.shape(t)[0])
            take = lambda v: tf.cond(everyone, lambda: v, lambda: tf.gather(v, members))
            return self._newton_terms(x, take(feature), take(y), take(mask))

        series = tf.shape(t)[0] // self.config.restarts
        result = newton.minimize(evaluate, position, lower, upper,
                                 self.config.max_iterations, self.config.tolerance,
                                 groups=tf.range(tf.shape(t)[0]) % series,
                                 merge_within=MERGE_WITHIN)
        for i, tv in enumerate(self.parameters):
            tv.trainable_variables[0].assign(result.position[:, i])
        params = tf.exp(result.position)
        return {
            "nll": result.value, "mean": result.aux["mean"], "scale2": result.aux["scale2"],
            "params": params, "noise_ratio": params[:, -1] + self.jitter,
            "jitter": self.jitter + tf.zeros_like(result.value),
            "status": result.status, "at_bound": result.at_bound,
            "iterations": result.iterations, "evaluations": result.evaluations,
        }

    def _grid_start(self, feature, y, mask, kernel_grid, noise_grid, rank):
        """Scores every grid point, value only; returns the start [C, P] and
        the values [C, G1, G2] (NaN where the covariance is not PD).

        Members are (restart r, series b) at r * B + b and restarts share
        their series' data and grid, so the grid is scored for the first B
        members only.
        """
        rows, columns = kernel_grid.shape[1], noise_grid.shape[1]
        series = tf.shape(feature)[0] // self.config.restarts
        values = []
        for i in range(rows):
            shape = tf.exp(kernel_grid[:series, i])
            kmat = self.kernel.matrix(feature[:series], tf.unstack(shape, axis=-1))
            values.append(tf.stack([
                likelihood.profiled_nll(kmat, tf.exp(noise_grid[:series, j]) + self.jitter,
                                        y[:series], mask[:series])[0]
                for j in range(columns)], axis=-1))
        values = tf.tile(tf.stack(values, axis=1), [self.config.restarts, 1, 1])  # [C, G1, G2]
        scored = tf.where(tf.math.is_finite(values), values, tf.constant(np.inf, DTYPE))
        # Member c starts from its series' rank[c]-th best grid point.
        order = tf.argsort(tf.reshape(scored, [-1, rows * columns]), axis=-1)  # [C, G1 * G2]
        best = tf.gather(order, rank % (rows * columns), batch_dims=1)          # [C]
        row, column = best // columns, best % columns
        start = tf.concat([tf.gather(kernel_grid, row, batch_dims=1),
                           tf.gather(noise_grid, column, batch_dims=1)[:, None]], axis=-1)
        return start, values

    def _newton_terms(self, x, feature, y, mask):
        """Profiled nll, gradient and Hessian at log parameters x [M, P]."""
        shape = tf.unstack(tf.exp(x[:, :-1]), axis=-1)
        kmat, first, second = self.kernel.matrix_and_derivatives(feature, shape)
        nll, gradient, hessian, mean, scale2 = likelihood.profiled_nll_newton(
            kmat, first, second, tf.exp(x[:, -1]) + self.jitter, x[:, -1], y, mask)
        return nll, gradient, hessian, {"mean": mean, "scale2": scale2}

    # ---- Python side ---------------------------------------------------

    def fit(self, series: Sequence[Series]) -> list[FitResult]:
        """Fits every series; returns one FitResult per series, in order.

        Never raises for a bad series: it comes back "skipped" or "failed"
        with the reason.
        """
        config = self.config
        results: list[FitResult | None] = [None] * len(series)
        ready: list[tuple[int, CleanSeries]] = []
        for i, s in enumerate(series):
            try:
                cleaned, n, reason = clean(s, config.min_points, config.max_points)
            except Exception as err:  # never let one series fail the caller
                cleaned, n, reason = None, 0, (f"series could not be read: "
                                                f"{type(err).__name__}: {first_line(err)}")
            if cleaned is None:
                results[i] = FitResult(str(s.series_id), SKIPPED, config.kernel, n, error=reason)
            else:
                ready.append((i, cleaned))
        # Similar lengths together: padding is wasted work (cost ~ N^3).
        ready.sort(key=lambda item: item[1].n_points)
        with self._lock:
            for batch in self._batches(ready):
                fitted = self._fit_robustly([s for _, s in batch])
                for (i, _), result in zip(batch, fitted):
                    results[i] = result
        return results

    def _batches(self, ready):
        start = 0
        while start < len(ready):
            n_max = padded_length(ready[min(start + self.config.batch_size, len(ready)) - 1][1].n_points)
            room = MAX_BATCH_ELEMENTS // (self.config.restarts * n_max * n_max)
            size = max(1, min(self.config.batch_size, room))
            yield ready[start:start + size]
            start += size

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
            error = err
        finally:
            self.jitter.assign(JITTERS[0])
        if error is not None and len(pending) > 1:
            for i in pending:
                results[i] = self._fit_robustly([batch[i]])[0]
        elif error is not None:
            series = batch[pending[0]]
            results[pending[0]] = FitResult(
                str(series.series_id), FAILED, self.config.kernel, series.n_points,
                error=f"fit failed with jitter up to {JITTERS[-1]:g}: {last_line(error)}")
        return [results[i] for i in range(len(batch))]

    def _fit_batch(self, batch: list[CleanSeries]) -> list[FitResult]:
        data = _StandardisedBatch(batch, self.config.restarts)
        has_period = self.kernel.has_period
        grids = [starts.search_grid(has_period, t, y) for t, y in zip(data.t_std, data.y_standard)]
        limits = [starts.bounds(has_period, t) for t in data.t_std]
        tile = lambda arrays: np.tile(np.stack(arrays), (self.config.restarts,) + (1,) * arrays[0].ndim)
        rank = np.repeat(np.arange(self.config.restarts, dtype=np.int32), len(batch))
        out = {k: v.numpy() for k, v in self._fit_members(
            data.t, data.y, data.mask,
            tile([lo for lo, _ in limits]), tile([hi for _, hi in limits]),
            tile([rows for rows, _ in grids]), tile([columns for _, columns in grids]),
            rank).items()}
        members, n_pad = data.t.shape
        grid_points = int(np.prod(starts.grid_shape(has_period)))
        self._count_work(members, len(batch) * grid_points, int(out.pop("evaluations")), n_pad)
        return [data.result(b, out, self.kernel) for b in range(len(batch))]

    def _count_work(self, members: int, grid_values: int, evaluations: int, n: int) -> None:
        self.work["batches"] += 1
        self.work["members"] += members
        self.work["grid_evaluations"] += grid_values
        self.work["member_evaluations"] += evaluations
        self.work["flops"] += (grid_values * flops_per_value(n)
                               + evaluations * flops_per_newton_evaluation(n, len(self.parameters)))


class _StandardisedBatch:
    """A batch standardised (t to [0, 1], y to zero mean and unit variance),
    padded to [R * B, N] with masks, and the way back to the caller's units."""

    def __init__(self, batch: list[CleanSeries], restarts: int):
        self.batch = batch
        self.restarts = restarts
        n_pad = padded_length(max(s.n_points for s in batch))
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
        self.t, self.y, self.mask = (np.tile(a, (restarts, 1)) for a in (t, y, mask))

    def result(self, b: int, out: dict, kernel) -> FitResult:
        """FitResult of series b, from its best restart, in the caller's units."""
        series = self.batch[b]
        members = b + len(self.batch) * np.arange(self.restarts)
        nll = out["nll"][members]
        if not np.isfinite(nll).any():
            return FitResult(str(series.series_id), FAILED, kernel.name, series.n_points,
                             error="likelihood is not finite at any start (covariance "
                                   "not positive definite even with jitter "
                                   f"{out['jitter'][b]:g}); check the series for "
                                   "extreme or degenerate values")
        m = members[np.nanargmin(np.where(np.isfinite(nll), nll, np.nan))]
        sd, span = self.y_scale[b], self.span[b]
        scale2 = out["scale2"][m]
        shape = dict(zip(kernel.parameters, out["params"][m]))
        for name in kernel.time_parameters:
            shape[name] *= span
        fitted = dict(
            mean=self.y_mean[b] + sd * out["mean"][m],
            amplitude=sd * np.sqrt(scale2),
            length_scale=shape["length_scale"],
            period=shape.get("period"),
            noise_variance=sd * sd * scale2 * out["noise_ratio"][m],
            # Standardising y by sd divides the density by sd^n.
            nll=out["nll"][m] + series.n_points * np.log(sd),
        )
        if not all(np.isfinite(v) for v in fitted.values() if v is not None):
            return FitResult(str(series.series_id), FAILED, kernel.name, series.n_points,
                             error=f"fit gave non-finite parameters {fitted}; check the "
                                   "series for extreme values")
        status = int(out["status"][m])
        fitted["components"] = [{"kernel": kernel.name, "amplitude": fitted["amplitude"],
                                 "length_scale": fitted["length_scale"],
                                 "period": fitted["period"]}]
        # Free parameters: mean, amplitude, shape parameters, noise variance.
        count = 3 + len(kernel.parameters)
        fitted["bic"] = 2.0 * fitted["nll"] + count * np.log(series.n_points)
        return FitResult(str(series.series_id), OK, kernel.name, series.n_points,
                         converged=status == newton.CONVERGED,
                         stop_reason=newton.STOP_REASONS[status],
                         at_bound=bool(out["at_bound"][m]),
                         iterations=int(out["iterations"][m]), **fitted)


def last_line(error: BaseException) -> str:
    """The last line of the message (TensorFlow puts the op's error there)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
