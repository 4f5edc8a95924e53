"""The in-graph search of one GPFitter: grid, basins, probes, pieces.

`Search.fit_members` is the body of the fitter's one `tf.function`: it
scores a grid of starting points per series (value only, on consecutive
pieces of a long series), assigns the best to the fitter's variables, runs
damped Newton from there (gpcore/newton.py), probes around each optimum
and runs Newton again where a probe is lower, and assigns the optimum back
(docs/design.md, "The fitter"). The search owns no variables: the fitter
creates them once and hands them over, with its jitter. Where bounds,
grids and probes come from is gpcore/starts.py; the batch driver (the
Python side: batching, jitter escalation, results) is gpcore/fitter.py,
which this module never imports.
"""
from __future__ import annotations

import copy
import functools

import numpy as np
import tensorflow as tf

from gpcore import likelihood, newton, residual_check, starts
from gpcore.config import FitConfig
from gpcore.kernels import Kernel, components, distances

DTYPE = tf.float64

# Restarts of one series within this distance (log units) of a lower one
# have reached its basin: they stop rather than finish it again.
MERGE_WITHIN = 0.1

# A member's rank where it starts from given parameters rather than its
# grid: another fit's (GIVEN_RANK: GPFitter.fit's starts_from) or this
# series' previous fit (WARM_RANK: Series.warm_start), which runs apart
# from the cold members (docs/design.md, "Warm starts").
GIVEN_RANK = -1
WARM_RANK = -2

# The midpoint of a series' observed span, in standardised times.
CENTRE = 0.5


class Search:
    """The compiled search of one fitter, traced once as its tf.function.

    Args:
      kernel: the kernel fitted. config: the fitter's FitConfig (Newton's
        steps and tolerance, the sums' jumps).
      parameters: the fitter's log-parameter variables [C] each, the
        kernel's shape parameters in `kernel.parameters` order, then the
        noise ratio; assigned in place, never created here.
      jitter: the fitter's diagonal jitter variable (units of the kernel
        variance), added to the noise ratio everywhere.
    The traced search (fit_members) takes the variables as its argument
    instead, so that a fitter's twins share its trace (gpcore/traced.py);
    these are what the other methods use when called on their own.
    """

    # True: the Hessian's products in float64 for every kernel (a reference
    # for `hessian_dtype`'s float32).
    exact_hessian = False

    def __init__(self, kernel: Kernel, config: FitConfig, parameters, jitter):
        self.kernel = kernel
        self.config = config
        self.parameters = list(parameters)
        self.jitter = jitter

    def fit_members(self, variables, t, y, mask, lower, upper, kernel_grid, noise_grid, group,
                    rank, warm):
        """Grid search, then Newton, for C members of B series; t, y, mask
        [B, N], one row per series.

        variables: the calling fitter's log-parameter variables and its
        jitter variable, last: assigned and read here in place of the
        constructor's (a shallow copy of this search holds them), so one
        trace serves every fitter built alike.

        Members 0..B-1 are the B series' first starts (rank 0); member c
        fits series group[c] from the rank[c]-th best point of its grid, or
        from warm[c] where rank[c] is negative (GIVEN_RANK: another fit's
        parameters; WARM_RANK: a previous fit's).
        Restarts of one series that reach the basin of a better start stop
        there.
        """
        search = copy.copy(self)
        *search.parameters, search.jitter = variables
        return search.members(t, y, mask, lower, upper, kernel_grid, noise_grid, group, rank, warm)

    def members(self, t, y, mask, lower, upper, kernel_grid, noise_grid, group, rank, warm):
        """fit_members with this search's own variables."""
        series = tf.shape(t)[0]
        feature = _feature(self.kernel, t)  # [B, N, N] each, fixed for the batch
        pieces = Pieces(self.kernel, t, y, mask)
        grid_start, basins, _ = self.grid_start(feature, pieces, y, mask, kernel_grid, noise_grid,
                                                group, rank)
        start = tf.where((rank < 0)[:, None], warm, grid_start)
        for i, variable in enumerate(self.parameters):
            variable.assign(start[:, i])
        position = tf.stack(self.parameters, axis=-1)

        def evaluate(x, members):
            rows = tf.gather(group, members)  # each member's series
            same = tf.equal(tf.size(rows), series) & tf.reduce_all(
                tf.equal(rows, tf.range(tf.size(rows))))
            # One cond for all the rows' tensors: fewer graph nodes than one each.
            taken = tf.cond(same, lambda: (feature, y, mask),
                            lambda: tf.nest.map_structure(lambda v: tf.gather(v, rows),
                                                          (feature, y, mask)))
            return self.newton_terms(x, *taken)

        # A restart runs only where its series' grid has that many other basins.
        active = rank <= tf.gather(basins, group)
        probes = None
        if self.kernel.has_length_axis:
            probes = functools.partial(self.probe_restarts, feature, pieces, y, mask, lower,
                                       upper, group)
        runs_with = group  # members that merge, stop behind and are probed together
        if not self.kernel.has_length_axis and self.kernel.has_period:
            # A warm member runs as a series of its own, its data repeated:
            # probed round its own optimum, never merged into or stopped
            # behind by the cold members, nor they by it, so that these fit
            # as a cold run does and the warm start only adds its optima
            # (docs/design.md, "Warm starts").
            runs_with, probed = _warm_apart(group, rank, series)
            data = tf.cond(tf.size(probed) > series,
                           lambda: tf.nest.map_structure(lambda v: tf.gather(v, probed),
                                                         (feature, y, mask)),
                           lambda: (feature, y, mask))
            probes = functools.partial(self.period_restarts, *data, lower, upper, runs_with)
        result = newton.minimize(evaluate, position, lower, upper,
                                 self.config.max_iterations, self.config.tolerance,
                                 groups=runs_with, merge_within=MERGE_WITHIN, active=active,
                                 restart=probes, eigen_floor=_eigen_floor(self.kernel),
                                 restart_rounds=starts.PERIOD_PROBE_ROUNDS
                                 if self.kernel.has_period else starts.PROBE_ROUNDS,
                                 behind=starts.behind_rules(self.config.stop_behind),
                                 slow=starts.slow_rule(self.kernel, self.config.stop_behind))
        for i, variable in enumerate(self.parameters):
            variable.assign(result.position[:, i])
        params = tf.exp(result.position)
        return {
            "nll": result.value, "mean": result.aux["mean"], "scale2": result.aux["scale2"],
            "params": params, "noise_ratio": params[:, -1] + self.jitter,
            "jitter": self.jitter + tf.zeros_like(result.value),
            "status": result.status, "at_bound": result.at_bound,
            "iterations": result.iterations, "evaluations": result.evaluations,
        }

    def grid_start(self, feature, pieces, y, mask, kernel_grid, noise_grid, group, rank):
        """Scores every series' grid, value only; returns each member's start
        [C, P], the number of other basins [B] each series' grid shows and
        the grid values [B, G1, G2].

        Rank 0 starts from the best grid point. For kernels whose grid rows
        are one ordered length scale, rank r > 0 starts from the r-th best
        other basin: a local minimum of the grid not next to the best point
        (docs/design.md, "Restarts from other basins"); for the others,
        from the r-th best grid point, and every series has all of them.
        Series longer than starts.grid_piece_points(kernel) are scored on
        consecutive pieces taken as independent (a fraction of a full
        Cholesky), then their starts.GRID_RESCORED best points on the whole
        series where those are within starts.RESCORE_WITHIN nats, which
        orders them (docs/design.md, "The fitter"). A grid point whose
        covariance is not PD (NaN) ranks last.

        Args:
          feature: the kernel's feature of t [B, N, N]; pieces: Pieces of
          the batch; y, mask: [B, N].
          group, rank: [C] each member's series and restart rank.
        """
        series = tf.shape(kernel_grid)[0]
        values = self.grid_values(pieces, kernel_grid, noise_grid)             # [B, G1, G2]
        points = _grid_points(kernel_grid, noise_grid)                          # [B, G1 * G2, P]
        columns = noise_grid.shape[1]
        scored = tf.reshape(values, [series, -1])                              # [B, G1 * G2]
        order = _ranked(scored)
        head = min(starts.GRID_RESCORED, kernel_grid.shape[1] * columns)

        def rescored():  # the best `head` points, ordered by their whole-series value
            ranked = tf.gather(scored, order[:, :head], batch_dims=1)
            close = ranked[:, -1] - ranked[:, 0] < starts.RESCORE_WITHIN
            # A series within one piece keeps its piece values (the same
            # numbers but for round-off, which must not reorder near-ties).
            exact = self.whole_values_where(
                close & ~pieces.within_one(mask), feature,
                tf.gather(points, order[:, :head], batch_dims=1), head, y, mask, ranked)
            return tf.concat([tf.gather(order[:, :head], _ranked(exact), batch_dims=1),
                              order[:, head:]], axis=-1)

        order = tf.cond(pieces.count > 1, rescored, lambda: order)
        if self.kernel.has_length_axis:
            order, others = other_basins(values, order[:, 0])
        else:
            others = tf.fill([series], tf.shape(order)[1] - 1)
        best = tf.gather(tf.gather(order, group), tf.maximum(rank, 0) % tf.shape(order)[1],
                         batch_dims=1)
        return tf.gather(tf.gather(points, group), best, batch_dims=1), others, values

    def probe_restarts(self, feature, pieces, y, mask, lower, upper, group, position, value,
                        round_index):
        """Newton's restart hook: probes around each series' optimum
        (a small grid of starts.PROBE_LENGTHS x starts.PROBE_NOISES times
        it; docs/design.md, "Probes around the optimum");
        where one is lower than the optimum, the series' best member runs
        again from it. Where config.far_probes, the far and ridge probes
        too (with config.probe_check only where the fit fails the residual
        check: `misfit`). Returns (again [C] bool, start [C, P]).

        Args:
          feature, pieces, y, mask: as `grid_start`'s. lower, upper: [C, P]
          bounds; group: [C] each member's series. position, value: [C, P]
          and [C], where the members stopped. round_index: newton's restart
          round (the ridge runs go in round 0 only).
        """
        series = tf.shape(y)[0]
        n_members = tf.shape(group)[0]
        lowest, best = _series_best(value, group, series)                          # [B] each
        optimum, lo, hi = (tf.reshape(tf.gather(v, best), [-1, len(self.parameters)])
                           for v in (position, lower, upper))                   # [B, P]
        near = starts.probe_count(self.kernel)  # 0: a lever measured off
        far_probes = starts.far_probe_count(self.kernel, self.config.far_probes) > 0
        if not (near or far_probes):
            return tf.zeros([n_members], tf.bool), tf.gather(optimum, group)  # nothing to probe
        points, values = [], []  # [B, K, P] and [B, K] per kind of probe
        if near:
            rows = tf.clip_by_value(
                optimum[:, None, :-1] + np.log(starts.PROBE_LENGTHS)[None, :, None],
                lo[:, None, :-1], hi[:, None, :-1])                              # [B, G1, 1]
            columns = tf.clip_by_value(optimum[:, -1:] + np.log(starts.PROBE_NOISES)[None],
                                       lo[:, -1:], hi[:, -1:])                   # [B, G2]
            probes = _grid_points(rows, columns)                                # [B, Q, P]
            scored = tf.reshape(self.grid_values(pieces, rows, columns), [series, -1])  # [B, Q]
            head = min(starts.PROBES_RESCORED, near)
            order = _ranked(scored)[:, :head]
            points.append(tf.gather(probes, order, batch_dims=1))                  # [B, K, P]
            values.append(tf.cond(
                pieces.count > 1,
                lambda: self.whole_values(feature, points[0], head, y, mask),
                lambda: tf.gather(scored, order, batch_dims=1)))
        if far_probes:  # whole-series scores: pieces misrank them
            offsets = starts.far_probes()                                          # [F, 2]
            points.append(tf.clip_by_value(
                tf.concat([optimum[:, None, :-1] + offsets[None, :, :1],
                           optimum[:, None, -1:] + offsets[None, :, 1:]], axis=-1),
                lo[:, None], hi[:, None]))                                         # [B, F, P]
            # With probe_check only where the fit leaves structure in its
            # residuals: on draws of the model they never find a lower point.
            misfit = self.misfit(feature, optimum, y, mask) if self.config.probe_check else None
            values.append(self.whole_values(feature, points[-1], len(offsets), y, mask)
                          if misfit is None else self.whole_values_where(
                              misfit, feature, points[-1], len(offsets), y, mask,
                              tf.fill([series, len(offsets)], tf.constant(np.inf, y.dtype))))
        chosen = tf.concat(points, axis=1)
        chosen_values = _finite_or_inf(tf.concat(values, axis=-1))
        if far_probes and starts.RIDGE_PROBE_LENGTHS:  # only where the ridge is flat
            offsets = starts.ridge_probes()                                        # [R, 2]
            flat = tf.reduce_min(chosen_values, axis=-1) < lowest + starts.RIDGE_WITHIN  # [B]
            if misfit is not None:
                flat &= misfit
            ridge = tf.clip_by_value(optimum[:, None] + offsets[None], lo[:, None], hi[:, None])
            chosen = tf.concat([chosen, ridge], axis=1)
            chosen_values = tf.concat([chosen_values, _finite_or_inf(self.whole_values_where(
                flat, feature, ridge, len(offsets), y, mask,
                tf.fill([series, len(offsets)], tf.constant(np.inf, y.dtype))))], axis=-1)
        found = tf.reduce_min(chosen_values, axis=-1) < lowest - self.config.tolerance  # [B]
        start = tf.gather(chosen, tf.argmin(chosen_values, axis=-1, output_type=tf.int32),
                          batch_dims=1)                                            # [B, P]
        again = tf.tensor_scatter_nd_update(tf.zeros([n_members], tf.bool), best[:, None], found)
        if not (far_probes and starts.RIDGE_PROBE_LENGTHS and starts.RIDGE_RUNS):
            return again, tf.gather(start, group)
        # Ridge runs: where the ridge is flat, a probe's value does not show
        # the valley beside it, so two of the series' other members run on
        # from its best probe at a shorter and at a longer length scale,
        # whatever their value (docs/design.md, "Probes around the optimum").
        other, _, slot = _other_members(best, group)
        shift = chosen[..., 0] - optimum[:, None, 0]                              # [B, K]
        inf = tf.constant(np.inf, y.dtype)
        # A side without probes (the length scale at a bound) scores +inf.
        side_values = tf.stack([tf.where(shift < 0.0, chosen_values, inf),
                                tf.where(shift > 0.0, chosen_values, inf)], axis=1)  # [B, 2, K]
        sides = tf.argmin(side_values, axis=-1, output_type=tf.int32)             # [B, 2]
        side = tf.minimum(slot, 1)
        column = tf.gather(tf.gather(sides, group), side, batch_dims=1)          # [C]
        run_value = tf.gather(tf.gather(tf.reduce_min(side_values, axis=-1), group), side,
                              batch_dims=1)                                       # [C]
        forced = (other & tf.gather(flat, group) & tf.equal(round_index, 0)
                  & (slot < 2 * starts.RIDGE_RUNS)
                  & (run_value < tf.gather(lowest, group) + starts.RIDGE_RUN_WITHIN))
        run_start = tf.gather(tf.gather(chosen, group), column, batch_dims=1)    # [C, P]
        return again | forced, tf.where(forced[:, None], run_start, tf.gather(start, group))

    def period_restarts(self, feature, y, mask, lower, upper, group, position, value,
                         round_index):
        """Newton's restart hook for kernels with a period: each series'
        optimum with a periodic component's period x 2, 3, ...
        (starts.period_probes) and, for sums, other shape parameters and the
        noise ratio moved (starts.shape_probes) and, where
        config.far_probes, a smooth component set to a short length scale
        (starts.short_probes), scored on the whole series;
        where one is lower than the optimum, the series' best member runs
        again from it. In the first starts.JUMP_ROUNDS rounds (where
        config.jumps) the series' other members run too, from its
        best-scored longer periods (starts.jump_probes, the next ones each
        round),
        lower than the optimum or not: a probe at a multiple keeps the
        other parameters of a fraction's basin, and Newton from it found
        optima tens of nats lower that the probe's own value did not show
        (docs/design.md, "Sums of kernels"). Returns (again [C] bool, start
        [C, P]); arguments as `probe_restarts`', but that a warm member
        (`members`) is a series of its own here."""
        series = tf.shape(y)[0]
        n_members = tf.shape(group)[0]
        lowest, best = _series_best(value, group, series)                          # [B] each
        optimum, lo, hi = (tf.reshape(tf.gather(v, best), [-1, len(self.parameters)])
                           for v in (position, lower, upper))                   # [B, P]
        far = self.config.far_probes  # short, alias and echo probes, a clipped jump
        period = starts.period_probes(self.kernel)
        offsets = np.concatenate([np.pad(period, [[0, 0], [0, 1]]),
                                  starts.shape_probes(self.kernel, far)])            # [Q, P]
        points = optimum[:, None] + tf.constant(offsets, DTYPE)[None]            # [B, Q, P]
        short = [self.short_probe(optimum, lo, *probe)
                 for probe in starts.short_probes(self.kernel, far)]
        if far:
            short += [self.alias_probe(optimum, lo, *probe)
                      for probe in starts.alias_probes(self.kernel)]
        if short:
            points = tf.concat([points, tf.stack(short, axis=1)], axis=1)
        unclipped = points
        points = tf.clip_by_value(points, lo[:, None], hi[:, None])
        # Two probes at a time, as the grid: 30 whole-series matrices at
        # once would not fit beside a long series' batch.
        rows = likelihood.observed(y, mask)  # shared by the probes
        score = functools.partial(self.point_values, feature, mask, rows)  # [B, P] -> [B]
        scored = _finite_or_inf(tf.transpose(tf.map_fn(
            score, tf.transpose(points, [1, 0, 2]), fn_output_signature=DTYPE,
            parallel_iterations=2)))                                              # [B, Q]
        for c in starts.echo_components(self.kernel) if far else ():  # only series at an alias
            need, echo = self.echo_probes(optimum, lo, c)                       # [B], [B, E, P]
            echo = tf.clip_by_value(echo, lo[:, None], hi[:, None])
            count = len(starts.ECHO_PROBES)
            points = tf.concat([points, echo], axis=1)
            unclipped = tf.concat([unclipped, echo], axis=1)
            scored = tf.concat([scored, _finite_or_inf(self.whole_values_where(
                need, feature, echo, count, y, mask,
                tf.fill([series, count], tf.constant(np.inf, y.dtype))))], axis=-1)
        pick = tf.argmin(scored, axis=-1, output_type=tf.int32)
        found = tf.gather(scored, pick, batch_dims=1) < lowest - self.config.tolerance  # [B]
        start = tf.gather(points, pick, batch_dims=1)
        again = tf.tensor_scatter_nd_update(tf.zeros([n_members], tf.bool), best[:, None], found)
        start = tf.gather(start, group)                                          # [C, P]
        jumps = starts.jump_probes(self.kernel)
        if not jumps.size or not self.config.jumps:
            return again, start
        # The j-th of a series' k other members (in member order) takes its
        # (round x k + j)-th best jump probe, until all have run.
        other, same, earlier = _other_members(best, group)
        others = tf.reduce_sum(tf.cast(same & other[None, :], tf.int32), axis=-1)  # [C]
        slot = earlier + round_index * others
        jumps, ranked, runs = self.jump_order(jumps, scored, points, unclipped,
                                              starts.CLIPPED_JUMP_RUNS if far else 0)  # [J], [B, J], [B]
        forced = other & (slot < tf.gather(runs, group)) & (round_index < starts.JUMP_ROUNDS)
        column = tf.gather(tf.gather(jumps, tf.gather(ranked, group)),
                           tf.minimum(slot, jumps.size - 1), batch_dims=1)       # [C]
        jump_start = tf.gather(tf.gather(points, group), column, batch_dims=1)  # [C, P]
        return again | forced, tf.where(forced[:, None], jump_start, start)

    def jump_order(self, up, scored, points, unclipped, clipped_runs=0):
        """(columns [J] of the jump probes, up's then starts.down_jump_probes';
        each series' order of them [B, J]; how many of them [B] to run): the
        jumps up whose periods stay within the bounds, best-scored first,
        then those down within the bounds; those clipped to a bound come
        last, and at most `clipped_runs` of them run (starts.JUMP_DOWN_MULTIPLES,
        starts.CLIPPED_JUMP_RUNS).

        Args: up: [U] columns of the jumps up (starts.jump_probes); scored:
        [B, Q] the probes' values; points, unclipped: [B, Q, P] the probes
        after and before clipping to the bounds.
        """
        down = starts.down_jump_probes(self.kernel)
        if not down.size:
            return (up, tf.argsort(tf.gather(scored, up, axis=1), axis=-1, stable=True),
                    tf.fill([tf.shape(scored)[0]], up.size))
        columns = np.concatenate([up, down])
        periods = [i for i, name in enumerate(self.kernel.parameters) if name.startswith("period")]
        moved = tf.gather(tf.gather(tf.abs(unclipped - points), columns, axis=1), periods,
                          axis=2)                                               # [B, J, periods]
        clipped = tf.reduce_any(moved > 0.0, axis=-1)                          # [B, J]
        tier = tf.where(clipped, 2, tf.where(tf.range(columns.size) >= up.size, 1, 0))
        by_value = tf.argsort(tf.gather(scored, columns, axis=1), axis=-1, stable=True)
        order = tf.gather(by_value, tf.argsort(tf.gather(tier, by_value, batch_dims=1), axis=-1,
                                               stable=True), batch_dims=1)
        runs = tf.reduce_sum(tf.cast(~clipped, tf.int32), axis=-1)
        if clipped_runs:  # the best-scored clipped ones, after the others
            runs += tf.minimum(tf.reduce_sum(tf.cast(clipped, tf.int32), axis=-1), clipped_runs)
        return columns, order, runs

    def alias_probe(self, optimum, lo, c, multiple, delta, variance, factor):
        """[B, P] each series' optimum [B, P] (log) with periodic component
        c's period at `multiple` x its lower bound (lo [B, P]: one median
        spacing) x (1 + delta), its length scale starts.ALIAS_PROBE_LENGTH,
        its variance `variance` x the noise variance, and the smooth
        components' length scales x `factor` (starts.alias_probes)."""
        names = self.kernel.parameters
        period, length = names.index(f"period_{c}"), names.index(f"length_scale_{c}")
        columns = tf.unstack(self.with_variance(optimum, c, variance), num=len(self.parameters),
                             axis=-1)
        columns[period] = lo[:, period] + np.log(multiple * (1.0 + delta))
        columns[length] = tf.fill(tf.shape(columns[length]),
                                  tf.constant(np.log(starts.ALIAS_PROBE_LENGTH), DTYPE))
        if factor != 1.0:
            for i in starts.smooth_parts(self.kernel):
                columns[names.index(f"length_scale_{i}")] += np.log(factor)
        return tf.stack(columns, axis=-1)

    def echo_probes(self, optimum, lo, c):
        """([B] bool: periodic component c's period within
        starts.ECHO_NEAR of 1 or 2 x its lower bound (one median spacing),
        longer by delta; [B, E, P] each series' optimum with that period's
        delta moved so that the echo at lag ~ spacing / delta falls at
        starts.ECHO_PROBES x the span, the length scale x the same factor
        (the same short lag kernel))."""
        names = self.kernel.parameters
        period, length = names.index(f"period_{c}"), names.index(f"length_scale_{c}")
        base = lo[:, period]                                                    # log spacing
        ratio = tf.exp(optimum[:, period] - base)
        k = tf.maximum(tf.round(ratio), 1.0)
        delta = ratio / k - 1.0
        need = (k <= 2.0) & (delta > 0.0) & (delta < starts.ECHO_NEAR)
        safe = tf.where(need, delta, tf.ones_like(delta))
        at_optimum = tf.unstack(optimum, num=len(self.parameters), axis=-1)
        rows = []
        for fraction in starts.ECHO_PROBES:
            moved = tf.exp(base) / fraction                                     # span 1
            columns = list(at_optimum)
            columns[period] = base + tf.math.log(k * (1.0 + moved))
            columns[length] = columns[length] + tf.math.log(moved / safe)
            rows.append(tf.stack(columns, axis=-1))
        return need, tf.stack(rows, axis=1)

    def with_variance(self, optimum, c, variance):
        """[B, P] the optimum [B, P] (log) with component c's variance at
        `variance` x the noise variance, the other components' variances
        and the noise's unchanged."""
        names = self.kernel.parameters
        at_optimum = tf.unstack(optimum, num=len(self.parameters), axis=-1)
        columns = list(at_optimum)
        log_r = at_optimum[-1]
        if c:  # its ratio to the first component: variance x r
            columns[names.index(f"variance_ratio_{c}")] = np.log(variance) + log_r
        else:  # it is the unit: the other ratios and r are measured anew
            for i, name in enumerate(names):
                if name.startswith("variance_ratio_"):
                    columns[i] = at_optimum[i] - np.log(variance) - log_r
            columns[-1] = tf.fill(tf.shape(log_r), tf.constant(-np.log(variance), DTYPE))
        return tf.stack(columns, axis=-1)

    def short_probe(self, optimum, lo, c, length, variance):
        """[B, P] each series' optimum [B, P] (log) with component c's
        length scale at `length` x its lower bound (lo [B, P]) and its
        variance at `variance` x the noise variance; the other components'
        variances and the noise's unchanged (starts.short_probes)."""
        length_at = self.kernel.parameters.index(f"length_scale_{c}")
        columns = tf.unstack(self.with_variance(optimum, c, variance), num=len(self.parameters),
                             axis=-1)
        columns[length_at] = lo[:, length_at] + np.log(length)
        return tf.stack(columns, axis=-1)

    def grid_values(self, pieces, kernel_grid, noise_grid):
        """[B, G1, G2] profiled nll of every series' grid, scored on its pieces
        taken as independent: kernel rows kernel_grid [B, G1, K] by noise
        columns noise_grid [B, G2] (log parameters). A row's kernel matrix
        serves all its columns."""
        spread = lambda v: tf.gather(v, pieces.owner)  # [B, ...] -> [B * pieces, ...]
        # The noise columns [B * pieces] each, out of the loop: every row
        # scores the same ones (one exp a column, as exp_split says why).
        noises = [spread(tf.exp(column)) + self.jitter
                  for column in tf.unstack(noise_grid, num=noise_grid.shape[1], axis=-1)]

        def score_row(row):  # [B, K] -> [B, G2]; two rows at a time bound memory
            kmat = self.kernel.matrix(pieces.feature, tf.unstack(tf.exp(spread(row)), axis=-1))
            return tf.stack([nll for nll, _, _ in likelihood.profiled_nll_columns(
                kmat, noises, pieces.y, pieces.mask, pieces.count)], axis=-1)

        values = tf.map_fn(score_row, tf.transpose(kernel_grid, [1, 0, 2]),
                           fn_output_signature=DTYPE, parallel_iterations=2)  # [G1, B, G2]
        return tf.transpose(values, [1, 0, 2])

    def misfit(self, feature, point, y, mask):
        """[B] bool: whether the fit at point [B, P] (log parameters) fails
        the residual check on the whole series (gpcore/residual_check.py):
        its one-step prediction errors are not independent N(0, 1)."""
        shape, noise = self.exp_split(point)
        w = likelihood.innovations(self.kernel.matrix(feature, shape), noise + self.jitter,
                                   mask, likelihood.observed(y, mask))
        return residual_check.fails(w, mask)

    def whole_values_where(self, need, feature, points, k, y, mask, otherwise):
        """[B, k]: `whole_values` of the series in need [B], `otherwise`
        [B, k] for the others (gathered: only those series are scored)."""
        rows = tf.cast(tf.squeeze(tf.where(need), -1), tf.int32)
        take = lambda v: tf.gather(v, rows)
        exact = self.whole_values(tf.nest.map_structure(take, feature), take(points), k,
                                  take(y), take(mask))
        return tf.tensor_scatter_nd_update(otherwise, tf.expand_dims(rows, 1), exact)

    def whole_values(self, feature, points, k, y, mask):
        """[B, k] profiled nll of points [B, k, P] (log parameters) on the
        whole series: one Cholesky each, unrolled: a tf.map_fn over the k
        points traced one copy but made the fits 3.5 % slower
        (docs/design.md, "Build")."""
        rows = likelihood.observed(y, mask)  # shared by the k points
        return tf.stack([self.point_values(feature, mask, rows, point)
                         for point in tf.unstack(points, num=k, axis=1)], axis=-1)

    def point_values(self, feature, mask, rows, point):
        """[B] profiled nll of one point per series, point [B, P] (log
        parameters), on the whole series; rows: likelihood.observed(y, mask)."""
        shape, noise = self.exp_split(point)
        return likelihood.profiled_nll_observed(
            self.kernel.matrix(feature, shape), noise + self.jitter, mask, rows)[0]

    def exp_split(self, x):
        """(shape parameters: a list of [M], noise ratio [M]) from log
        parameters x [M, P]: one split, fewer graph nodes than slices of x
        (docs/design.md, "Build"). Split before the exp: Eigen's vectorised
        exp and its scalar one differ in the last bit, so one exp of all
        of x would move the fits by round-off."""
        shape, noise = tf.split(x, [len(self.parameters) - 1, 1], axis=-1)
        return tf.unstack(tf.exp(shape), num=len(self.parameters) - 1, axis=-1), \
            tf.exp(tf.squeeze(noise, -1))

    def newton_terms(self, x, feature, y, mask):
        """Profiled nll, gradient and Hessian at log parameters x [M, P]."""
        shape, noise = self.exp_split(x)
        kmat, first, second = self.kernel.matrix_and_derivatives(feature, shape)
        nll, gradient, hessian, mean, scale2 = likelihood.profiled_nll_newton(
            kmat, first, second, noise + self.jitter,
            tf.unstack(x, num=len(self.parameters), axis=-1)[-1], y, mask,
            hessian_dtype=None if self.exact_hessian else hessian_dtype(self.kernel))
        return nll, gradient, hessian, {"mean": mean, "scale2": scale2}


def other_basins(values, first):
    """The grid's points [B, G1 * G2] ordered for restarts, and how many of
    them [B] are other basins.

    values: [B, G1, G2] grid values (rows: length scales in order; columns:
    noise ratios in order). first: [B] the flat index of each series'
    first start. Order: `first`, then the other basins: the grid's local
    minima (no lower value among the 8 neighbours) that are not next to
    `first` and within starts.BASIN_WITHIN nats of the grid's best, best
    first; then the rest.
    """
    finite = _finite_or_inf(values)
    columns = tf.shape(values)[2]
    padded = tf.pad(finite, [[0, 0], [1, 1], [1, 1]], constant_values=np.inf)
    lowest_around = -tf.nn.max_pool2d(-padded[..., None], 3, 1, "VALID")[..., 0]
    flat = tf.reshape(finite, [tf.shape(values)[0], -1])                      # [B, G]
    minimum = tf.reshape(finite <= lowest_around, tf.shape(flat)) & tf.math.is_finite(flat)
    point = tf.range(tf.shape(flat)[1])
    apart = lambda a, b: tf.abs(a - b) > 1
    away = (apart(point[None] // columns, first[:, None] // columns)
            | apart(point[None] % columns, first[:, None] % columns))
    close = flat - tf.reduce_min(flat, axis=-1, keepdims=True) <= starts.BASIN_WITHIN
    other = minimum & away & close
    key = tf.where(other, flat, tf.constant(np.inf, flat.dtype))
    key = tf.where(tf.equal(point[None], first[:, None]), tf.constant(-np.inf, flat.dtype), key)
    return (tf.argsort(key, axis=-1, stable=True),
            tf.reduce_sum(tf.cast(other, tf.int32), axis=-1))


def _feature(kernel, t):
    """The kernel's feature of standardised times t [B, N] (0 at a series'
    first point, 1 at its last: its centre, from which a kernel of the
    times measures them, is at CENTRE), from distances computed once."""
    return kernel.feature(distances(t, t), t - CENTRE, t - CENTRE)


def hessian_dtype(kernel):
    """The dtype of Newton's Hessian products: float32 for a single kernel
    without a period, whose fits it leaves within 1e-5 nats of float64's
    at about 10 % less CPU; float64 (None) for sums and periodic kernels,
    whose ridges need the Hessian's precision (docs/design.md, "The
    Hessian's products in float32")."""
    return None if _has_ridge(kernel) else tf.float32


def _has_ridge(kernel) -> bool:
    """Sums and periodic kernels: a component can fade along a ridge."""
    return kernel.has_period or len(components(kernel)) > 1


def _eigen_floor(kernel) -> float:
    """Newton's eigenvalue floor: sums and periodic kernels have ridges
    where a component fades (newton.RIDGE_EIGEN_FLOOR); the others keep
    the floor they were measured with."""
    return newton.RIDGE_EIGEN_FLOOR if _has_ridge(kernel) else newton.EIGEN_FLOOR



def _warm_apart(group, rank, series):
    """(groups [C] int32: each member's series, warm members (WARM_RANK)
    numbered series, series + 1, ... instead; probed [B + W] int32: the
    series each of those groups fits)."""
    warm = tf.cast(tf.where(tf.equal(rank, WARM_RANK))[:, 0], tf.int32)  # [W]
    apart = series + tf.range(tf.size(warm))
    groups = tf.tensor_scatter_nd_update(group, warm[:, None], apart)
    return groups, tf.concat([tf.range(series), tf.gather(group, warm)], axis=0)


def _other_members(best, group):
    """The members other than their series' best, in member order: (other
    [C] bool, same [C, C] bool (members of one series), slot [C] int32: how
    many of the series' other members come before each)."""
    n_members = tf.shape(group)[0]
    other = ~tf.tensor_scatter_nd_update(tf.zeros([n_members], tf.bool), best[:, None],
                                         tf.ones_like(best, tf.bool))
    index = tf.range(n_members)
    same = tf.equal(group[:, None], group[None, :])
    slot = tf.reduce_sum(tf.cast(same & (index[None, :] < index[:, None]) & other[None, :],
                                 tf.int32), axis=-1)
    return other, same, slot

def _series_best(value, group, series):
    """(lowest value [B], its member [B]) of each series' members; value
    [C] (NaN counts as +inf), group [C] each member's series."""
    n_members = tf.shape(group)[0]
    value = _finite_or_inf(value)
    lowest = tf.math.unsorted_segment_min(value, group, series)
    best = tf.minimum(tf.math.unsorted_segment_min(
        tf.where(tf.equal(value, tf.gather(lowest, group)), tf.range(n_members), n_members),
        group, series), n_members - 1)
    return lowest, best



def _grid_points(kernel_grid, noise_grid):
    """[B, G1 * G2, P] the positions of grid rows [B, G1, K] by columns
    [B, G2], row by row."""
    rows, columns = kernel_grid.shape[1], noise_grid.shape[1]
    point = np.arange(rows * columns)  # gathers: fewer graph nodes than tf.repeat and tf.tile
    return tf.concat([tf.gather(kernel_grid, point // columns, axis=1),
                      tf.expand_dims(tf.gather(noise_grid, point % columns, axis=1), -1)], axis=-1)


def _finite_or_inf(values):
    """values with NaN (a covariance not positive definite) as +inf."""
    return tf.where(tf.math.is_finite(values), values, tf.constant(np.inf, values.dtype))


def _ranked(values):
    """[B, G] indices of values [B, G] from lowest to highest, NaN last."""
    return tf.argsort(_finite_or_inf(values), axis=-1)


class Pieces:
    """Rows t, y, mask [B, N] cut into `count` consecutive pieces of
    L = min(starts.grid_piece_points(kernel), N) points (padding masked):
    y, mask [B * count, L] and the kernel's feature of each piece [B * count,
    L, L]. A row's pieces are its points 0..L-1, L..2L-1, ...: they depend
    on its own points only, not on the batch's padded length, so a series
    gets the same grid values whatever its batch companions."""

    def __init__(self, kernel, t, y, mask):
        n = tf.shape(t)[1]
        self.size = tf.minimum(starts.grid_piece_points(kernel), n)
        self.count = (n + self.size - 1) // self.size
        pad = self.count * self.size - n
        extend = lambda v, fill: tf.reshape(tf.concat([v, tf.tile(fill, [1, pad])], axis=1),
                                            [-1, self.size])
        t = extend(t, t[:, -1:])
        self.y = extend(y, tf.zeros_like(y[:, :1]))
        self.mask = extend(mask, tf.zeros_like(mask[:, :1]))
        self.feature = _feature(kernel, t)
        # [B * count] the row of each piece (a gather spreads [B] over them).
        self.owner = tf.range(tf.shape(self.y)[0]) // self.count

    def within_one(self, mask):
        """[B] the series (mask [B, N]) that fit in one piece."""
        return tf.reduce_sum(mask, axis=-1) <= tf.cast(self.size, mask.dtype)
