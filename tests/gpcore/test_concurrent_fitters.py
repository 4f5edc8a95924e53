"""gpcore from several threads at once, as Dask's threaded scheduler, Spark's
and Ray's worker threads or a user's ThreadPoolExecutor call it: one fitter
shared, fitters of their own, kernel auto, copies side by side, and traces
made at the same time (docs/design.md, "Threads sharing a process").

Barriers start the threads' calls together; every join has a timeout, so a
deadlock fails the test instead of hanging the run."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import gp_reference as ref
from gpcore import FitConfig, GPFitter, Series, build_fitter, statespace
from gpcore.traced import Traced
from thread_calls import at_once





def test_fitters_traced_at_once_through_a_shared_function_all_trace():
    """The Markov fitters' graphs differentiate through statespace's level
    functions, which every fitter of a state dimension shares. Building a
    gradient enters the shared function's graph, state TensorFlow keeps
    per graph, not per thread: two MarkovFitters of matern32 tracing at
    once failed one's long series with "fit failed: 'NoneType' object is
    not iterable". Traced runs a process's traces one at a time."""
    dims = (1, 2)
    # New functions, whose gradients no trace of this process has built yet.
    shared = {d: statespace._level_functions.__wrapped__(d) for d in dims}

    def through_shared(variables, *elements):
        with tf.GradientTape() as tape:
            tape.watch(elements)
            total = variables[0] + 0.0
            for d, at in zip(dims, range(0, len(elements), 5)):
                pairs, spread = shared[d]
                x = elements[at:at + 5]
                padded, paired = pairs(x)
                total += tf.add_n([tf.reduce_sum(p) for p in spread(padded, paired, 2)])
        return {"gradients": tape.gradient(total, elements)}

    specs, inputs = [], []
    for d in dims:
        for side in (d, 2, d, 2, d):
            specs.append(tf.TensorSpec([None, None, d, side], tf.float64))
            inputs.append(np.zeros((4, 1, d, side)) + (np.eye(d) if side == d else 0.0))
    traced = [Traced(through_shared, specs) for _ in range(4)]
    got = at_once([lambda f=f: [g.numpy() for g in f([tf.Variable(0.0, dtype=tf.float64)],
                                                      *inputs)["gradients"]]
                   for f in traced])
    for gradients in got[1:]:
        for gradient, first in zip(gradients, got[0]):
            np.testing.assert_array_equal(gradient, first)


def _series(seed: int, count: int) -> list[Series]:
    """count series of 20-80 points, some with a cycle (kernel auto's screen
    passes those), and one too short to fit."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(20, 81))
        t, y = ref.sample(rng, "rbf", n, length_scale=rng.uniform(0.3, 2.0),
                          noise_variance=rng.uniform(0.01, 0.3))
        if i % 2:
            y = y + np.sin(2 * np.pi * t / 1.5)
        out.append(Series(f"s{seed}-{i}", t, y))
    return out + [Series(f"s{seed}-short", np.array([0.0, 1.0]), np.array([1.0, 2.0]))]


def _exactly(results) -> list[str]:
    """Results as their reprs: equal lists mean equal bit for bit (a float's
    repr round-trips), NaN included."""
    return [repr(r) for r in results]


@pytest.mark.parametrize("kernel, copies", [("rbf", 1), ("rbf", 2), ("auto", 1)])
def test_one_fitter_shared_by_four_threads_gives_each_call_what_it_gives_alone(kernel, copies):
    """A GPFitter, copies side by side (SideBySide) and kernel auto's
    KernelChoice, first called from four threads at once: one trace per
    graph, no call waits forever, every call's results those of the same
    call made alone afterwards."""
    fitter = build_fitter(FitConfig(kernel=kernel), copies)
    groups = [_series(seed, 5) for seed in range(4)]
    together = at_once([lambda g=g: fitter.fit(g) for g in groups])
    assert fitter.tracing_count == (3 if kernel == "auto" else 1)  # auto: 3 candidates
    for group, got in zip(groups, together):
        assert _exactly(got) == _exactly(fitter.fit(group))
        assert [r.status for r in got] == ["ok"] * 5 + ["skipped"]


def test_two_fitters_of_one_configuration_fit_at_once_as_each_alone():
    """Not twins: each traces (or loads) its own graph, at the same time."""
    config = FitConfig(kernel="rbf")
    fitters = [GPFitter(config), GPFitter(config)]
    groups = [_series(seed, 4) for seed in (10, 11)]
    together = at_once([lambda f=f, g=g: f.fit(g) for f, g in zip(fitters, groups)])
    for fitter, group, got in zip(fitters, groups, together):
        assert _exactly(got) == _exactly(fitter.fit(group))
        assert fitter.tracing_count == 1
