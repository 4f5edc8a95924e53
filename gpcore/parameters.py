"""Fitted parameters both ways: from the optimiser's standardised log
coordinates to the caller's units, and from a previous fit's parameters
back to a starting point.

The optimiser searches, for t scaled to [0, 1] and y to unit variance, the
log of each kernel shape parameter (gpcore/kernels.py, `parameters` order)
and of the noise ratio r = noise variance / amplitude_0^2; the overall
scale s^2 = amplitude_0^2 is profiled out, and a sum's further components
have variance ratios w_c = amplitude_c^2 / amplitude_0^2.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from gpcore.kernels import Kernel, components
from gpcore.predict import checked_params


def component_rows(kernel: Kernel, shape: np.ndarray, scale2: float, sd: float,
                   span: float) -> list[dict]:
    """The `components` of a fit in the caller's units.

    Args:
      kernel: the kernel fitted. shape: [P - 1] its parameters (not log) in
        standardised units. scale2: the profiled s^2. sd, span: y's standard
        deviation and t's span that standardised the series.
    Returns:
      One dict per component: kernel, amplitude (units of y; y per unit of
      t for linear), length_scale (units of t; unitless for periodic; None
      for linear) and period (units of t or None).
    """
    named = dict(zip(kernel.parameters, shape))
    for name in kernel.time_parameters:
        named[name] *= span
    rows = []
    for c, base in enumerate(components(kernel)):
        suffix = f"_{c}" if len(components(kernel)) > 1 else ""
        ratio = named.get(f"variance_ratio{suffix}", 1.0)
        rows.append({"kernel": base.name,
                     "amplitude": sd * np.sqrt(scale2 * ratio) / _per_time(base, span),
                     "length_scale": named.get(f"length_scale{suffix}"),
                     "period": named.get(f"period{suffix}")})
    return rows


def _per_time(base: Kernel, span: float) -> float:
    """What a standardised amplitude (units of y, t in [0, 1]) is divided by
    in the caller's units: the span for a slope (linear), else 1."""
    return span if base.amplitude_per_time else 1.0


def search_start(kernel: Kernel, params: Optional[Mapping], span: float) -> Optional[np.ndarray]:
    """[P] log standardised coordinates of a previous fit's parameters, or
    None where they do not apply: another kernel, or parameters that
    gpcore.predict.checked_params refuses (missing, not finite, out of range).

    Args:
      params: as FitResult.params gives them (kernel, components,
        noise_variance; flat amplitude/length_scale/period for single kernels).
      span: t's span that standardises the series being fitted now (ratios
        of variances need no scale).
    """
    if not params or str(params.get("kernel")) != kernel.name:  # a name, or a Kernel
        return None
    try:
        checked = checked_params(params)  # components from flat ones; all finite, > 0
    except ValueError:
        return None
    parts = checked["components"]
    bases = components(kernel)
    amp2 = [(part["amplitude"] * _per_time(base, span)) ** 2 for base, part in zip(bases, parts)]
    scale2 = amp2[0]
    values = []
    for c, base in enumerate(bases):
        if c:
            values.append(amp2[c] / scale2)
        values += [parts[c][name] / (span if name in base.time_parameters else 1.0)
                   for name in base.parameters]
    values = np.array(values + [checked["noise_variance"] / scale2])
    # A noise-free previous fit (r = 0) starts from the smallest ratio.
    return np.log(np.maximum(values, np.finfo(float).tiny))
