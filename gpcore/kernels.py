"""The kernels gpcore fits, each a class named after the maths (RBF,
Matern12, Matern32, Matern52, Periodic, Linear; `a + b` is their Sum) and
described once: name, shape parameters, their units, bounds and start rows,
the covariance matrix and its derivatives. `kernel(name)` is the one place
a name ("rbf+periodic") becomes a kernel (docs/design.md, "The fitter").

Every kernel here has unit amplitude: the amplitude is profiled out of the
likelihood (see likelihood.py). The stationary kernels' matrices are
functions of the distance |t_i - t_j|, computed once per batch directly
from the times (never as x^2 + y^2 - 2xy, which loses all precision for
times such as Unix seconds); `linear`'s is a function of the times
themselves, measured from the series' centre c, the midpoint of its
observed span (docs/design.md, "Kernel choice"). Parameters are TFP's
(tfp.math.psd_kernels): `periodic` is ExpSinSquared, whose length scale is
unitless (relative to the sine's argument); `matern12` is MaternOneHalf.

Derivatives are with respect to the log of each shape parameter, the
coordinates the optimiser searches; the fitter's Newton steps need the
first and second derivatives of the matrix (docs/design.md, "The fitter").
TensorFlow is imported only when a matrix is first built.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

SQRT3, SQRT5 = math.sqrt(3.0), math.sqrt(5.0)
# A Matern's z past which exp(-z) is 0 in float64 (from z = 745.2; the
# smallest subnormal is exp(-744.4)), so its kernel is exactly 0.
Z_ZERO = 1e3

# Sums join base kernels with this; at most MAX_COMPONENTS of them, and
# `linear` at most once: two lines through one centre are one line, whose
# variance ratio the likelihood cannot tell apart.
SUM = "+"
MAX_COMPONENTS = 3

# Each kernel's bounds and start grid, in standardised units (t in [0, 1]);
# the search-wide policy (noise ratios, probes, periodogram) is
# gpcore/starts.py's (docs/design.md, "The fitter").
# Length scales scored, log-spaced from LENGTH_GRID_SPAN[0] x the median
# spacing to LENGTH_GRID_SPAN[1] x the span. From 1 spacing, not 2: real
# optima at 1.1-1.3 spacings (docs/design.md, "Probes around the optimum").
LENGTH_GRID_SIZE = 10
LENGTH_GRID_SPAN = (1.0, 2.0)
# Length scale bounds: down to a quarter of the median spacing (and at
# least to span/1000), up to 10 spans (beyond that RBF is a polynomial).
LENGTH_BOUNDS = (0.25, 1e-3, 10.0)
# ExpSinSquared's length scale is unitless (relative to the sine).
PERIODIC_LENGTH_GRID = (0.7, 2.0)
PERIODIC_LENGTH_BOUNDS = (1e-2, 1e2)
# Periods from 1 median spacing to half the span: a cycle must be seen at
# least twice to be told from a trend (a longer "period" wraps the series'
# end round to its start in a forecast). A fit held at a bound reports
# at_bound (docs/design.md, "Periods the data can support").
PERIOD_BOUNDS = (1.0, 0.5)  # (median spacings, spans)
# In a sum each component's candidates are crossed, so each gets fewer: length
# scales over the same range, periods from the periodogram of the detrended
# series with one periodic length scale, and variance ratios of the
# components after the first.
SUM_LENGTH_GRID_SIZE = 4
SUM_LENGTH_GRID_SPAN = (2.0, 2.0)
SUM_PERIODIC_LENGTH = 1.0
VARIANCE_RATIO_GRID = (0.1, 1.0)
VARIANCE_RATIO_BOUNDS = (1e-6, 1e6)


def _tf():
    import tensorflow as tf  # lazily: the table itself is cheap to import
    return tf


class Kernel:
    """A unit-amplitude kernel; its subclasses are named after the maths
    (RBF, Matern12, Periodic, ..., Sum), and `a + b` (or `sum([a, b])`) is
    their Sum.

    Kernels are values: equal, with equal hashes, where their structure is
    (the same base kernels, in the same order), and immutable.

    Attributes (of each class, or of a sum):
      name: as given to FitConfig and written to the output's `kernel`
        ("rbf", "rbf+periodic").
      parameters: its shape parameters, in the optimiser's order.
      time_parameters: those measured in units of t (scaled with t); the
        others are unitless.
      amplitude_per_time: its amplitude is in units of y per unit of t (a
        slope: `linear`), not of y.
    """

    name: str = ""
    parameters: tuple[str, ...] = ()
    time_parameters: tuple[str, ...] = ()
    amplitude_per_time: bool = False

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __add__(self, other):
        if not isinstance(other, Kernel):
            return NotImplemented
        return Sum(components(self) + components(other))

    def __radd__(self, other):
        # 0 + kernel: what Python's sum() starts from, so that
        # sum([RBF(), Periodic()]) is their Sum, in order.
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def structure(self) -> tuple:
        """What equality and hashing compare: the class (a sum: its parts')."""
        return (type(self),)

    def __eq__(self, other):
        return isinstance(other, Kernel) and self.structure() == other.structure()

    def __hash__(self):
        return hash(self.structure())

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __str__(self):
        return self.name  # as messages, logs and tables have always shown it

    @property
    def has_period(self) -> bool:
        return any(name.startswith("period") for name in self.parameters)

    def time_scale(self, params) -> float:
        """How far apart in t (units of t) the kernel's functions change
        appreciably, from fitted parameters (a mapping by name): what a
        plot's grid must resolve."""
        return float(params["length_scale"])

    # Whether the start grid's rows are one length scale in increasing
    # order, so that neighbouring grid points are neighbours in parameter
    # space (a single kernel whose one parameter is a length scale).
    has_length_axis = False

    def bounds(self, spacing: float) -> tuple[list[float], list[float]]:
        """(lower, upper) of its shape parameters, in `parameters` order (not
        log), for a series of median spacing `spacing` (t in [0, 1])."""
        return [], []

    def grid_size(self, periods: int) -> int:
        """Rows of its start grid, with `periods` candidate periods."""
        return 1

    def start_rows(self, spacing: float, periods) -> np.ndarray:
        """[grid_size, K] log start rows for median spacing `spacing`, from
        candidate periods [periods] (units of t; None without a period)."""
        return np.zeros((1, 0))

    def sum_options(self, spacing: float, periods) -> list[tuple]:
        """Its log candidates as a component of a sum, crossed with the
        others' (fewer than its own grid's)."""
        return [()]

    def sum_option_count(self, periods: int) -> int:
        """len(sum_options) with `periods` candidate periods."""
        return 1

    def feature(self, distance, t1=None, t2=None):
        """What the matrix is computed from, per batch: the distance
        |t_i - t_j| [C, N, M] itself, or a function of it that spares
        elementwise passes in every evaluation; a kernel of the times
        themselves uses t1 [C, N] and t2 [C, M], measured from the series'
        centre (the midpoint of its observed span)."""
        return distance

    def matrix(self, feature, params):
        """[C, N, M] covariances from `feature(distance)`, for parameters
        params (list of [C] tensors, in `parameters` order)."""
        return self.matrix_and_derivatives(feature, params, order=0)[0]

    def covariance(self, feature, params):
        """`matrix` as predictions take it: finite wherever the kernel is,
        however far the new times lie from the data."""
        return self.matrix(feature, params)

    def matrix_and_derivatives(self, feature, params, order: int = 2):
        """(K, [dK/dlog p_i], {(i, j): d2K/dlog p_i dlog p_j, i <= j}).

        Args:
          feature: [C, N, M] from `feature`. params: list of [C] tensors.
          order: 0 (K only), 1 (and first derivatives) or 2 (and second).
        """
        raise NotImplementedError


def _scaled(distance, length_scale, factor):
    """z = factor * d / l, with l [C] broadcast over [C, N, M]."""
    return distance * _per_matrix(factor / length_scale)


def _per_matrix(v):
    """[C] -> [C, 1, 1], to broadcast over [C, N, M]: a reshape, which
    traces to fewer graph nodes than v[:, None, None] (docs/design.md,
    "Build")."""
    return _tf().reshape(v, [-1, 1, 1])


class _Smooth(Kernel):
    """A kernel of one length scale (RBF, the Materns): bounds from a
    fraction of the median spacing to LENGTH_BOUNDS[2] spans, and a
    log-spaced grid."""

    parameters = ("length_scale",)
    time_parameters = ("length_scale",)
    has_length_axis = True

    def bounds(self, spacing):
        return [shortest_length_scale(spacing)], [LENGTH_BOUNDS[2]]

    def grid_size(self, periods):
        return LENGTH_GRID_SIZE

    def start_rows(self, spacing, periods):
        return _length_grid(spacing, LENGTH_GRID_SIZE, LENGTH_GRID_SPAN)[:, None]

    def sum_options(self, spacing, periods):
        return [(v,) for v in _length_grid(spacing, SUM_LENGTH_GRID_SIZE, SUM_LENGTH_GRID_SPAN)]

    def sum_option_count(self, periods):
        return SUM_LENGTH_GRID_SIZE


class RBF(_Smooth):
    """The squared exponential exp(-d^2 / 2 l^2) (TFP's ExponentiatedQuadratic)."""

    name = "rbf"

    def feature(self, distance, t1=None, t2=None):
        return -0.5 * _tf().square(distance)  # -d^2 / 2

    def matrix_and_derivatives(self, feature, params, order=2):
        tf = _tf()
        inv_l2 = 1.0 / _per_matrix(tf.square(params[0]))
        k = tf.exp(feature * inv_l2)  # exp(-u), u = d^2 / 2l^2
        if order == 0:
            return k, [], {}
        two_u = feature * (-2.0 * inv_l2)
        dk = two_u * k  # dk/dlog l = 2u k
        if order == 1:
            return k, [dk], {}
        return k, [dk], {(0, 0): dk * (two_u - 2.0)}


class Matern(_Smooth):
    """The Matern kernels of smoothness nu (Matern12, Matern32, Matern52),
    with z = sqrt(2 nu) d / l."""

    nu: float = 0.0

    def matrix_and_derivatives(self, feature, params, order=2):
        return self._of_z(self._z(feature, params), order)

    def covariance(self, feature, params):
        # Past d / l of about 1e154 (matern32: 1e308) z^2 (1 + z) overflows,
        # and inf x exp(-z) = inf x 0 made far predictions NaN; clamped at
        # Z_ZERO, where exp(-z) is already 0, every value stays bit for bit.
        # Not in the fitter's matrix: no fit has seen such a z, and the
        # minimum would be one more pass over every matrix.
        return self._of_z(_tf().minimum(self._z(feature, params), Z_ZERO), 0)[0]

    def _z(self, feature, params):
        """z = sqrt(2 nu) d / l [C, N, M] (feature: the distance)."""
        return _scaled(feature, params[0], {0.5: 1.0, 1.5: SQRT3}.get(self.nu, SQRT5))

    def _of_z(self, z, order):
        tf = _tf()
        if self.nu == 0.5:
            return self._exponential(z, order)
        three_halves = self.nu == 1.5
        e = tf.exp(-z)
        z2e = z * z * e
        if three_halves:
            k = (1.0 + z) * e
            dk = z2e                                   # -z dk/dz
            d2k = (z - 2.0) * z2e
        else:
            k = (1.0 + z + z * z / 3.0) * e
            dk = z2e * (1.0 + z) / 3.0
            d2k = z2e * (z * z - 2.0 * z - 2.0) / 3.0
        if order == 0:
            return k, [], {}
        if order == 1:
            return k, [dk], {}
        return k, [dk], {(0, 0): d2k}

    @staticmethod
    def _exponential(z, order):
        k = _tf().exp(-z)
        if order == 0:
            return k, [], {}
        dk = z * k  # dk/dlog l = -z dk/dz
        if order == 1:
            return k, [dk], {}
        return k, [dk], {(0, 0): dk * (z - 1.0)}


class Matern12(Matern):
    """nu = 1/2, exponential: exp(-d/l), the Ornstein-Uhlenbeck process
    (Markov; TFP's MaternOneHalf)."""

    name, nu = "matern12", 0.5


class Matern32(Matern):
    """nu = 3/2: (1 + z) exp(-z)."""

    name, nu = "matern32", 1.5


class Matern52(Matern):
    """nu = 5/2: (1 + z + z^2 / 3) exp(-z)."""

    name, nu = "matern52", 2.5


class Linear(Kernel):
    """(t - c)(t' - c): a straight line through the constant mean at c, the
    series' centre, with a slope of unit variance (per unit of t squared).
    No shape parameters: c is fixed at the midpoint of the observed span
    (docs/design.md, "Kernel choice"), so the row and the data give it."""

    name = "linear"
    amplitude_per_time = True

    def time_scale(self, params) -> float:
        return math.inf  # a line needs no grid finer than the plot's least

    def feature(self, distance, t1=None, t2=None):
        if t1 is None or t2 is None:
            raise ValueError("the linear kernel is a function of the times, not only of "
                             "their distances: pass t1 and t2 (from the series' centre)")
        return t1[..., :, None] * t2[..., None, :]

    def matrix_and_derivatives(self, feature, params, order=2):
        return feature, [], {}


class Periodic(Kernel):
    """ExpSinSquared: exp(-2 sin^2(pi d / p) / l^2), l unitless."""

    name = "periodic"
    parameters = ("length_scale", "period")
    time_parameters = ("period",)

    def bounds(self, spacing):
        return ([PERIODIC_LENGTH_BOUNDS[0], min(PERIOD_BOUNDS[0] * spacing, PERIOD_BOUNDS[1] / 2)],
                [PERIODIC_LENGTH_BOUNDS[1], PERIOD_BOUNDS[1]])

    def grid_size(self, periods):
        return periods * len(PERIODIC_LENGTH_GRID)

    def start_rows(self, spacing, periods):
        return np.array([(np.log(l), np.log(p)) for p in periods for l in PERIODIC_LENGTH_GRID])

    def sum_options(self, spacing, periods):
        return [(np.log(SUM_PERIODIC_LENGTH), np.log(p)) for p in periods]

    def sum_option_count(self, periods):
        return periods

    def time_scale(self, params) -> float:
        # The length scale is a fraction of the period's sine argument.
        return float(params["period"]) * min(1.0, float(params["length_scale"])) / 4.0

    def feature(self, distance, t1=None, t2=None):
        # Given the times: the signed differences t1_i - t2_j [C, N, M] and
        # the times, so that each evaluation takes the sines of its phase
        # from sines and cosines of the N + M times (angle subtraction)
        # instead of the N x M differences: one libm call per element was a
        # fifth of a sum's fit (docs/design.md, "The periodic kernel's
        # sines"). Without them, the distance itself.
        if t1 is None or t2 is None:
            return distance
        return t1[..., :, None] - t2[..., None, :], t1, t2

    def matrix_and_derivatives(self, feature, params, order=2):
        tf = _tf()
        length_scale, period = params
        frequency = math.pi / period  # [C]: the phase per unit of t
        inv_l2 = _per_matrix(1.0 / tf.square(length_scale))
        if isinstance(feature, tuple):  # (t1_i - t2_j, t1, t2): see feature
            difference, t1, t2 = feature
            phase = difference * _per_matrix(frequency)
            u1, u2 = (t * tf.reshape(frequency, [-1, 1]) for t in (t1, t2))
            s1, c1 = tf.sin(u1)[..., :, None], tf.cos(u1)[..., :, None]
            s2, c2 = tf.sin(u2)[..., None, :], tf.cos(u2)[..., None, :]
            sine = s1 * c2 - c1 * s2  # sin(phase)
            cosine = lambda: c1 * c2 + s1 * s2  # cos(phase)
        else:
            phase = feature * _per_matrix(frequency)  # feature: distance
            sine = tf.sin(phase)
            cosine = lambda: tf.cos(phase)
        sine2 = tf.square(sine)
        s = 2.0 * sine2 * inv_l2   # S; k = exp(-S)
        k = tf.exp(-s)
        if order == 0:
            return k, [], {}
        # dS/dlog l = -2S; dS/dlog p = -2 phase sin(2 phase) / l^2 =: sp,
        # with sin(2 phase) = 2 sin cos and cos(2 phase) = 1 - 2 sin^2.
        sin2 = 2.0 * sine * cosine()
        sp = -2.0 * phase * sin2 * inv_l2
        dk_l = 2.0 * s * k
        dk_p = -sp * k
        if order == 1:
            return k, [dk_l, dk_p], {}
        dsp_p = 2.0 * phase * inv_l2 * (sin2 + 2.0 * phase * (1.0 - 2.0 * sine2))
        return k, [dk_l, dk_p], {
            (0, 0): dk_l * (2.0 * s - 2.0),
            (0, 1): dk_p * (2.0 * s - 2.0),
            (1, 1): k * (sp * sp - dsp_p),
        }


class Sum(Kernel):
    """A sum of base kernels: K1 = k_0 + sum_{c >= 1} w_c k_c, unit amplitude
    for the first component (the overall amplitude is profiled out) and a
    variance ratio w_c = amplitude_c^2 / amplitude_0^2 for each other one.

    Parameters, in order: component 0's shape parameters, then for each
    further component its `variance_ratio` and its shape parameters, every
    name suffixed with the component's index (`length_scale_0`,
    `variance_ratio_1`, `period_1`, ...).
    """

    def __init__(self, components: tuple[Kernel, ...]):
        parts = tuple(components)
        bases = [type(b).__name__ for b in parts if isinstance(b, Sum) or not isinstance(b, Kernel)]
        if (bases or not 2 <= len(parts) <= MAX_COMPONENTS
                or sum(isinstance(b, Linear) for b in parts) > 1):
            raise ValueError(f"a sum must be of 2 to {MAX_COMPONENTS} base kernels, linear at "
                             f"most once; got {parts!r}")
        names, time_names, layout = [], [], []
        for c, base in enumerate(parts):
            ratio = None
            if c:
                ratio = len(names)
                names.append(f"variance_ratio_{c}")
            shape = list(range(len(names), len(names) + len(base.parameters)))
            names += [f"{name}_{c}" for name in base.parameters]
            time_names += [f"{name}_{c}" for name in base.time_parameters]
            layout.append((ratio, shape))
        fields = dict(name=SUM.join(b.name for b in parts), parameters=tuple(names),
                      time_parameters=tuple(time_names), components=parts,
                      # Per component: (index of its variance ratio or None, its shape indices).
                      layout=tuple(layout))
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    def structure(self) -> tuple:
        return (Sum,) + tuple(base.structure() for base in self.components)

    def __repr__(self):
        return " + ".join(repr(base) for base in self.components)

    def bounds(self, spacing):
        lower, upper = [], []
        for c, base in enumerate(self.components):
            if c:
                lower.append(VARIANCE_RATIO_BOUNDS[0])
                upper.append(VARIANCE_RATIO_BOUNDS[1])
            low, high = base.bounds(spacing)
            lower += low
            upper += high
        return lower, upper

    def grid_size(self, periods):
        rows = len(VARIANCE_RATIO_GRID) ** (len(self.components) - 1)
        for base in self.components:
            rows *= base.sum_option_count(periods)
        return rows

    def start_rows(self, spacing, periods):
        """Every component's sum_options crossed, with a variance ratio
        from VARIANCE_RATIO_GRID for each component after the first."""
        options = []
        for c, base in enumerate(self.components):
            own = base.sum_options(spacing, periods)
            if c:
                own = [(np.log(w),) + row for w in VARIANCE_RATIO_GRID for row in own]
            options.append(own)
        return np.array([sum(rows, ()) for rows in itertools.product(*options)])

    def component_parameters(self, c: int, params: list) -> list:
        """Component c's shape parameters, out of the sum's list."""
        return [params[i] for i in self.layout[c][1]]

    def time_scale(self, params) -> float:
        return min(base.time_scale({name: params[f"{name}_{c}"] for name in base.parameters})
                   for c, base in enumerate(self.components))

    def feature(self, distance, t1=None, t2=None):
        return tuple(base.feature(distance, t1, t2) for base in self.components)

    def matrix_and_derivatives(self, feature, params, order=2):
        """As Kernel's; second derivatives between different components are
        zero and left out of the dict."""
        total, first, second = 0.0, [None] * len(params), {}
        for c, base in enumerate(self.components):
            ratio, shape = self.layout[c]
            k, dk, d2k = base.matrix_and_derivatives(
                feature[c], self.component_parameters(c, params), order)
            w = 1.0 if ratio is None else _per_matrix(params[ratio])
            wk = k if ratio is None else w * k
            total = total + wk
            if order == 0:
                continue
            for a, i in enumerate(shape):
                first[i] = dk[a] if ratio is None else w * dk[a]
            if ratio is not None:
                first[ratio] = wk  # d(w k)/dlog w = w k
            if order == 1:
                continue
            for (a, b), d2 in d2k.items():
                second[(shape[a], shape[b])] = d2 if ratio is None else w * d2
            if ratio is not None:
                second[(ratio, ratio)] = wk
                for i in shape:
                    second[(ratio, i)] = first[i]
        if order == 0:
            return total, [], {}
        return total, first, second


MATERN12, MATERN32, MATERN52 = Matern12(), Matern32(), Matern52()
PERIODIC, LINEAR = Periodic(), Linear()

# Name -> base kernel, in the order options and help text list them.
TABLE = {k.name: k for k in (RBF(), MATERN12, MATERN32, MATERN52, PERIODIC, LINEAR)}
KERNELS = tuple(TABLE)
SYNTAX = (f"one of {', '.join(KERNELS)}, or a sum of up to {MAX_COMPONENTS} of them "
          f"joined by '{SUM}' (e.g. rbf+periodic, linear+rbf), linear at most once")


def kernel(name) -> Kernel:
    """The kernel called `name`: a base kernel or a sum such as
    "rbf+periodic" (a Kernel given is itself: params built with RBF());
    ValueError naming the choices otherwise."""
    if isinstance(name, Kernel):
        return name
    parts = name.split(SUM) if isinstance(name, str) else [None]
    if (not all(part in TABLE for part in parts) or len(parts) > MAX_COMPONENTS
            or parts.count(LINEAR.name) > 1):
        raise ValueError(f"kernel must be {SYNTAX}; got {name!r}")
    if len(parts) == 1:
        return TABLE[parts[0]]
    return Sum(tuple(TABLE[part] for part in parts))


def components(k: Kernel) -> tuple[Kernel, ...]:
    """The base kernels of k: itself alone, or a sum's components."""
    return getattr(k, "components", (k,))


def shortest_length_scale(spacing: float) -> float:
    """The length-scale bound for median spacing h: min(h / 4, span / 1000)."""
    return min(LENGTH_BOUNDS[0] * spacing, LENGTH_BOUNDS[1])


def _length_grid(spacing: float, size: int, span: tuple[float, float]) -> np.ndarray:
    """[size] log length scales from span[0] median spacings to span[1]
    spans (t in [0, 1])."""
    lo = max(span[0] * spacing, shortest_length_scale(spacing))
    return np.linspace(np.log(lo), np.log(span[1]), size)


def distances(t1, t2):
    """[..., N, M] |t1_i - t2_j| for times t1 [..., N], t2 [..., M]."""
    return _tf().abs(t1[..., :, None] - t2[..., None, :])
