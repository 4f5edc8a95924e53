"""FitterHandler: the fitting step's model, apart from its Beam lifecycle.

In the spirit of Beam RunInference's ModelHandler: the handler says how a
worker process builds its fitter (load_fitter), how a batch is fitted
(fit) and what the fitter has counted (counters, work_done); what a call
costs is the batching's (gpcore.batching, in pipeline/transforms.py's
BatchByLength). The DoFn (pipeline/transforms.py, FitDoFn) holds only the
lifecycle: one fitter per process (setup), fit calls in and rows out
(process), the metrics, and a call that raises. Its tests drive it with a small fake handler; this one is
tested against the real fitter.

The handler is pickled with the DoFn to every worker: it holds only the
configuration; the fitter is built there, in setup.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from gpcore.config import FitConfig, fitted_configs
from gpcore.result import FitResult
from gpcore.series import Series
from pipeline import fitters, runtime


class Counters(NamedTuple):
    """What a fitter has counted so far (running totals)."""

    work: dict           # gpcore.choice.work_by_kernel: {kernel: {counter: n}}
    tracing_count: int   # traces of its compiled function (1 once built)


class FitterHandler:
    """Builds and runs a worker process's one gpcore fitter for `config`.

    Args:
      config: the fit configuration (gpcore.FitConfig).
      processes_per_machine: fitting processes per machine (None: one per
        core), which sets each process's TF threads (pipeline/runtime.py).
    """

    def __init__(self, config: FitConfig, processes_per_machine: Optional[int] = None):
        self.config = config
        self._processes = processes_per_machine
        self._kernels = [c.kernel_name for c in fitted_configs(config)]

    def load_fitter(self):
        """A new fitter (gpcore.build_fitter: a GPFitter, or under kernel
        "auto" a KernelChoice), after setting this process's TF threads
        once; costs seconds (variables, a traced function)."""
        return fitters.build(self.config, runtime.configure_tf_threads(self._processes))

    def fit(self, fitter, batch: list[Series]) -> list[FitResult]:
        """The fitter's results for batch, one per series in order. A bad
        series comes back skipped or failed; the call raises only for what
        is not a series' fault (the machine, a bug)."""
        return fitter.fit(batch)

    def counters(self, fitter) -> Counters:
        from gpcore.choice import work_by_kernel  # TensorFlow: loaded by then (the fitter)
        return Counters(work_by_kernel(fitter), int(fitter.tracing_count))

    def work_done(self, before: Counters, after: Counters) -> tuple:
        """((kernel, series, newton_evaluations, grid_evaluations), ...) of
        one fit call, from the counters before and after it; each kernel's
        series are those it fitted: not the skipped ones, and under "auto"
        for a periodic candidate only those its screen passed
        (gpcore.choice.fits_periodic)."""
        done = []
        for kernel in self._kernels:
            new, old = after.work.get(kernel, {}), before.work.get(kernel, {})
            delta = lambda key: int(new.get(key, 0) - old.get(key, 0))  # noqa: E731
            done.append((kernel, delta("series"), delta("member_evaluations"),
                         delta("grid_evaluations")))
        return tuple(done)
