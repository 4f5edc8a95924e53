"""Batched, box-bounded Newton minimisation with a trust radius, entirely
in the graph.

Why Newton: the fitter's objectives have two or three parameters and their
exact Hessian costs one matrix product per kernel parameter on top of the
gradient's inverse (likelihood.py), so a step that converges quadratically
is cheaper than the ~16 evaluations a quasi-Newton search needed. Where the
Hessian is indefinite its eigenvalues are taken by absolute value (the step
still descends, and leaves saddles); a trust radius on the largest move,
cut by interpolation after a rejected step, keeps a poor model from
throwing a member far away.

Why in-loop compaction: each iteration evaluates only the members still
running (gathered by index), so a member that has converged costs nothing
while slower ones finish; nothing is carried and nothing leaves the graph.

Why a restart hook: a caller that looks around the optima (the fitter's
probes) can send some members off again from new starts inside the same
loop, so that the loop body is traced once; each such member keeps the
lower of its two results.

Convergence is reported only when the tolerance was met: the predicted
decrease to the optimum of the (positive-definite) quadratic model, or the
gradient's max-norm, on the free coordinates. A member that stops for any
other reason says so (`STOP_REASONS`).
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import tensorflow as tf

RUNNING, CONVERGED, MAX_ITERATIONS, STALLED, FAILED, MERGED, UNUSED, BEHIND, SLOW = range(9)
# SLOW (stopped by the `slow` rule) reads "stalled" too; unlike a step too
# small to move, it is idle and free for a restart round, like CONVERGED.
STOP_REASONS = {CONVERGED: "converged", MAX_ITERATIONS: "max_iterations",
                STALLED: "stalled", FAILED: "failed", MERGED: "merged", UNUSED: "unused",
                BEHIND: "behind", SLOW: "stalled"}

ARMIJO = 1e-4       # accept a step that achieves this share of the predicted decrease
MAX_STEP = 2.0      # largest trust radius: move of one coordinate (log units: e^2)
MIN_STEP = 1e-10    # a radius below this: the member has stalled
EIGEN_FLOOR = 1e-6  # smallest |eigenvalue| used in a step, relative to the largest
# The same for objectives with a ridge that flattens exponentially: a sum
# whose component fades (its amplitude -> 0 in log coordinates) has a
# curvature along the fade that falls below 1e-6 of the largest, and the
# floor then cut every step to a sliver: 400 steps still 0.004 nats short.
# With 1e-12 the trust radius alone bounds those steps, and such fits
# converged in under 20 (docs/design.md, "Sums of kernels").
RIDGE_EIGEN_FLOOR = 1e-12
DEFINITE = 1e-10    # smallest eigenvalue, relative, for "positive definite"
# How near a bound a coordinate counts as at it for the reported at_bound:
# Newton's steps leave a coordinate the gradient pushes out of its box
# 1e-15 to 3e-11 inside it by round-off, where _held's exact test, which
# the steps keep, said it was free (docs/design.md, "Sums of kernels", *At
# a bound by round-off*).
AT_BOUND_WITHIN = 1e-9


class NewtonResult(NamedTuple):
    """Per-member results, batch-shaped [C] or [C, P]."""
    position: tf.Tensor
    value: tf.Tensor
    aux: dict           # the objective's extra outputs at `position`
    status: tf.Tensor   # int32: CONVERGED, MAX_ITERATIONS, STALLED, FAILED, MERGED, UNUSED, BEHIND or SLOW
    at_bound: tf.Tensor  # bool: some coordinate is held at a bound (within AT_BOUND_WITHIN)
    iterations: tf.Tensor
    evaluations: tf.Tensor  # scalar: member evaluations (value, gradient, Hessian)


def minimize(evaluate: Callable, initial_position: tf.Tensor, lower: tf.Tensor,
             upper: tf.Tensor, max_iterations: int, tolerance: float,
             groups=None, merge_within: float = 0.0, active=None,
             restart: Callable | None = None, eigen_floor: float = EIGEN_FLOOR,
             restart_rounds: int = 1, hessian_update: Callable | None = None,
             behind: Sequence[tuple[float, int]] = (),
             slow: tuple[int, float] | None = None) -> NewtonResult:
    """Minimises C independent objectives of P parameters within boxes.

    Args:
      evaluate: (position [M, P], members [M] int32) -> (value [M],
        gradient [M, P], hessian [M, P, P], aux dict of [M, ...]): the
        objectives of the listed members at the given positions.
      initial_position, lower, upper: [C, P]; lower < upper.
      max_iterations: Newton steps per member.
      tolerance: converge when the predicted decrease or the gradient's
        max-norm (free coordinates) is at most this.
      groups: optional [C] int32: members that minimise the same objective
        from different starts.
      merge_within: with groups, a running member within this distance
        (max-norm) of a lower member of its group stops (MERGED): starts
        that reached one basin need not all finish it.
      behind: with groups, (nats, steps) rules: a running member that has
        taken at least `steps` steps and whose value is more than `nats`
        above its group's lowest stops (BEHIND): a start that far behind
        after that many steps seldom ends lowest.
      slow: optional (steps, nats): a running member whose value fell by
        less than `nats` over its last `steps` steps (counted from each
        multiple of `steps`) stops (SLOW): a start crawling along a flat
        ridge, whose remaining steps cannot repay their cost; a restart
        round may send it on from a probe.
      active: optional [C] bool: members to run; the others are never
        evaluated and come back UNUSED with value +inf.
      restart: optional (position [C, P], value [C], round_index) -> (again
        [C] bool, start [C, P]), called when no member is running (round 0,
        1, ... up to restart_rounds - 1): the members in `again` that
        converged, merged or never ran (UNUSED) run again from `start`, and each keeps the
        lowest of its results (the hook sees each member's lowest so far).
        Its iterations go on counting: max_iterations bounds all runs
        together.
      eigen_floor: smallest |eigenvalue| of the Hessian used in a step,
        relative to the largest (EIGEN_FLOOR, or RIDGE_EIGEN_FLOOR).
      hessian_update: optional (x, g, h, x_new, g_new, h_new, f=, f_new=) ->
        Hessian [M, P, P] at x_new, called after each evaluation of the
        running members (f, f_new [M] the values at x and x_new): a
        quasi-Newton update for an objective whose `evaluate` returns only
        an approximate Hessian (the O(n) fitter's whole-series stage).
    Returns:
      NewtonResult. Members whose start is not finite are FAILED, unmoved.
    """
    x = tf.clip_by_value(initial_position, lower, upper)
    n_members = tf.shape(x)[0]
    if active is None:
        active = tf.ones([n_members], tf.bool)
    members = tf.cast(tf.squeeze(tf.where(active), -1), tf.int32)
    f, g, h, aux = _scattered(evaluate(tf.gather(x, members), members), members, n_members)
    finite = _finite(f, g, h)
    done = _converged(x, g, h, lower, upper, tolerance)
    status = tf.where(active, tf.where(finite, tf.where(done, CONVERGED, RUNNING), FAILED), UNUSED)
    state = dict(x=x, f=f, g=g, h=h, aux=aux, radius=tf.fill(tf.shape(f), tf.cast(MAX_STEP, f.dtype)),
                 status=status,
                 iterations=tf.zeros([n_members], tf.int32),
                 evaluations=tf.size(members))
    if slow is not None:
        state["mark"] = f  # each member's value at its last multiple of slow's steps
    if restart is not None:
        state.update(pending=tf.constant(restart_rounds), again=tf.zeros([n_members], tf.bool),
                     before=_kept(state))

    def any_running(s):
        return tf.reduce_any(tf.equal(s["status"], RUNNING))

    def running(s):
        return any_running(s) | (s["pending"] > 0) if restart is not None else any_running(s)

    def revive(s):
        """The state with restart's members set running from their new
        starts. Their value +inf, gradient 0 and Hessian I make the next
        step a zero move that evaluates them there (and is accepted)."""
        s = _better_of_two(s)  # a member sent off earlier keeps its lower result
        again, start = restart(s["x"], s["f"], restart_rounds - s["pending"])
        # A merged member reached a lower one's basin: it is idle, free to
        # go; so is one never run (its grid showed no basin for it).
        again &= (tf.equal(s["status"], CONVERGED) | tf.equal(s["status"], MERGED)
                  | tf.equal(s["status"], UNUSED) | tf.equal(s["status"], BEHIND)
                  | tf.equal(s["status"], SLOW))
        put = lambda new, old: _per_member(again, tf.cast(new, old.dtype), old)
        eye = tf.eye(tf.shape(s["h"])[-1], batch_shape=[n_members], dtype=s["h"].dtype)
        out = dict(s, x=put(tf.clip_by_value(start, lower, upper), s["x"]),
                   f=put(float("inf"), s["f"]), g=put(0.0, s["g"]), h=put(eye, s["h"]),
                   radius=put(MAX_STEP, s["radius"]), status=put(RUNNING, s["status"]),
                   pending=tf.where(tf.reduce_any(again), s["pending"] - 1, 0),
                   again=again, before=_kept(s))
        if slow is not None:
            out["mark"] = put(float("inf"), s["mark"])
        return out

    def body(s):
        if restart is None:
            return (step(s),)
        return (tf.cond(any_running(s), lambda: step(s), lambda: revive(s)),)

    def step(s):
        members = tf.cast(tf.squeeze(tf.where(tf.equal(s["status"], RUNNING)), -1), tf.int32)  # [M]
        take = lambda v: tf.gather(v, members)
        x, f, g, h, radius = (take(s[k]) for k in ("x", "f", "g", "h", "radius"))
        lo, hi = take(lower), take(upper)
        x_new, slope, predicted = _newton_step(x, g, h, radius, lo, hi, eigen_floor)
        f_new, g_new, h_new, aux_new = evaluate(x_new, members)
        if hessian_update is not None:
            h_new = hessian_update(x, g, h, x_new, g_new, h_new, f=f, f_new=f_new)
        accepted = (_finite(f_new, g_new, h_new) & (f_new <= f)
                    & (f - f_new >= ARMIJO * predicted))
        ratio = (f - f_new) / tf.maximum(predicted, 1e-300)
        length = tf.reduce_max(tf.abs(x_new - x), axis=-1)
        # Rejected: the minimiser of the parabola through f, the slope and
        # f_new along the step, kept within [0.1, 0.5] of it (0.1 if f_new
        # is not finite). Accepted: widen after a good full step, narrow
        # after a poor one.
        curvature = 2.0 * (f_new - f - slope)
        cut = tf.where(_finite(f_new, g_new, h_new) & (curvature > 0.0),
                       tf.clip_by_value(-slope / tf.maximum(curvature, 1e-300), 0.1, 0.5), 0.1)
        radius = tf.where(
            accepted,
            tf.where((ratio > 0.75) & (length >= 0.99 * radius),
                     tf.minimum(2.0 * radius, MAX_STEP),
                     tf.where(ratio < 0.25, 0.5 * length, radius)),
            cut * length)
        keep = lambda new, old: _per_member(accepted, new, old)
        x, f, g, h = keep(x_new, x), keep(f_new, f), keep(g_new, g), keep(h_new, h)
        aux = {k: keep(aux_new[k], take(s["aux"][k])) for k in aux_new}
        iterations = take(s["iterations"]) + 1
        status = tf.where(
            accepted & _converged(x, g, h, lo, hi, tolerance), CONVERGED,
            tf.where(~accepted & (radius < MIN_STEP), STALLED,
                     tf.where(iterations >= max_iterations, MAX_ITERATIONS, RUNNING)))
        at = tf.expand_dims(members, 1)
        put = lambda old, new: tf.tensor_scatter_nd_update(old, at, new)
        marks = {}
        if slow is not None:
            steps, nats = slow
            mark, check = take(s["mark"]), tf.equal(iterations % steps, 0)
            status = tf.where(check & tf.equal(status, RUNNING) & (mark - f < nats),
                              SLOW, status)
            marks["mark"] = put(s["mark"], tf.where(check, f, mark))
        status = put(s["status"], status)
        x_all, f_all = put(s["x"], x), put(s["f"], f)
        if groups is not None and merge_within > 0:
            status = _merge(status, x_all, f_all, groups, merge_within)
        iterations = put(s["iterations"], iterations)
        if groups is not None and behind:
            status = _behind(status, f_all, iterations, groups, behind)
        return dict(s, x=x_all, f=f_all, g=put(s["g"], g), h=put(s["h"], h),
                    aux={k: put(s["aux"][k], aux[k]) for k in aux},
                    radius=put(s["radius"], radius), status=status,
                    iterations=iterations,
                    evaluations=s["evaluations"] + tf.size(members), **marks)

    if max_iterations > 0:
        state = tf.while_loop(running, body, (state,))[0]
    if restart is not None:
        state = _better_of_two(state)
    status = tf.where(tf.equal(state["status"], RUNNING), MAX_ITERATIONS, state["status"])
    held = _held(state["x"], state["g"], lower + AT_BOUND_WITHIN, upper - AT_BOUND_WITHIN)
    return NewtonResult(position=state["x"], value=state["f"], aux=state["aux"],
                        status=status, at_bound=tf.reduce_any(held, axis=-1),
                        iterations=state["iterations"], evaluations=state["evaluations"])


def _kept(s):
    """What a restarted member falls back on: its result before the restart."""
    return {k: s[k] for k in ("x", "f", "g", "aux", "status")}


def _better_of_two(s):
    """The state with each restarted member's result before the restart
    where the new one is not lower."""
    before = s["before"]
    back = s["again"] & ~(s["f"] < before["f"])
    pick = lambda old, new: _per_member(back, old, new)
    return dict(s, **tf.nest.map_structure(pick, before, {k: s[k] for k in before}))


def _per_member(chosen, a, b):
    """a where chosen [C] bool, else b: [C, ...] tensors of any rank."""
    if len(b.shape) == 1:
        return tf.where(chosen, a, b)
    return tf.where(tf.reshape(chosen, [-1] + [1] * (len(b.shape) - 1)), a, b)


def _scattered(terms, members, n_members):
    """The (value, gradient, Hessian, aux) of members [M], as [C]-shaped
    terms: +inf, 0, the identity and 0 for the members not listed."""
    f, g, h, aux = terms
    at = tf.expand_dims(members, 1)
    spread = lambda v, fill: tf.tensor_scatter_nd_update(
        tf.fill(tf.concat([[n_members], tf.shape(v)[1:]], 0), tf.cast(fill, v.dtype)), at, v)
    eye = tf.eye(tf.shape(h)[-1], batch_shape=[n_members], dtype=h.dtype)
    return (spread(f, float("inf")), spread(g, 0.0), tf.tensor_scatter_nd_update(eye, at, h),
            {k: spread(v, 0.0) for k, v in aux.items()})


def _merge(status, x, f, groups, within):
    """status [C] with running members that joined a lower member's basin stopped."""
    usable = (tf.equal(status, RUNNING) | tf.equal(status, CONVERGED)
              | tf.equal(status, MAX_ITERATIONS) | tf.equal(status, SLOW))
    index = tf.range(tf.shape(f)[0])
    # Row and column forms made once (expand_dims: fewer graph nodes than slices).
    row, column = lambda v: tf.expand_dims(v, 0), lambda v: tf.expand_dims(v, 1)
    f_row, f_column = row(f), column(f)
    lower = (f_row < f_column) | (tf.equal(f_row, f_column) & (row(index) < column(index)))
    near = tf.reduce_max(tf.abs(column(x) - row(x)), axis=-1) <= within  # [C, C]
    joined = tf.reduce_any(tf.equal(column(groups), row(groups)) & near & lower
                           & row(usable), axis=-1)
    # A member with no value yet (restarted, not evaluated) cannot be compared.
    return tf.where(tf.equal(status, RUNNING) & joined & tf.math.is_finite(f), MERGED, status)


def _behind(status, f, iterations, groups, rules):
    """status [C] with running members stopped (BEHIND) where, for one of
    the (nats, steps) rules, they have taken `steps` steps and are more
    than `nats` above their group's lowest value. Values not finite (a
    member restarted, not yet evaluated) neither stop nor set the lowest."""
    finite = tf.math.is_finite(f)
    lowest = tf.math.unsorted_segment_min(
        tf.where(finite, f, tf.constant(float("inf"), f.dtype)), groups,
        tf.reduce_max(groups) + 1)
    gap = tf.where(finite, f - tf.gather(lowest, groups), tf.zeros_like(f))
    far = tf.zeros_like(finite)
    for nats, steps in rules:
        far |= (iterations >= steps) & (gap > nats)
    return tf.where(tf.equal(status, RUNNING) & far, BEHIND, status)


def _held(x, g, lower, upper):
    """[M, P] coordinates at a bound whose gradient pushes outward."""
    return ((x <= lower) & (g > 0.0)) | ((x >= upper) & (g < 0.0))


def _projected(x, g, h, lower, upper):
    """Gradient and Hessian on the free coordinates (held ones: 0 and 1).
    Non-finite members get a zero gradient and the identity: eigen
    decompositions raise on NaN, and such members are never stepped."""
    finite = _finite_derivatives(g, h)
    g = tf.where(tf.expand_dims(finite, 1), g, tf.zeros_like(g))
    h = tf.where(tf.reshape(finite, [-1, 1, 1]), h, tf.eye(tf.shape(h)[-1], dtype=h.dtype))
    free = tf.cast(~_held(x, g, lower, upper), g.dtype)
    g = g * free
    h = h * tf.expand_dims(free, 2) * tf.expand_dims(free, 1) + tf.linalg.diag(1.0 - free)
    return g, h


def _newton_step(x, g, h, radius, lower, upper, eigen_floor=EIGEN_FLOOR):
    """Next position [M, P], the slope g's and the model's predicted decrease [M].

    s = -V |Lambda|^-1 V' g on the free coordinates (eigenvalues floored at
    eigen_floor of the largest), scaled to the trust radius, then clipped
    to the box.
    """
    g, h = _projected(x, g, h, lower, upper)
    eig, vec = tf.linalg.eigh(h)  # [M, P], [M, P, P]
    floor = eigen_floor * tf.reduce_max(tf.abs(eig), axis=-1, keepdims=True) + 1e-300
    along = tf.linalg.matvec(vec, g, adjoint_a=True) / tf.maximum(tf.abs(eig), floor)
    s = -tf.linalg.matvec(vec, along)
    s *= tf.expand_dims(tf.minimum(radius / (tf.reduce_max(tf.abs(s), axis=-1) + 1e-300), 1.0), 1)
    x_new = tf.clip_by_value(x + s, lower, upper)
    s = x_new - x
    slope = tf.reduce_sum(g * s, axis=-1)
    predicted = -(slope + 0.5 * tf.reduce_sum(s * tf.linalg.matvec(h, s), axis=-1))
    return x_new, slope, predicted


def _converged(x, g, h, lower, upper, tolerance):
    """[M] the free gradient is below tolerance, or the Hessian is positive
    definite there and the predicted decrease g'H^-1g/2 is below it."""
    g, h = _projected(x, g, h, lower, upper)
    small = tf.reduce_max(tf.abs(g), axis=-1) <= tolerance
    eig = tf.linalg.eigvalsh(h)
    definite = eig[:, 0] > DEFINITE * tf.abs(eig[:, -1])
    safe = tf.where(tf.reshape(definite, [-1, 1, 1]), h, tf.eye(tf.shape(h)[-1], dtype=h.dtype))
    decrease = 0.5 * tf.reduce_sum(
        g * tf.squeeze(tf.linalg.solve(safe, tf.expand_dims(g, -1)), -1), axis=-1)
    return small | (definite & (decrease <= tolerance))


def _finite(f, g, h):
    return tf.math.is_finite(f) & _finite_derivatives(g, h)


def _finite_derivatives(g, h):
    return (tf.reduce_all(tf.math.is_finite(g), axis=-1)
            & tf.reduce_all(tf.math.is_finite(h), axis=[-2, -1]))
