"""SideBySide: copies of one fitter, each on a thread of its own, for a
process that has several cores.

GP matrices are small, so one fitter with two intra-op threads gains little
over one thread; TensorFlow releases the GIL while a compiled graph runs, so
two fitters with one intra-op thread each, fitting different series at the
same time, fit about 1.35x as many series per second on 2 cores
(docs/design.md, "Fitters side by side"). Each copy is an ordinary fitter
with variables of its own, created once; the copies are twins of the first
(gpcore.build_fitter), so the process traces their function once, not once
per copy (gpcore/traced.py), and every copy joins every call.
"""
from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Sequence

import numpy as np

from gpcore.batching import summed_work
from gpcore.result import FitResult
from gpcore.series import Series, listed


class SideBySide:
    """Fits with `fitters` at once, each on its own thread; has a fitter's
    `fit`, `tracing_count` and `work`.

    A call's series are sorted by length and cut into chunks of a few
    batches (at most a copy's share of the call), longest first; each copy
    takes the next chunk when it is free, so copies that start late (the
    first call waits for the one trace) or get dearer chunks still finish
    together. A series' fit does not depend on the other series of its
    batch, so the results are those of one fitter.
    """

    # Chunks of this many batches: enough for full batches of similar
    # lengths, few enough to share the work out evenly.
    CHUNK_BATCHES = 4

    def __init__(self, fitters: Sequence):
        if not fitters:
            raise ValueError("SideBySide needs at least one fitter")
        self.fitters = list(fitters)
        self.config = self.fitters[0].config
        self._threads = ThreadPoolExecutor(len(self.fitters), thread_name_prefix="gpfit-fitter")

    @property
    def tracing_count(self) -> int:
        """Traces of the copies' one shared function: 1 once any copy has
        fitted, like a lone fitter."""
        return max(f.tracing_count for f in self.fitters)

    @property
    def work(self) -> dict:
        """The copies' work counters, summed."""
        return summed_work(self.fitters)

    def fit(self, series: Sequence[Series]) -> list[FitResult]:
        """One FitResult per series, in order."""
        series = listed(series)
        order = sorted(range(len(series)), key=lambda i: -np.size(series[i].t))
        # A call of a few long series (a 1,024-point series is seconds of
        # work) is still shared out: no copy gets more than its share.
        share = -(-len(series) // len(self.fitters))
        size = max(1, min(self.CHUNK_BATCHES * self.config.batch_size, share))
        chunks = queue.SimpleQueue()
        for start in range(0, len(order), size):
            chunks.put(order[start:start + size])
        results: list[FitResult | None] = [None] * len(series)

        def work(fitter) -> None:
            while True:
                try:
                    chunk = chunks.get_nowait()
                except queue.Empty:
                    return
                for i, result in zip(chunk, fitter.fit([series[i] for i in chunk])):
                    results[i] = result

        running = [self._threads.submit(work, fitter) for fitter in self.fitters]
        wait(running)
        for done in running:
            done.result()  # a copy's error is the call's, once every copy has stopped
        return results
