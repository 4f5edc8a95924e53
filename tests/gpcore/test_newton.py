"""The batched Newton optimiser against scipy, on objectives with known minima."""
import numpy as np
import pytest
import scipy.optimize
import tensorflow as tf

from gpcore import newton

# Rosenbrock-like and quadratic members, some with the minimum outside the box.
CENTRES = np.array([[1.0, 1.0], [0.5, -0.3], [2.0, 4.0], [-1.5, 2.5]])


def _objective(x, c):
    """Shifted Rosenbrock (valley through c) plus a quartic and a tilt (so the
    minimum is unique): value, gradient, Hessian."""
    a, b = x[..., 0] - c[..., 0], x[..., 1] - c[..., 1]
    u = b - a * a + c[..., 0] ** 2 - c[..., 0] ** 2  # valley b = a^2
    f = a * a + 10.0 * u * u + 0.1 * a ** 4 + 0.2 * a
    g0 = 2 * a - 40.0 * a * u + 0.4 * a ** 3 + 0.2
    g1 = 20.0 * u
    h00 = 2 - 40.0 * u + 80.0 * a * a + 1.2 * a * a
    h01 = -40.0 * a
    h11 = 20.0 * np.ones_like(a) if isinstance(a, np.ndarray) else 20.0 + 0.0 * a
    return f, (g0, g1), ((h00, h01), (h01, h11))


def _tf_evaluate(centres, calls):
    def evaluate(x, members):
        calls.append(int(tf.shape(members)[0]))
        f, g, h = _objective(x, tf.gather(centres, members))
        return (f, tf.stack(g, -1), tf.stack([tf.stack(r, -1) for r in h], -2),
                {"twice": 2.0 * f})
    return evaluate


def _scipy_minimum(c, x0, lower, upper):
    fun = lambda x: _objective(x, c)[0]
    jac = lambda x: np.array(_objective(x, c)[1])
    res = scipy.optimize.minimize(fun, x0, jac=jac, method="L-BFGS-B",
                                  bounds=list(zip(lower, upper)),
                                  options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
    return res.x, res.fun


@pytest.mark.parametrize("boxed", [False, True])
def test_batched_minima_equal_scipy(boxed):
    x0 = np.array([[-1.2, 1.0], [2.0, 2.0], [0.0, 0.0], [1.0, -1.0]])
    lower = np.full_like(x0, -10.0)
    upper = np.full_like(x0, 10.0)
    if boxed:  # members 1 and 3 have their minimum outside the box
        upper[1, 0], upper[3, 1] = 0.3, 1.0
    calls = []
    result = newton.minimize(_tf_evaluate(tf.constant(CENTRES), calls), tf.constant(x0),
                             tf.constant(lower), tf.constant(upper), 100, 1e-10)
    for c in range(len(x0)):
        x_ref, f_ref = _scipy_minimum(CENTRES[c], x0[c], lower[c], upper[c])
        assert result.status.numpy()[c] == newton.CONVERGED
        # Both converge to 1e-10 in f; positions agree to its square root.
        np.testing.assert_allclose(result.value.numpy()[c], f_ref, atol=1e-8)
        np.testing.assert_allclose(result.position.numpy()[c], x_ref, atol=1e-4)
        np.testing.assert_allclose(result.aux["twice"].numpy()[c], 2 * result.value.numpy()[c])
    assert list(result.at_bound.numpy()) == ([False, True, False, True] if boxed else [False] * 4)
    # Converged members leave the batch: later evaluations are smaller.
    assert calls[0] == 4 and calls[-1] < 4
    assert int(result.evaluations) == sum(calls)


def test_a_member_alone_gives_the_same_result_as_in_a_batch():
    x0 = np.array([[-1.2, 1.0], [2.0, 2.0], [0.0, 0.0], [1.0, -1.0]])
    box = np.full_like(x0, 10.0)
    together = newton.minimize(_tf_evaluate(tf.constant(CENTRES), []), tf.constant(x0),
                               tf.constant(-box), tf.constant(box), 100, 1e-10)
    for c in range(4):
        alone = newton.minimize(_tf_evaluate(tf.constant(CENTRES[c:c + 1]), []),
                                tf.constant(x0[c:c + 1]), tf.constant(-box[:1]),
                                tf.constant(box[:1]), 100, 1e-10)
        np.testing.assert_array_equal(alone.position.numpy()[0], together.position.numpy()[c])
        assert int(alone.iterations[0]) == int(together.iterations[c])


def test_a_coordinate_a_hair_inside_its_bound_pushed_outward_is_at_bound():
    # f = -x0 + x1^2 / 2: the gradient pushes x0 up past its bound at 1.
    # Member 0 sits 1e-12 inside it (where a sum's Newton steps left a
    # variance ratio: docs/design.md, "Sums of kernels", *At a bound by
    # round-off*), member 1 1e-3 inside, member 2 on it, member 3 on the
    # lower bound with the gradient pushing inward.
    def evaluate(x, members):
        m = tf.shape(x)[0]
        g = tf.stack([-tf.ones([m], x.dtype), x[:, 1]], -1)
        h = tf.tile(tf.constant([[[0.0, 0.0], [0.0, 1.0]]], x.dtype), [m, 1, 1])
        return -x[:, 0] + 0.5 * x[:, 1] ** 2, g, h, {}
    x0 = np.array([[1.0 - 1e-12, 0.0], [1.0 - 1e-3, 0.0], [1.0, 0.0], [-1.0, 0.0]])
    box = np.ones_like(x0)
    result = newton.minimize(evaluate, tf.constant(x0), tf.constant(-box), tf.constant(box),
                             0, 1e-10)
    assert list(result.at_bound.numpy()) == [True, False, True, False]


def test_stops_say_why():
    x0 = np.array([[-1.2, 1.0], [np.nan, 0.0]])
    box = np.full_like(x0, 10.0)
    result = newton.minimize(_tf_evaluate(tf.constant(CENTRES[:2]), []), tf.constant(x0),
                             tf.constant(-box), tf.constant(box), 2, 1e-10)
    assert list(result.status.numpy()) == [newton.MAX_ITERATIONS, newton.FAILED]
    assert list(result.iterations.numpy()) == [2, 0]
    assert newton.STOP_REASONS[newton.MAX_ITERATIONS] == "max_iterations"


def test_indefinite_start_still_descends():
    # Here u = 0.5 and the Hessian's h00 is negative: the step must still descend.
    x0 = np.array([[1.0, 1.5]])
    f0 = _objective(x0[0], CENTRES[0])[0]
    box = np.full_like(x0, 10.0)
    result = newton.minimize(_tf_evaluate(tf.constant(CENTRES[:1]), []), tf.constant(x0),
                             tf.constant(-box), tf.constant(box), 100, 1e-10)
    assert np.linalg.eigvalsh(np.array(_objective(x0[0], CENTRES[0])[2]))[0] < 0
    assert result.value.numpy()[0] < f0 and result.status.numpy()[0] == newton.CONVERGED


def test_starts_that_meet_in_one_basin_stop_and_the_lowest_finishes():
    # Members 0-2 minimise objective 0 from three starts, two of them close;
    # member 3 is alone. Merging never changes the best of a group.
    centres = tf.constant(CENTRES[[0, 0, 0, 1]])
    x0 = np.array([[0.9, 0.8], [0.92, 0.82], [-1.2, 1.0], [2.0, 2.0]])
    box = np.full_like(x0, 10.0)
    groups = tf.constant([0, 0, 0, 1])
    merged = newton.minimize(_tf_evaluate(centres, []), tf.constant(x0), tf.constant(-box),
                             tf.constant(box), 100, 1e-10, groups=groups, merge_within=0.1)
    alone = newton.minimize(_tf_evaluate(centres, []), tf.constant(x0), tf.constant(-box),
                            tf.constant(box), 100, 1e-10)
    status = merged.status.numpy()
    assert newton.MERGED in status[:2] and status[3] == newton.CONVERGED
    assert (status == newton.CONVERGED).sum() >= 2
    best = lambda r: r.value.numpy()[:3].min()
    np.testing.assert_allclose(best(merged), best(alone), atol=1e-9)
    assert int(merged.evaluations) < int(alone.evaluations)


def test_inactive_members_are_never_evaluated_and_the_others_run_as_alone():
    x0 = np.array([[-1.2, 1.0], [2.0, 2.0], [0.0, 0.0], [1.0, -1.0]])
    box = np.full_like(x0, 10.0)
    active = tf.constant([True, False, True, False])
    calls, seen = [], []

    def evaluate(x, members):
        seen.extend(members.numpy().tolist())
        return _tf_evaluate(tf.constant(CENTRES), calls)(x, members)

    some = newton.minimize(evaluate, tf.constant(x0), tf.constant(-box), tf.constant(box),
                           100, 1e-10, active=active)
    everyone = newton.minimize(_tf_evaluate(tf.constant(CENTRES), []), tf.constant(x0),
                               tf.constant(-box), tf.constant(box), 100, 1e-10)
    assert set(seen) == {0, 2}
    assert int(some.evaluations) == sum(calls)
    status = some.status.numpy()
    assert status[1] == status[3] == newton.UNUSED
    assert np.isinf(some.value.numpy()[[1, 3]]).all()
    np.testing.assert_array_equal(some.position.numpy()[[1, 3]], x0[[1, 3]])  # unmoved
    for c in (0, 2):
        assert status[c] == newton.CONVERGED
        np.testing.assert_array_equal(some.position.numpy()[c], everyone.position.numpy()[c])


def _double_well(x, members):
    """(x0^2 - 1)^2 + 0.3 x0 + x1^2: minima near x0 = -1 (lower) and +1."""
    a, b = x[:, 0], x[:, 1]
    f = (a * a - 1.0) ** 2 + 0.3 * a + b * b
    g = tf.stack([4.0 * a * (a * a - 1.0) + 0.3, 2.0 * b], -1)
    zero = tf.zeros_like(a)
    h = tf.stack([tf.stack([12.0 * a * a - 4.0, zero], -1), tf.stack([zero, 2.0 + zero], -1)], -2)
    return f, g, h, {"twice": 2.0 * f}


def test_a_start_far_behind_its_groups_best_stops_after_its_steps():
    # Members 0 and 1 minimise one objective, from the lower and the higher
    # well (minima about 0.58 apart); member 2 alone, from the higher well.
    # With behind 0.3 after 2 steps member 1 stops there; member 2, alone
    # in its group, is never behind. The group's best is unchanged.
    x0 = tf.constant([[-0.9, 0.5], [0.9, 0.5], [0.9, 0.5]], tf.float64)
    box = tf.fill([3, 2], tf.constant(5.0, tf.float64))
    groups = tf.constant([0, 0, 1])
    run = lambda **kw: newton.minimize(_double_well, x0, -box, box, 100, 1e-10, groups=groups,
                                       **kw)
    stopped, full = run(behind=[(0.3, 2)]), run()
    assert stopped.status.numpy().tolist() == [newton.CONVERGED, newton.BEHIND, newton.CONVERGED]
    assert newton.STOP_REASONS[newton.BEHIND] == "behind"
    assert stopped.iterations.numpy()[1] == 2 < full.iterations.numpy()[1]
    assert int(stopped.evaluations) < int(full.evaluations)
    np.testing.assert_array_equal(stopped.value.numpy()[[0, 2]], full.value.numpy()[[0, 2]])
    assert stopped.value.numpy()[1] > full.value.numpy()[0] + 0.3
    # Not before its steps: with a rule's steps past the run, no member stops.
    late = run(behind=[(0.3, 100)])
    assert (late.status.numpy() == newton.CONVERGED).all()
    np.testing.assert_array_equal(late.value.numpy(), full.value.numpy())
    # Rules add up: a second, farther gap after fewer steps stops member 1
    # after its first step (it is about 0.6 behind then), a gap it does
    # not reach stops nothing.
    sooner = run(behind=[(0.3, 100), (0.5, 1)])
    assert sooner.status.numpy().tolist() == stopped.status.numpy().tolist()
    assert sooner.iterations.numpy()[1] == 1
    assert sooner.value.numpy()[1] > full.value.numpy()[0] + 0.5
    never = run(behind=[(0.3, 100), (0.6, 1)])
    np.testing.assert_array_equal(never.value.numpy(), full.value.numpy())


def _fading(x, members):
    """Member 0: exp(-x0) + x1^2, whose infimum lies at x0 -> inf (each
    Newton step gains a factor e less); member 1: the double well."""
    a, b = x[:, 0], x[:, 1]
    fade = tf.equal(members, 0)
    well, well_g, well_h, _ = _double_well(x, members)
    zero = tf.zeros_like(a)
    f = tf.where(fade, tf.exp(-a) + b * b, well)
    g = tf.where(fade[:, None], tf.stack([-tf.exp(-a), 2.0 * b], -1), well_g)
    h = tf.where(fade[:, None, None],
                 tf.stack([tf.stack([tf.exp(-a), zero], -1), tf.stack([zero, 2.0 + zero], -1)], -2),
                 well_h)
    return f, g, h, {"twice": 2.0 * f}


def test_a_start_that_slows_to_a_crawl_stops_at_its_next_multiple_of_steps():
    # Member 0 gains about e^-k at step k, until its curvature falls below
    # the eigenvalue floor and it crawls to max_iterations (100 steps for
    # 5e-7). With the rule it stops once a 5-step span gains less than 1e-3
    # (steps 10 to 15: about 4.5e-5), within 1e-3 of the crawl's end;
    # member 1 gains more than that in every span and ends where it would
    # without the rule.
    x0 = tf.constant([[0.0, 0.5], [0.9, 0.5]], tf.float64)
    box = tf.fill([2, 2], tf.constant(40.0, tf.float64))
    run = lambda **kw: newton.minimize(_fading, x0, -box, box, 100, 1e-12, **kw)
    slowed, full = run(slow=(5, 1e-3)), run()
    assert full.status.numpy().tolist() == [newton.MAX_ITERATIONS, newton.CONVERGED]
    assert slowed.status.numpy().tolist() == [newton.SLOW, newton.CONVERGED]
    assert newton.STOP_REASONS[newton.SLOW] == "stalled"
    assert slowed.iterations.numpy()[0] == 15 < full.iterations.numpy()[0]
    assert 0.0 < slowed.value.numpy()[0] - full.value.numpy()[0] < 1e-3
    np.testing.assert_array_equal(slowed.position.numpy()[1], full.position.numpy()[1])
    assert int(slowed.evaluations) < int(full.evaluations)
    # A bar below every span's gain stops nothing.
    np.testing.assert_array_equal(run(slow=(5, 1e-9)).value.numpy(), full.value.numpy())
    # A member stopped so is idle, free for a restart round (a probe that
    # finds a lower point sends it on), where a step too small is not.
    restart = lambda position, value, round_index: (
        tf.constant([True, False]), tf.constant([[30.0, 0.0], [0.9, 0.5]], tf.float64))
    sent = run(slow=(5, 1e-3), restart=restart)
    assert sent.status.numpy().tolist() == [newton.CONVERGED, newton.CONVERGED]
    assert sent.value.numpy()[0] < 1e-12 < slowed.value.numpy()[0]


def test_a_restart_runs_members_again_and_each_keeps_the_lower_of_its_two_results():
    # Member 0 starts in the higher well and is sent to the lower one;
    # member 1 starts in the lower well and is sent to the higher one (it
    # keeps its first result); member 2 is not restarted.
    x0 = tf.constant([[0.9, 0.5], [-0.9, 0.5], [0.8, -0.2]], tf.float64)
    box = tf.fill([3, 2], tf.constant(5.0, tf.float64))
    calls = []

    def restart(position, value, round_index):
        calls.append(value.numpy().copy())
        return tf.constant([True, True, False]), tf.constant([[-0.8, 0.1], [1.2, 0.1], [0.0, 0.0]],
                                                            tf.float64)

    once = newton.minimize(_double_well, x0, -box, box, 100, 1e-10)
    again = newton.minimize(_double_well, x0, -box, box, 100, 1e-10, restart=restart)
    lower_well = newton.minimize(_double_well, tf.constant([[-0.8, 0.1]], tf.float64),
                                 -box[:1], box[:1], 100, 1e-10)
    assert len(calls) == 1  # once, when no member was running
    np.testing.assert_array_equal(calls[0], once.value.numpy())
    np.testing.assert_allclose(again.value.numpy()[0], lower_well.value.numpy()[0], atol=1e-12)
    assert again.value.numpy()[0] < once.value.numpy()[0] - 0.5
    assert again.position.numpy()[0, 0] < 0
    for c in (1, 2):  # the first result, unchanged
        np.testing.assert_array_equal(again.position.numpy()[c], once.position.numpy()[c])
        assert again.value.numpy()[c] == once.value.numpy()[c]
    status = again.status.numpy()
    assert (status == newton.CONVERGED).all()
    iterations = again.iterations.numpy()
    assert iterations[0] > once.iterations.numpy()[0]  # both runs count
    assert iterations[1] > once.iterations.numpy()[1]
    assert iterations[2] == once.iterations.numpy()[2]
    assert int(again.evaluations) > int(once.evaluations)


def test_a_restart_can_run_a_member_that_never_ran():
    # Member 1 is inactive (UNUSED, value +inf); the hook sends it to the
    # lower well, where it converges as a member started there alone does.
    # Member 0 runs once, unchanged by member 1's run.
    x0 = tf.constant([[0.9, 0.5], [0.9, 0.5]], tf.float64)
    box = tf.fill([2, 2], tf.constant(5.0, tf.float64))
    seen = []

    def restart(position, value, round_index):
        seen.append(value.numpy().copy())
        return tf.constant([False, True]), tf.constant([[0.0, 0.0], [-0.8, 0.1]], tf.float64)

    result = newton.minimize(_double_well, x0, -box, box, 100, 1e-10,
                             active=tf.constant([True, False]), restart=restart)
    once = newton.minimize(_double_well, x0[:1], -box[:1], box[:1], 100, 1e-10)
    lower_well = newton.minimize(_double_well, tf.constant([[-0.8, 0.1]], tf.float64),
                                 -box[:1], box[:1], 100, 1e-10)
    assert np.isinf(seen[0][1])  # the hook saw it unused
    assert result.status.numpy().tolist() == [newton.CONVERGED, newton.CONVERGED]
    np.testing.assert_allclose(result.value.numpy()[1], lower_well.value.numpy()[0], atol=1e-12)
    np.testing.assert_array_equal(result.position.numpy()[0], once.position.numpy()[0])


def test_restart_rounds_probe_each_new_optimum_until_none_is_sent_off():
    # Member 0 goes from the higher well to the lower one in round 1; round
    # 2 sends nobody, so a third round never comes. A hook that always sends
    # member 0 off is called restart_rounds times, no more.
    x0 = tf.constant([[0.9, 0.5], [-0.9, 0.5]], tf.float64)
    box = tf.fill([2, 2], tf.constant(5.0, tf.float64))
    calls = []

    def once_then_none(position, value, round_index):
        calls.append(value.numpy().copy())
        first = len(calls) == 1
        return tf.constant([first, False]), tf.constant([[-0.8, 0.1], [0.0, 0.0]], tf.float64)

    result = newton.minimize(_double_well, x0, -box, box, 100, 1e-10, restart=once_then_none,
                             restart_rounds=3)
    assert len(calls) == 2
    assert calls[1][0] < calls[0][0] - 0.5  # round 2 saw round 1's new optimum
    np.testing.assert_allclose(result.value.numpy()[0], calls[1][0], atol=1e-12)

    always = []

    def every_time(position, value, round_index):
        always.append(1)
        return tf.constant([True, True]), tf.constant([[0.9, 0.5], [0.9, 0.5]], tf.float64)

    kept = newton.minimize(_double_well, x0, -box, box, 100, 1e-10, restart=every_time,
                           restart_rounds=3)
    assert len(always) == 3
    # Sent to the higher well each round, member 1 keeps the lower well it
    # found first, not the last round's result (a hook sees each member's
    # lowest so far).
    once = newton.minimize(_double_well, x0, -box, box, 100, 1e-10)
    np.testing.assert_array_equal(kept.value.numpy(), once.value.numpy())


def test_the_hook_learns_its_round_and_a_merged_member_can_be_sent_off():
    # Members 0 and 1 fit one objective from starts next to each other in
    # the higher well: one merges into the other's basin. Round 0 sends the
    # merged one to the lower well, round 1 nobody.
    x0 = tf.constant([[0.9, 0.5], [0.92, 0.5]], tf.float64)
    box = tf.fill([2, 2], tf.constant(5.0, tf.float64))
    groups = tf.constant([0, 0])
    merged = newton.minimize(_double_well, x0, -box, box, 100, 1e-10, groups=groups,
                             merge_within=0.1)
    assert sorted(merged.status.numpy()) == [newton.CONVERGED, newton.MERGED]
    m = int(np.flatnonzero(merged.status.numpy() == newton.MERGED)[0])
    seen = []

    def hook(position, value, round_index):
        seen.append(int(round_index))
        send = np.arange(2) == m if int(round_index) == 0 else np.zeros(2, bool)
        return tf.constant(send), tf.constant([[-0.8, 0.1], [-0.8, 0.1]], tf.float64)

    result = newton.minimize(_double_well, x0, -box, box, 100, 1e-10, groups=groups,
                             merge_within=0.1, restart=hook, restart_rounds=3)
    assert seen == [0, 1]
    assert result.value.numpy()[m] < result.value.numpy()[1 - m] - 0.5
    assert result.position.numpy()[m, 0] < 0


# One-dimensional members for the step rules, as (f, f', f'') in numpy or
# TF: each start below takes the trust-region branches named beside it.
_ONE_D = {
    "huber": (lambda x, np_: np_.sqrt(1.0 + x * x), lambda x, np_: x / np_.sqrt(1.0 + x * x),
              lambda x, np_: (1.0 + x * x) ** -1.5),
    "quartic": (lambda x, np_: x ** 4, lambda x, np_: 4.0 * x ** 3, lambda x, np_: 12.0 * x * x),
    "double_well": (lambda x, np_: x ** 4 - 2.0 * x * x + 0.5 * x,
                    lambda x, np_: 4.0 * x ** 3 - 4.0 * x + 0.5, lambda x, np_: 12.0 * x * x - 4.0),
    "exp": (lambda x, np_: np_.exp(x) - 2.0 * x, lambda x, np_: np_.exp(x) - 2.0,
            lambda x, np_: np_.exp(x)),
    # x^2 with a Hessian that underestimates its curvature 2, as an
    # approximate one can (the O(n) fitter's): steps held by the radius.
    "under_0.1": (lambda x, np_: x * x, lambda x, np_: 2.0 * x, lambda x, np_: 0.1 + 0.0 * x),
    "under_0.6": (lambda x, np_: x * x, lambda x, np_: 2.0 * x, lambda x, np_: 0.6 + 0.0 * x),
}
# (objective, start, lower, upper)
_ONE_D_MEMBERS = [("huber", 3.0, -10.0, 10.0),      # full steps widen; an overshoot is cut
                  ("huber", 1.1, -10.0, 10.0),      # a poor step is taken, the radius halves
                  ("quartic", 1.0, -10.0, 10.0),    # short steps keep the radius
                  ("double_well", 0.1, -10.0, 10.0),  # indefinite Hessian
                  ("exp", -3.0, -10.0, 10.0),       # a fair full step keeps the radius
                  ("huber", 3.0, 0.5, 10.0),        # held at a bound
                  ("huber", 0.99999, -10.0, 10.0),  # rejected though lower: cut at 0.5
                  ("quartic", 12.0, -10.0, 1.5),    # a start outside the box is clipped
                  ("under_0.1", 3.1, -10.0, 10.0),  # a fair full step after a cut keeps it
                  ("under_0.6", 3.1, -10.0, 10.0)]  # cuts narrow by the parabola


def _newton_by_hand(name, x, lower, upper, tolerance, max_iterations):
    """Newton as newton.py's docstrings state it, for one coordinate, in
    plain Python: (positions evaluated, status, branches taken)."""
    f, df, d2f = (lambda x, fn=fn: fn(x, np) for fn in _ONE_D[name])
    x = min(max(x, lower), upper)
    fx, g, h = f(x), df(x), d2f(x)
    radius, evaluated, taken = 2.0, [x], set()

    def free(x, g, h):  # a coordinate held at a bound: gradient 0, Hessian 1
        held = (x <= lower and g > 0) or (x >= upper and g < 0)
        taken.update({"held"} if held else set())
        return (0.0, 1.0) if held else (g, h)

    def converged(x, g, h):
        g, h = free(x, g, h)
        return abs(g) <= tolerance or (h > 0 and 0.5 * g * g / h <= tolerance)

    if converged(x, g, h):
        return evaluated, newton.CONVERGED, taken
    for iteration in range(1, max_iterations + 1):
        gf, hf = free(x, g, h)
        taken.update({"indefinite"} if hf < 0 else set())
        s = -gf / max(abs(hf), 1e-6 * abs(hf) + 1e-300)
        s *= min(radius / (abs(s) + 1e-300), 1.0)
        x_new = min(max(x + s, lower), upper)
        s = x_new - x
        slope = gf * s
        predicted = -(slope + 0.5 * hf * s * s)
        f_new, g_new, h_new = f(x_new), df(x_new), d2f(x_new)
        evaluated.append(x_new)
        accepted = fx - f_new >= 1e-4 * predicted and f_new <= fx
        ratio, length = (fx - f_new) / max(predicted, 1e-300), abs(s)
        if accepted:
            if ratio > 0.75 and length >= 0.99 * radius:
                radius, branch = min(2.0 * radius, 2.0), "widen"
            elif ratio < 0.25:
                radius, branch = 0.5 * length, "poor"
            else:
                branch = "keep"
            x, fx, g, h = x_new, f_new, g_new, h_new
        else:
            curvature = 2.0 * (f_new - fx - slope)
            cut = min(max(-slope / curvature, 0.1), 0.5) if curvature > 0 else 0.1
            radius, branch = cut * length, "cut"
        taken.add(branch)
        if accepted and converged(x, g, h):
            return evaluated, newton.CONVERGED, taken
        if not accepted and radius < 1e-10:
            return evaluated, newton.STALLED, taken
    return evaluated, newton.MAX_ITERATIONS, taken


def test_steps_follow_the_trust_region_rules_by_hand():
    # Every evaluated position of each member against the rules worked by
    # hand in plain Python (Armijo share 1e-4; radius doubled after a full
    # step that earned over 0.75 of its predicted decrease, halved to half
    # the step below 0.25, cut by the parabola within [0.1, 0.5] of a
    # rejected step; eigenvalues by absolute value; held coordinates
    # frozen). Tolerance: the same arithmetic in another order, 1e-12.
    names = [m[0] for m in _ONE_D_MEMBERS]
    kinds = tf.constant([list(_ONE_D).index(n) for n in names])
    seen = {c: [] for c in range(len(names))}

    def evaluate(x, members):
        for c, v in zip(members.numpy(), x.numpy()[:, 0]):
            seen[int(c)].append(float(v))
        kind = tf.gather(kinds, members)
        pick = lambda which: tf.add_n([
            tf.where(tf.equal(kind, i), _ONE_D[n][which](x[:, 0], tf.math), tf.zeros_like(x[:, 0]))
            for i, n in enumerate(_ONE_D)])
        return pick(0), tf.stack([pick(1)], -1), tf.reshape(pick(2), [-1, 1, 1]), {}

    column = lambda i: tf.constant([[m[i]] for m in _ONE_D_MEMBERS], tf.float64)
    result = newton.minimize(evaluate, column(1), column(2), column(3), 50, 1e-10)
    taken = set()
    for c, (name, start, lower, upper) in enumerate(_ONE_D_MEMBERS):
        path, status, branches = _newton_by_hand(name, start, lower, upper, 1e-10, 50)
        taken |= branches
        np.testing.assert_allclose(seen[c], path, rtol=1e-12, atol=1e-12, err_msg=name)
        assert int(result.status[c]) == status
        assert int(result.iterations[c]) == len(path) - 1
    assert taken == {"widen", "poor", "keep", "cut", "indefinite", "held"}


def test_a_start_beside_a_saddle_or_a_maximum_is_not_converged():
    # f = x^2 - y^2 + y^4 has a saddle at 0 and minima at y = +-1/sqrt(2),
    # f = -1/4. Beside the saddle the gradient is small but not below the
    # tolerance, and g'H^-1 g / 2 is negative (H indefinite) or tiny: only
    # a positive-definite Hessian's predicted decrease may stop a member.
    def evaluate(x, members):
        a, b = x[:, 0], x[:, 1]
        f = a * a - b * b + b ** 4
        g = tf.stack([2.0 * a, -2.0 * b + 4.0 * b ** 3], -1)
        zero = tf.zeros_like(a)
        h = tf.stack([tf.stack([2.0 + zero, zero], -1),
                      tf.stack([zero, -2.0 + 12.0 * b * b], -1)], -2)
        return f, g, h, {}

    x0 = np.array([[0.0, 1e-3], [0.0, 1e-6], [0.0, -1e-6]])
    box = np.full_like(x0, 10.0)
    result = newton.minimize(evaluate, tf.constant(x0), tf.constant(-box), tf.constant(box),
                             100, 1e-10)
    assert list(result.status.numpy()) == [newton.CONVERGED] * 3
    assert all(result.iterations.numpy() > 0)
    # Converged to 1e-10 in f: positions to its square root.
    np.testing.assert_allclose(result.value.numpy(), -0.25, atol=1e-10)
    np.testing.assert_allclose(np.abs(result.position.numpy()),
                               [[0.0, 0.5 ** 0.5]] * 3, atol=1e-5)


def test_starts_in_different_basins_farther_apart_than_merge_within_both_finish():
    # The tilted double well x^4 - 2x^2 + x/2 has minima near -1.06 and
    # 0.93 (numpy's roots of its derivative), 2 apart: with merge_within
    # 1.2 two starts, one in each well, never come that close and each
    # ends at its own well's minimum.
    minima = sorted(r.real for r in np.roots([4.0, 0.0, -4.0, 0.5])
                    if abs(r.imag) < 1e-12 and 12.0 * r.real ** 2 - 4.0 > 0)
    f, df, d2f = _ONE_D["double_well"]

    def evaluate(x, members):
        return (f(x[:, 0], tf.math), tf.stack([df(x[:, 0], tf.math)], -1),
                tf.reshape(d2f(x[:, 0], tf.math), [-1, 1, 1]), {})

    x0 = np.array([[-1.0], [0.9]])
    box = np.full_like(x0, 10.0)
    result = newton.minimize(evaluate, tf.constant(x0), tf.constant(-box), tf.constant(box), 100,
                             1e-10, groups=tf.constant([0, 0]), merge_within=1.2)
    assert list(result.status.numpy()) == [newton.CONVERGED] * 2
    # Converged to 1e-10 in f, the curvature ~8 there: positions to 1e-5.
    np.testing.assert_allclose(result.position.numpy()[:, 0], minima, atol=1e-5)
