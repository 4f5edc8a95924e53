"""GPFitter: one compiled Gaussian-process fitter, built once, fitting batch
after batch of series.

Its variables (the unconstrained shape parameters of a batch, behind TFP
bijectors) are created once in __init__; each batch `.assign`s data-driven
starting values and runs one `tf.function` that holds the whole BFGS loop (gpcore/bfgs.py).
The compiled function has an input signature with unknown batch size and
length, so it is traced once per fitter, never per series or per batch.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from gpcore import bfgs, likelihood, starts
from gpcore.config import FitConfig
from gpcore.kernels import unit_kernel_matrix
from gpcore.result import FAILED, OK, SKIPPED, FitResult
from gpcore.series import CleanSeries, Series, clean

tfb = tfp.bijectors
DTYPE = tf.float64

# Diagonal jitter added to the noise ratio (units of the kernel variance).
# Tried in order when a Cholesky factorisation fails; the reported noise
# variance includes it, so the reported parameters reproduce the reported nll.
JITTERS = (1e-6, 1e-4, 1e-2)

# Largest batch covariance, in matrix elements (batch members x N x N): about
# 128 MB per float64 copy; autodiff keeps a few copies alive.
MAX_BATCH_ELEMENTS = 1 << 24

# A batch's compiled loop returns once fewer than this fraction of its members
# are still iterating; they continue in a smaller batch (see _optimise_members).
COMPACT_BELOW = 0.5

# Padded lengths are rounded up to a multiple of this, so that similar
# batches share shapes; the compiled function accepts any length.
LENGTH_QUANTUM = 8


class GPFitter(tf.Module):
    """Fits constant mean + kernel + Gaussian noise to many series by maximum
    marginal likelihood, batched, in one compiled TensorFlow function.

    The constant mean and the kernel variance have closed-form maximisers
    (profiled out, see likelihood.py); BFGS searches the log length scale,
    the log noise-to-signal ratio and, for "periodic", the log period.

    Not thread-safe by nature (variables are shared state): `fit` holds a
    lock, so concurrent callers are served one at a time.
    """

    def __init__(self, config: FitConfig | None = None, name: str = "gp_fitter"):
        super().__init__(name=name)
        self.config = config or FitConfig()
        self._lock = threading.Lock()
        # Batch-shaped [C] (C = series x restarts in flight) with unknown
        # size, so that batches of any size re-use the same variables.
        self.length_scale = self._positive("length_scale")
        self.noise_ratio = self._positive("noise_ratio")
        self.period = self._positive("period") if self.config.kernel == "periodic" else None
        self.jitter = tf.Variable(JITTERS[0], dtype=DTYPE, trainable=False, name="jitter")
        # Work done so far, for benchmarks: objective evaluations summed over
        # batch members, and the floating-point operations they needed.
        self.work = {"batches": 0, "member_evaluations": 0, "flops": 0.0}
        spec = tf.TensorSpec([None, None], DTYPE)
        n_params = len(self.shape_parameters)
        self._optimise = tf.function(self._optimise_batch, input_signature=[
            spec, spec, spec,
            tf.TensorSpec([None, n_params, n_params], DTYPE),  # inverse Hessian
            tf.TensorSpec([None], tf.int32),  # iterations done
            tf.TensorSpec([], tf.int32),  # min_active
        ])

    @staticmethod
    def _positive(name: str) -> tfp.util.TransformedVariable:
        # Exp: the optimiser works in log space, natural for scale parameters.
        return tfp.util.TransformedVariable(
            tf.ones([1], DTYPE), tfb.Exp(), shape=tf.TensorShape([None]), name=name)

    @property
    def shape_parameters(self) -> list[tfp.util.TransformedVariable]:
        """The TransformedVariables the optimiser searches, in position order."""
        return [v for v in (self.length_scale, self.noise_ratio, self.period) if v is not None]

    @property
    def tracing_count(self) -> int:
        """Total traces of the compiled optimisation so far."""
        return self._optimise.experimental_get_tracing_count()

    # ---- compiled part -------------------------------------------------

    def _constrained(self, position: tf.Tensor) -> list[tf.Tensor]:
        """[C, P] unconstrained position -> list of P [C] positive parameters."""
        return [tv.bijector.forward(position[:, i])
                for i, tv in enumerate(self.shape_parameters)]

    def _profiled_nll(self, position, t, y, mask):
        params = self._constrained(position)
        period = params[2] if self.period is not None else None
        kmat = unit_kernel_matrix(self.config.kernel, t, params[0], period)
        return likelihood.profiled_negative_log_likelihood(
            kmat, params[1] + self.jitter, y, mask)

    def _optimise_batch(self, t, y, mask, inverse_hessian, iterations, min_active):
        """Runs BFGS from the variables' current values; t, y, mask [C, N].

        Continues from `inverse_hessian` [C, P, P] and `iterations` [C], and
        returns early once fewer than `min_active` members are iterating.

        Gradients are taken with respect to the TransformedVariables'
        unconstrained (trainable) values, never through `.assign`.
        """
        config = self.config

        def value_and_gradients(position):
            return tfp.math.value_and_gradient(
                lambda p: self._profiled_nll(p, t, y, mask)[0], position)

        position = tf.stack([tv.trainable_variables[0] for tv in self.shape_parameters],
                            axis=-1)  # [C, P]
        state = bfgs.minimize(value_and_gradients, position,
                              config.max_iterations, config.tolerance,
                              inverse_hessian, iterations, min_active)
        for i, tv in enumerate(self.shape_parameters):
            tv.trainable_variables[0].assign(state.position[:, i])
        nll, mean, scale2 = self._profiled_nll(state.position, t, y, mask)
        params = self._constrained(state.position)
        return {
            "nll": nll, "mean": mean, "scale2": scale2,
            "length_scale": params[0], "noise_ratio": params[1] + self.jitter,
            "period": params[2] if self.period is not None else tf.zeros_like(nll),
            "jitter": self.jitter + tf.zeros_like(nll),
            "converged": state.converged, "failed": state.failed,
            "iterations": state.iterations, "inverse_hessian": state.inverse_hessian,
            "evaluations": state.evaluations,
        }

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
            cleaned, n, reason = clean(s, config.min_points, config.max_points)
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
            n_max = _padded_length(ready[min(start + self.config.batch_size, len(ready)) - 1][1].n_points)
            room = MAX_BATCH_ELEMENTS // (self.config.restarts * n_max * n_max)
            size = max(1, min(self.config.batch_size, room))
            yield ready[start:start + size]
            start += size

    def _fit_robustly(self, batch: list[CleanSeries]) -> list[FitResult]:
        """Fits a batch, escalating the jitter for series whose likelihood is
        not finite (a failed Cholesky gives NaN on CPU; some devices raise).
        A batch that raises is split, so that one bad series fails alone."""
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
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            series = batch[pending[0]]
            results[pending[0]] = FitResult(
                str(series.series_id), FAILED, self.config.kernel, series.n_points,
                error=f"fit failed with jitter up to {JITTERS[-1]:g}: "
                      f"{lines[-1] if lines else type(error).__name__}")
        return [results[i] for i in range(len(batch))]

    def _fit_batch(self, batch: list[CleanSeries]) -> list[FitResult]:
        data = _StandardisedBatch(batch, self.config.restarts)
        inits = [starts.starting_points(self.config.kernel, t, y, self.config.restarts)
                 for t, y in zip(data.t_std, data.y_standard)]
        for name, tv in (("length_scale", self.length_scale),
                         ("noise_ratio", self.noise_ratio), ("period", self.period)):
            if tv is not None:
                # Member (restart r, series b) sits at r * B + b.
                tv.assign(np.stack([init[name] for init in inits], axis=1).reshape(-1))
        out = self._optimise_members(data)
        return [data.result(b, out, self.config.kernel) for b in range(len(batch))]

    def _optimise_members(self, data: "_StandardisedBatch") -> dict:
        """Runs the compiled optimisation over all members of a batch.

        When fewer than COMPACT_BELOW of the members are still iterating, the compiled
        loop returns and the stragglers continue, with their BFGS state, in a
        batch of their own: every evaluation costs the whole batch, so a few
        slow members must not keep the converged ones busy.
        """
        n_params = len(self.shape_parameters)
        members = np.arange(data.t.shape[0])
        inverse_hessian = np.tile(np.eye(n_params), (members.size, 1, 1))
        iterations = np.zeros(members.size, np.int32)
        out = None
        while members.size:
            min_active = int(members.size * COMPACT_BELOW) if members.size >= 8 else 0
            part = {k: v.numpy() for k, v in self._optimise(
                data.t[members], data.y[members], data.mask[members],
                inverse_hessian[members], iterations[members],
                np.int32(min_active)).items()}
            self._count_work(int(part.pop("evaluations")), members.size, data.t.shape[1])
            if out is None:
                out = {k: np.empty((data.t.shape[0],) + v.shape[1:], v.dtype)
                       for k, v in part.items()}
            for k, v in part.items():
                out[k][members] = v
            inverse_hessian[members] = part["inverse_hessian"]
            iterations[members] = part["iterations"]
            going = ~(part["converged"] | part["failed"]) & (
                part["iterations"] < self.config.max_iterations)
            # The variables hold the stragglers' positions for the next round.
            for tv in self.shape_parameters:
                position = tv.trainable_variables[0]
                position.assign(tf.boolean_mask(position, going))
            members = members[going]
        return out

    def _count_work(self, evaluations: int, members: int, n: int) -> None:
        self.work["batches"] += 1
        self.work["member_evaluations"] += evaluations * members
        self.work["flops"] += evaluations * members * flops_per_evaluation(n)


def flops_per_evaluation(n: int) -> float:
    """Floating-point operations of one value-and-gradient at N points: the
    Cholesky (N^3/3), the inverse from it for the gradient (two triangular
    solves with N right-hand sides, 2 N^3) and the kernel matrix and its
    gradient (~20 N^2)."""
    return n ** 3 / 3.0 + 2.0 * n ** 3 + 20.0 * n ** 2


def _padded_length(n: int) -> int:
    return -(-n // LENGTH_QUANTUM) * LENGTH_QUANTUM


class _StandardisedBatch:
    """A batch standardised (t to [0, 1], y to zero mean and unit variance),
    padded to [R * B, N] with masks, and the way back to the caller's units."""

    def __init__(self, batch: list[CleanSeries], restarts: int):
        self.batch = batch
        self.restarts = restarts
        n_pad = _padded_length(max(s.n_points for s in batch))
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

    def result(self, b: int, out: dict, kernel: str) -> FitResult:
        """FitResult of series b, from its best restart, in the caller's units."""
        series = self.batch[b]
        members = b + len(self.batch) * np.arange(self.restarts)
        nll = out["nll"][members]
        if not np.isfinite(nll).any():
            return FitResult(str(series.series_id), FAILED, kernel, series.n_points,
                             error="likelihood is not finite at any start (covariance "
                                   "not positive definite even with jitter "
                                   f"{out['jitter'][b]:g}); check the series for "
                                   "extreme or degenerate values")
        m = members[np.nanargmin(np.where(np.isfinite(nll), nll, np.nan))]
        sd, span = self.y_scale[b], self.span[b]
        scale2 = out["scale2"][m]
        fitted = dict(
            mean=self.y_mean[b] + sd * out["mean"][m],
            amplitude=sd * np.sqrt(scale2),
            # ExpSinSquared's length scale is unitless (relative to the sine).
            length_scale=out["length_scale"][m] * (1.0 if kernel == "periodic" else span),
            period=out["period"][m] * span if kernel == "periodic" else None,
            noise_variance=sd * sd * scale2 * out["noise_ratio"][m],
            # Standardising y by sd divides the density by sd^n.
            nll=out["nll"][m] + series.n_points * np.log(sd),
        )
        if not all(np.isfinite(v) for v in fitted.values() if v is not None):
            return FitResult(str(series.series_id), FAILED, kernel, series.n_points,
                             error=f"fit gave non-finite parameters {fitted}; check the "
                                   "series for extreme values")
        return FitResult(str(series.series_id), OK, kernel, series.n_points,
                         converged=bool(out["converged"][m]),
                         iterations=int(out["iterations"][m]), **fitted)
