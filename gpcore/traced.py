"""Traced: one compiled fit function, traced once, shared by a fitter and
its twins.

A fitter's compiled search reads and assigns its variables. Captured, they
would tie the traced graph to one fitter, and each copy of a fitter (one
per core, gpcore/side_by_side.py; one per candidate and core under
`auto`) would trace the same graph again: seconds of CPU each, with the
GIL held, so the copies' traces ran one after another (docs/design.md,
"One trace for the copies"). Here the variables are the function's first
argument instead: the graph is traced once, for the first fitter, and a
twin's call passes its own variables to the same concrete function, so its
`.assign`s land in its own variables and never in another's. Calls from
several threads at once are safe: each runs the graph with its own
arguments. Traces are not: a process makes them one at a time (TRACING).

tf.function's input_signature cannot describe variables, so the function
is traced once by get_concrete_function, with the variables' own specs
(batch size unknown) and the tensors' specs given here, on the first call.
Given a cache key, the first call loads the function a process traced
before instead, and keeps the one it traces (gpcore/trace_cache.py).
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

import tensorflow as tf

from gpcore import trace_cache

# Held while a graph is traced: traces of a process run one at a time.
# A trace that differentiates through a tf.function shared by several
# graphs (statespace's level functions, one per state dimension, in every
# Markov fitter's) builds that function's gradient inside its graph, whose
# scope TensorFlow keeps per graph, not per thread: two Markov fitters
# traced at once (two threads' fitters, not twins) failed one's series
# with "'NoneType' object is not iterable" (docs/design.md, "Threads
# sharing a process"). A trace holds the GIL most of its time anyway.
TRACING = threading.Lock()


class Traced:
    """fn(variables, *tensors) traced once, for variables of any fitter
    built alike.

    Args:
      fn: the graph's Python function: (variables, *tensors) -> outputs.
      tensors: tf.TensorSpec per tensor argument (unknown sizes as None).
      cache_parts: what the graph is traced from besides gpcore itself (the
        fitter's class and configuration), naming its entry in the trace
        cache; None: always traced.
    """

    def __init__(self, fn: Callable, tensors: Sequence[tf.TensorSpec],
                 cache_parts: Sequence[str] | None = None):
        # autograph=False: the graph's Python control flow is static (loops
        # over parameters); tracing without conversion is seconds faster.
        self._function = tf.function(fn, autograph=False)
        self._tensors = list(tensors)
        self._cache_parts = None if cache_parts is None else list(cache_parts)
        self._concrete = None
        self._loaded = False  # the function came from the trace cache
        self._lock = threading.Lock()

    def __call__(self, variables: list[tf.Variable], *tensors):
        """The graph's outputs for these variables (assigned in place) and
        tensors (numpy arrays or tensors of the specs' dtypes)."""
        concrete = self._concrete
        if concrete is None:
            with self._lock:  # twins calling first at once: one trace
                if self._concrete is None:
                    self._concrete = self._compiled(variables)
                concrete = self._concrete
        return concrete(variables, *tensors)

    def _compiled(self, variables):
        """The function loaded from the trace cache, else traced (and kept)."""
        name = self._name()
        kept = self._kept(name)
        if kept is not None:
            return kept
        with TRACING:
            concrete = self._function.get_concrete_function(variables, *self._tensors)
        # Kept: the function as kept, one TF instantiates once for every
        # fitter of the entry, and the traced graph is let go (gpcore/trace_cache.py).
        kept = trace_cache.save(name, concrete) if name else None
        return concrete if kept is None else kept

    def load_kept(self) -> bool:
        """Whether the function comes from the trace cache: loads it there
        if nothing is compiled yet; never traces."""
        with self._lock:
            if self._concrete is None:
                self._concrete = self._kept(self._name())
        return self._loaded

    def _name(self) -> str | None:
        """The trace cache's name for this graph (None: never kept), from
        gpcore as it is now (a patched constant names another entry)."""
        return None if self._cache_parts is None else trace_cache.key(*self._cache_parts)

    def _kept(self, name: str | None):
        """The function the trace cache kept as `name`, noted as loaded; or None."""
        kept = trace_cache.load(name) if name else None
        if kept is not None:
            self._loaded = True
        return kept

    @property
    def loaded(self) -> bool:
        """Whether the function came from the trace cache, not a trace."""
        return self._loaded

    @property
    def tracing_count(self) -> int:
        """Compiled functions made so far, traced or loaded: 0 before the
        first call, 1 after, for every twin."""
        return self._function.experimental_get_tracing_count() + int(self.loaded)
