"""FitResult: what a fit says of one series.

The output table's columns are the pipeline's (pipeline/io/schema.py):
they hold these fields, and what a run adds (reuse, the fingerprint).
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Optional

# FitResult.to_row's keys, in order.
FIELDS = (
    "series_id", "status", "error", "kernel", "n_points", "mean", "amplitude",
    "length_scale", "period", "noise_variance", "components", "nll", "bic", "bic_margin",
    "converged", "stop_reason", "at_bound", "iterations", "warm_started",
)
# FitResult.params' keys: the fitted parameters.
PARAMETERS = ("kernel", "mean", "amplitude", "length_scale", "period", "noise_variance",
              "components")

# Per-component parameters, in the order of each `components` element.
COMPONENT_FIELDS = ("kernel", "amplitude", "length_scale", "period")

OK, SKIPPED, FAILED = "ok", "skipped", "failed"


@dataclasses.dataclass
class FitResult:
    """Fitted hyperparameters of one series, in the caller's units.

    `amplitude` is the kernel's standard deviation (units of y; `linear`'s
    is its slope's, y per unit of t), `length_scale` and `period` are in
    units of t (`periodic`'s length scale is unitless), `noise_variance` in
    units of y squared.
    `nll` is the negative log marginal likelihood (nats) of the observed raw
    points under these parameters. Parameters are None unless status is "ok".
    `components` lists each kernel of the (possibly summed) kernel as a dict
    of COMPONENT_FIELDS; a single kernel has one. For sums the flat
    `amplitude`, `length_scale` and `period` are None. `bic` is
    2 nll + k log n_points (k counted in docs/design.md, "Kernel choice");
    `bic_margin` is the runner-up's bic minus this one's under kernel "auto".
    `converged` is true only when the optimiser's tolerance was met;
    `stop_reason` says why it stopped ("converged", "max_iterations",
    "stalled"), and `at_bound` that some parameter ended held at a bound
    of its search box (see gpcore/starts.py).
    """

    series_id: str
    status: str
    kernel: str
    n_points: int
    error: Optional[str] = None
    mean: Optional[float] = None
    amplitude: Optional[float] = None
    length_scale: Optional[float] = None
    period: Optional[float] = None
    noise_variance: Optional[float] = None
    nll: Optional[float] = None
    converged: bool = False
    stop_reason: Optional[str] = None
    at_bound: bool = False
    iterations: int = 0
    components: Optional[list] = None
    bic: Optional[float] = None
    bic_margin: Optional[float] = None
    warm_started: bool = False

    def to_row(self) -> dict:
        """The fit as plain Python values: a dict of FIELDS, in order."""
        row = {name: getattr(self, name) for name in FIELDS}
        row["series_id"] = str(self.series_id)
        row["n_points"] = int(self.n_points)
        row["converged"] = bool(self.converged)
        row["at_bound"] = bool(self.at_bound)
        row["iterations"] = int(self.iterations)
        row["warm_started"] = bool(self.warm_started)
        if self.components is not None:
            row["components"] = [
                {name: (c.get(name) if name == "kernel" or c.get(name) is None
                        else float(c[name])) for name in COMPONENT_FIELDS}
                for c in self.components]
        for name in ("mean", "amplitude", "length_scale", "period",
                     "noise_variance", "nll", "bic", "bic_margin"):
            if row[name] is not None:
                row[name] = float(row[name])
        return row

    @property
    def params(self) -> dict:
        """Kernel and noise parameters, as accepted by gpcore.predict."""
        return {name: getattr(self, name) for name in PARAMETERS}


def first_line(err: BaseException) -> str:
    """The first line of an exception's message (its type if it has none),
    for one-line error messages."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def last_line(error: BaseException) -> str:
    """The last line of the message (TensorFlow puts the op's error there)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


_LOG = logging.getLogger("gpfit")
# Exception types report_own has logged in this process (under _REPORTING).
_REPORTED: set = set()
_REPORTING = threading.Lock()


def report_own(err: BaseException) -> None:
    """Logs at warning level, with its traceback, the first exception of
    each type that a fit's Python code raised in this process: not
    TensorFlow's runtime (a graph that fails on one series' numbers) but
    gpfit's own (a bug, or a race between threads), which the caller still
    records as its series' failure, one line long: one such call fails one
    series, not every series of its fit call. Without this the traceback,
    all a report of it needs, was lost."""
    import tensorflow as tf  # loaded already: only fits call this
    if isinstance(err, tf.errors.OpError):
        return
    with _REPORTING:
        if type(err) in _REPORTED:
            return
        _REPORTED.add(type(err))
    _LOG.warning("gpfit: a fit raised %s: %s, an error in gpfit, not in the series; its series "
                 "failed alone, with that line; please report this traceback",
                 type(err).__name__, first_line(err), exc_info=err)
