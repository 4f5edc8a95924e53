"""Fit configuration: which model (or models to choose from), how many
starts, which series to accept."""
from __future__ import annotations

import dataclasses
import math
import numbers
import os

from typing import Optional, Union

from gpcore.kernels import KERNELS, SUM, SYNTAX, Kernel, components, kernel  # noqa: F401  (KERNELS: re-exported)

# kernel=AUTO fits each candidate and keeps the lowest BIC per series.
AUTO = "auto"
# Chosen on forecast.py's tune split (docs/design.md, "Kernel choice"):
# matern52 alone forecast best of the single kernels, matern12 adds random
# walks' persistence, matern52+periodic the cycles; rbf,
# linear+rbf and rbf+periodic made auto's forecasts worse where BIC chose
# them.
CANDIDATES = ("matern52", "matern12", "matern52+periodic")
# How far a lone rbf or Matern fit's probe rounds look for a lower basin
# (FitConfig.far_probes): "thorough", the default, past the optimum's
# neighbourhood too (the far and ridge probes: on the real tuning sets 4 %
# of series end lower with them; on workload a they are a quarter to a
# third of the fitting time); "quick" around the optimum only, as auto's
# candidates fit (docs/design.md, "Quick search"); "balanced" past it only
# where the fit at the optimum fails a residual check (FitConfig.probe_check:
# on series drawn from the model it spares most of their cost;
# docs/design.md, "Balanced search"). Sums, periodic and linear fit alike
# under all three: their far probes look for periods, and were not measured
# without them.
THOROUGH, BALANCED, QUICK = "thorough", "balanced", "quick"
SEARCHES = (THOROUGH, BALANCED, QUICK)
# auto's guard against spurious cycles (gpcore/choice.py; docs/design.md,
# "Kernel choice"): periodic candidates fit only series whose
# periodogram has a peak repeated SCREEN_MIN_CYCLES times in the span above
# Fisher's bound at SCREEN_FALSE_ALARM, and win only by PERIODIC_MARGIN of
# BIC over the best non-periodic candidate. SCREEN_FALSE_ALARM is the
# test's nominal level, not the rate: the peak is sought over a band
# SCREEN_OVERSAMPLE times denser than the frequencies the bound counts, so
# white noise passes more often from 60 points on (the rates by length:
# docs/design.md, "Kernel choice", *The screen's false alarm*). Three cycles
# rather than two: fewer spurious periodic parts on non-seasonal series and
# a lower MASE on forecast.py's tune split, no real cycle lost
# (docs/design.md, "Kernel choice", the screen's table).
SCREEN_MIN_CYCLES = 3.0
SCREEN_FALSE_ALARM = 0.01
PERIODIC_MARGIN = 6.0
# Multiples of the screen's peak period that auto's periodic candidate,
# started from its smooth part's fit, starts from, one start each beside
# its grid's best point (gpcore/choice.py, `periodic_starts`): here, where
# the memory check counts its starts without importing the fitter.
START_MULTIPLES = (1, 2, 3)
SCREEN_OVERSAMPLE = 4  # periodogram frequencies per 1 / span
SCREEN_REGULAR = 1.25  # most ratio of a series' longest to shortest step the screen judges (months: 31 / 28)
# Less regular series are judged at their index where their steps are whole
# multiples of the smallest, at least this share single (trading days: 4 of
# 5; what it screened: docs/design.md, "Kernel choice").
SCREEN_INDEX_SHARE = 2 / 3
# Default starts for a sum of kernels: further starts from the next-best
# grid points (often another period); a fourth gained nothing measured
# (docs/design.md, "Sums of kernels").
SUM_RESTARTS = 3
# Default starts for a single kernel without a period: the grid's best
# point, then up to 2 other basins the grid shows (local minima of its
# values away from the best); a restart runs only where its basin exists,
# so series with one basin pay nothing (docs/design.md, "Restarts from
# other basins").
BASIN_RESTARTS = 3
# Under auto, its candidates with a length-scale grid start once: their
# restarts cost a quarter of auto's smooth fits and changed no forecast
# score on forecast.py's tune split (`fitted_configs`; docs/design.md,
# "Where auto's time goes").
AUTO_BASIN_RESTARTS = 1
# A periodic component with a long length scale is nearly a constant plus a
# sinusoid: the likelihood rises slowly along a curved ridge (amplitude and
# length scale growing together) that Newton climbs in small steps: sums
# get SUM_MAX_ITERATIONS (docs/design.md, "Sums of kernels").
MAX_ITERATIONS = 100
SUM_MAX_ITERATIONS = 400
# auto's started periodic candidate (`is_started`) stops a start once it is
# more than this many nats behind its series' best after
# starts.BEHIND_AFTER Newton steps (FitConfig.stop_behind): such starts
# took 40 % of its Newton work and seldom end lowest; one starts.FAR_BEHIND
# nats behind stops after starts.FAR_BEHIND_AFTER steps (docs/design.md,
# "Where auto's time goes").
STARTED_STOP_BEHIND = 1.0
# Its Newton tolerance (nats), where looser than FitConfig.tolerance (None:
# the config's own): BIC keeps it only by PERIODIC_MARGIN (6), so its last
# hundredth of a nat decides nothing (docs/design.md, the same section).
STARTED_TOLERANCE = 0.01
# Its series per compiled call, at most (FitConfig.batch_size): each member
# of the sum carries about three times a single kernel's N x N matrices
# (four derivatives, seven second ones, the products), and it runs about
# four members a series, so 16 series left the cache; on the real sets 2
# took 16-24 % less CPU than 16, the same fits (docs/design.md, "Kernel
# choice", *Smaller batches for the started candidate*).
STARTED_BATCH_SIZE = 2
# Under auto every candidate fits without the far probes (FitConfig.far_probes):
# they look for a lower basin of the same kernel, for the nll alone, and on
# forecast.py's tune split they were a third of the smooth candidates' CPU
# and changed no choice and no forecast (docs/design.md, "Kernel choice",
# *Without the far probes*); a sum's alias probes find periods of about one
# spacing, aliases whose forecast is a short smooth component's, not a
# cycle's ("Periods the data can support"); its short and smooth-length
# shape probes were 9 % of the started candidate's CPU on 12 real sets and
# moved no chosen fit (the same section, *The sum's far probes too*).
AUTO_FAR_PROBES = False
# Longest series fitted by default: the dense fit costs n^3; Markov kernels
# (matern12, matern32, matern52 and their sums) fit series longer than
# MARKOV_ABOVE points in O(n) by a Kalman filter (gpcore/markov_fitter.py),
# up to MARKOV_MAX_POINTS (the default --max_rows; its memory:
# docs/design.md, "Long series: Markov kernels").
# Below MARKOV_ABOVE the dense path keeps its restarts and probes.
DENSE_MAX_POINTS = 4096
MARKOV_ABOVE = 4096
MARKOV_MAX_POINTS = 1_000_000
MARKOV_KERNELS = ("matern12", "matern32", "matern52")
# A dense fit's compiled batch holds at its peak about DENSE_SERIES_MATRICES
# N x N float64 matrices per series (its distances and features) and
# DENSE_START_MATRICES per start running Newton (value, gradient, Hessian),
# a sum's SUM_DENSE_START_MATRICES: peak RSS less the warmed fitter's over
# N^2 x 8 bytes, on white noise (rough: every start runs), was 11.0 for rbf
# and 12.4 for matern52 at 1,000 points with one start, 21.7 for rbf and
# 26.3 for matern52 (1,500 points) with 3, 63 for rbf+periodic's 3 at 1,000;
# a sum's start 21, the most a worker process held (linear+rbf+periodic's
# 3 starts 69 at 2,048 points, auto's started matern52+periodic's 4 85 at
# 3,000: docs/design.md, "The fitter", Memory per series). A max_points given
# whose fits would need more than the fitting machine's memory is refused
# where the fit runs (`check_memory`): the fit aborted (std::bad_alloc) or
# was killed by the OOM killer, with no word of why.
DENSE_SERIES_MATRICES = 7
DENSE_START_MATRICES = 7
SUM_DENSE_START_MATRICES = 21
# The most FitConfig.max_iterations: the graph's step counts are int32.
INT32_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class FitConfig:
    """Settings of one GPFitter; fixed for its lifetime.

    Attributes:
      kernel: a Kernel (gpcore/kernels.py: RBF(), RBF() + Periodic(), ...),
        or "auto": every one of `candidates` is fitted and the lowest BIC
        kept. A name given here ("rbf+periodic", one of KERNELS or a sum)
        is parsed once, in __post_init__; `kernel_name` is the string.
      candidates: the names of the kernels "auto" chooses from (a tuple, or
        one comma-separated string, as the command's --candidates; Kernels
        given, such as RBF() + Periodic(), are kept as their names). Any
        but the default (CANDIDATES) with another kernel is refused: that
        kernel is fitted alone (docs/design.md, "Kernel choice").
      restarts: most Newton starts per series, run as batch members; None
        (the default): `default_restarts(kernel)`; under "auto", each
        candidate's own, AUTO_BASIN_RESTARTS for a single kernel with a
        length-scale grid. The first starts from the best point of the search
        grid; for a single kernel without a period each further one from
        another basin of the grid, run only where the grid shows one; for
        the others from the next-best grid points (gpcore/starts.py). At most
        the start grid's points (`most_restarts`; under "auto" the largest
        candidate's, each candidate fitting with at most its own grid's):
        each start is a batch member held in memory.
      min_points: fewer finite points than this -> status "skipped".
      max_points: more finite points than this -> status "skipped"; None
        (the default): MARKOV_MAX_POINTS for a Markov kernel (`is_markov`),
        DENSE_MAX_POINTS for the others; under "auto", each candidate's own.
        One given whose one series' dense fit would outgrow the machine is
        refused by the fitter built there (`check_memory`).
      batch_size: series fitted together in one compiled call (16 fitted
        faster than 32 or 64 on 64-256-point series: the batch's matrices
        stay in cache; docs/design.md, "The fitter"); under "auto" at most
        STARTED_BATCH_SIZE for a periodic candidate started from its smooth
        part's fit (`is_started`), whose batches carry more matrices.
      max_iterations: Newton steps per fit (per batch member), at most
        INT32_MAX; None (the default): 100 for a single kernel,
        SUM_MAX_ITERATIONS for a sum.
      tolerance: converged when the Newton model predicts at most this
        decrease (nats) to the optimum of the standardised negative log
        likelihood, or its gradient's max-norm is at most this; under
        "auto" at least STARTED_TOLERANCE for a started candidate.
      jumps: for a sum with a periodic part, whether the probe rounds also
        run each series' other starts on from its longer-period probes
        (starts.JUMP_PROBE_MULTIPLES; docs/design.md, "Sums of kernels");
        None (the default): on, and under "auto" off for a periodic
        candidate started from its smooth part's fit (`is_started`), whose
        starts already hold 2x and 3x the screen's period.
      stop_behind: nats; a Newton start more than this above its series'
        best after starts.BEHIND_AFTER steps stops, and one
        starts.FAR_BEHIND above it after starts.FAR_BEHIND_AFTER
        (starts.behind_rules; 0: never), and so does a start that has
        slowed to a crawl, as in every sum (starts.slow_rule); None (the
        default): 0, and under "auto" STARTED_STOP_BEHIND for a periodic
        candidate started from its smooth part's fit (`is_started`).
      far_probes: whether the probe rounds also reach past the optimum's
        neighbourhood: for a kernel with a length-scale grid the far and
        ridge probes (starts.FAR_PROBE_LENGTHS, starts.RIDGE_PROBE_LENGTHS;
        docs/design.md, "Probes around the optimum"), for a sum with a
        periodic part the alias and echo probes and a clipped jump
        (starts.ALIAS_PROBES, ECHO_PROBES, CLIPPED_JUMP_RUNS; "Periods the
        data can support"), the short probes and the smooth components'
        shape probes (starts.SHORT_PROBE_LENGTHS, SHAPE_PROBE_LENGTHS;
        "Sums of kernels"); None (the default): on, and under "auto"
        AUTO_FAR_PROBES.
      probe_check: for a kernel with a length-scale grid and far_probes,
        whether the far and ridge probes run only where the fit at the
        optimum fails the residual check (gpcore/residual_check.py: its
        one-step prediction errors are not independent N(0, 1)); False
        (the default): on every fit.
    """

    kernel: Union[Kernel, str] = "rbf"
    candidates: tuple[str, ...] = CANDIDATES
    restarts: Optional[int] = None
    min_points: int = 3
    max_points: Optional[int] = None
    batch_size: int = 16
    max_iterations: Optional[int] = None
    tolerance: float = 1e-4
    jumps: Optional[bool] = None
    stop_behind: Optional[float] = None
    far_probes: Optional[bool] = None
    probe_check: bool = False

    def __post_init__(self):
        # A string is a comma-separated list, as the command's --candidates
        # takes: tuple() would make its letters the candidates. Kernels are
        # kept as their names (rows and the manifest carry them).
        defaulted = self.max_points is None  # the kernel's, or each candidate's
        given = self.candidates
        given = given.split(",") if isinstance(given, str) else given
        object.__setattr__(self, "candidates", tuple(
            c.name if isinstance(c, Kernel) else c for c in given))
        if self.kernel != AUTO and not isinstance(self.kernel, Kernel):
            try:
                object.__setattr__(self, "kernel", kernel(self.kernel))
            except ValueError:
                raise ValueError(f"kernel must be {SYNTAX}, or {AUTO}; "
                                 f"got {self.kernel!r}") from None
        if self.kernel != AUTO and self.candidates != CANDIDATES:
            # Another kernel fits itself alone: candidates given with it were
            # ignored without a word, and believed compared.
            raise ValueError(f"candidates={self.candidates!r} are compared only under "
                             f"kernel={AUTO!r}; got kernel={self.kernel.name!r}, which is fitted "
                             f"alone. Give kernel={AUTO!r}, or leave candidates out")
        if self.kernel != AUTO:
            sums = len(components(self.kernel)) > 1
            if self.jumps is None:
                object.__setattr__(self, "jumps", True)
            if self.stop_behind is None:
                object.__setattr__(self, "stop_behind", 0.0)
            if self.far_probes is None:
                object.__setattr__(self, "far_probes", True)
            if self.restarts is None:
                object.__setattr__(self, "restarts", default_restarts(self.kernel))
            if self.max_points is None:
                object.__setattr__(self, "max_points", default_max_points(self.kernel))
            if self.max_iterations is None:
                object.__setattr__(self, "max_iterations",
                                   SUM_MAX_ITERATIONS if sums else MAX_ITERATIONS)
        if self.kernel == AUTO:
            if len(set(self.candidates)) < 2 or AUTO in self.candidates:
                raise ValueError("candidates must name at least 2 different kernels "
                                 f"(not auto); got {self.candidates!r}")
            for name in self.candidates:
                try:
                    kernel(name)
                except ValueError:
                    raise ValueError(f"candidate kernel {name!r} is not known; each must be "
                                     f"{SYNTAX}") from None
            # Each is fitted on its own: one named twice costs a second fit and
            # gives the series it wins a bic_margin of 0, against itself. So
            # does a sum named again in another order (periodic+rbf beside
            # rbf+periodic): f = f_1 + f_2 is the same model either way.
            twice = next((name for i, name in enumerate(self.candidates)
                          if name in self.candidates[:i]), None)
            if twice is not None:
                raise ValueError(f"candidates names {twice!r} twice; name each kernel once")
            parts = [sorted(name.split(SUM)) for name in self.candidates]
            again = next(((self.candidates[parts.index(p)], name)
                          for i, (name, p) in enumerate(zip(self.candidates, parts))
                          if parts.index(p) != i), None)
            if again is not None:
                raise ValueError(f"candidates names {again[0]!r} twice, as {again[1]!r} (a sum "
                                 "in another order is the same model); name each kernel once")
        for name in ("restarts", "min_points", "max_points", "batch_size",
                     "max_iterations"):
            value = getattr(self, name)
            if value is None and name in ("restarts", "max_iterations", "max_points"):
                continue  # auto: each candidate's default
            # Counts and sizes index lists and feed int32 graph inputs: a
            # float or string failed far from here, in the fit.
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise ValueError(f"{name} must be a whole number >= 1; got {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be >= 1; got {value!r}")
        # Newton counts its steps in int32: a larger bound wrapped negative
        # and every fit stopped after one step.
        if self.max_iterations is not None and self.max_iterations > INT32_MAX:
            raise ValueError(f"max_iterations must be at most {INT32_MAX} (int32); got "
                             f"{self.max_iterations!r}")
        # Each start is a batch member held in memory: restarts=2**31 took
        # 16 GB within a minute on one 20-point series.
        check_restarts(self.restarts, self.kernel, self.candidates)
        if self.min_points < 2:
            raise ValueError(f"min_points must be >= 2; got {self.min_points}")
        self._check_points(defaulted)
        if self.stop_behind is not None and not (_is_number(self.stop_behind)
                                                 and self.stop_behind >= 0):
            raise ValueError(f"stop_behind must be a number >= 0; got {self.stop_behind!r}")
        for name in ("jumps", "far_probes"):
            if getattr(self, name) not in (None, True, False):
                raise ValueError(f"{name} must be True, False or None; got "
                                 f"{getattr(self, name)!r}")
        if self.probe_check not in (True, False):
            raise ValueError(f"probe_check must be True or False; got {self.probe_check!r}")
        if not (_is_number(self.tolerance) and self.tolerance > 0):
            raise ValueError(f"tolerance must be a number > 0; got {self.tolerance!r}")

    def _check_points(self, defaulted: bool) -> None:
        """Refuses min_points above the max_points in force: every series
        would be skipped. Under auto without max_points, each candidate's
        default is checked here: the candidate's own config raised it only
        when its fitter was built ("gpfit failed unexpectedly")."""
        most, whose = self.max_points, f", {self.kernel_name}'s default" if defaulted else ""
        if self.kernel == AUTO and most is None:
            name = min(self.candidates, key=lambda c: default_max_points(kernel(c)))
            most, whose = default_max_points(kernel(name)), f", {name}'s default"
        if most is not None and most < self.min_points:
            raise ValueError(f"max_points ({most}{whose}) must be >= min_points "
                             f"({self.min_points}); raise max_points or lower min_points")

    @property
    def kernel_name(self) -> str:
        """The kernel's name ("rbf+periodic"), or "auto": what rows, the
        manifest and messages carry."""
        return self.kernel if self.kernel == AUTO else self.kernel.name


def checked(config, maker: str, kernel: str = "rbf") -> "FitConfig":
    """config itself, or a TypeError saying that `maker` (GPFitter, ...)
    takes a FitConfig: a kernel name or a dict failed on its first use."""
    if not isinstance(config, FitConfig):
        raise TypeError(f"config must be a FitConfig, e.g. {maker}(FitConfig(kernel="
                        f"{kernel!r})); got a {type(config).__name__}: {config!r}")
    return config


def _is_number(value) -> bool:
    """Whether value is a real number, not a bool or a string of one."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def default_restarts(k: Kernel) -> int:
    """Default starts for kernel k (not auto): SUM_RESTARTS for a sum,
    whose likelihood has an optimum per candidate period (docs/design.md,
    "Sums of kernels"); BASIN_RESTARTS for a kernel with a length-scale
    grid; 1 for the periodic kernel, whose grid rows are periods."""
    if len(components(k)) > 1:
        return SUM_RESTARTS
    return BASIN_RESTARTS if k.has_length_axis else 1


def most_restarts(k: Union[Kernel, str], candidates=CANDIDATES) -> tuple[int, str]:
    """The most restarts a FitConfig of kernel k (a Kernel, a name or AUTO) takes, and whose start grid
    that is (for messages): the points of k's start grid (starts.grid_shape),
    under AUTO the largest of the candidates' (each candidate then keeps at
    most its own: fitted_configs). A start past them repeats one, or never
    runs (docs/design.md, "Restarts from other basins")."""
    from gpcore.starts import grid_shape

    if k != AUTO:
        k = k if isinstance(k, Kernel) else kernel(k)
        return math.prod(grid_shape(k)), f"{k.name}'s start grid has"
    return (max(math.prod(grid_shape(kernel(name))) for name in candidates),
            "the largest of the candidates' start grids has")


def check_restarts(restarts: Optional[int], k: Union[Kernel, str], candidates=CANDIDATES,
                   option: str = "{}=") -> None:
    """Refuses restarts (None: the defaults, within their grids) past
    `most_restarts`; `option` spells the name as the command ("--{}") or
    fit_frame and FitConfig ("{}=") take it.

    Raises:
      ValueError: naming the most the grid takes.
    """
    most, whose = most_restarts(k, candidates)
    if restarts is None or restarts <= most:
        return
    name = option.format("restarts")
    fewer = f"{name}{most}" if name.endswith("=") else f"{name} {most}"
    raise ValueError(f"{name} ({restarts}) must be at most {most}: {whose} {most} points, "
                     f"and a start past them repeats one; give {fewer} or fewer")


def is_markov(k: Kernel) -> bool:
    """Whether kernel k (not auto) has an exact state-space form, so that
    long series fit in O(n): matern12, matern32, matern52 and sums of them."""
    return all(part.name in MARKOV_KERNELS for part in components(k))


def takes_markov_path(k: Kernel, n_points: int) -> bool:
    """Whether a series of n_points under kernel k (not auto) is fitted
    and predicted in O(n): longer than MARKOV_ABOVE and a Markov kernel
    (docs/design.md, "Long series: Markov kernels")."""
    return n_points > MARKOV_ABOVE and is_markov(k)


def dense_bytes(k: Kernel, restarts: int, n_points: int) -> int:
    """About the most bytes the dense fit of one series of n_points under
    kernel k (not auto) holds with `restarts` starts, all running (at the
    padded length: `_dense_matrices`); a Markov kernel fits past
    MARKOV_ABOVE in O(n), so at most MARKOV_ABOVE points count."""
    from gpcore.batching import padded_length  # it imports this module

    return _dense_matrices(k, restarts) * padded_length(dense_points(k, n_points)) ** 2 * 8


def batch_bytes(k: Kernel, restarts: int, max_points: int, batch_size: int) -> int:
    """About the most bytes one fitter's compiled batch holds with series of
    up to max_points (`dense_bytes` each, all starts running): as many of
    the longest as a batch takes (batch_size, at most MAX_BATCH_ELEMENTS
    members x N x N, at least one), or shorter ones filling it."""
    from gpcore.batching import MAX_BATCH_ELEMENTS, padded_length

    n = padded_length(dense_points(k, max_points))
    longest = min(batch_size, max(1, MAX_BATCH_ELEMENTS // (restarts * n * n)))
    # Shorter series: members x N x N up to the cap, as many as batch_size allows.
    shorter = min(MAX_BATCH_ELEMENTS // restarts, batch_size * n * n)
    return _dense_matrices(k, restarts) * 8 * max(longest * n * n, shorter)


def _dense_matrices(k: Kernel, restarts: int) -> int:
    """N x N matrices the dense fit of one series under kernel k holds at
    its peak with `restarts` starts running."""
    start = SUM_DENSE_START_MATRICES if len(components(k)) > 1 else DENSE_START_MATRICES
    return DENSE_SERIES_MATRICES + restarts * start


# Where machine_memory finds this process's cgroups and their limits.
PROC_ROOT, CGROUP_ROOT = "/proc", "/sys/fs/cgroup"


def machine_memory() -> Optional[int]:
    """This machine's memory in bytes (os.sysconf), or the lowest memory
    limit of this process's cgroup or a parent of it where that is lower:
    cgroup v2's memory.max, v1's memory/memory.limit_in_bytes (a container
    under Docker or Kubernetes on either; a systemd unit's MemoryMax).
    None where os.sysconf is not (Windows): unknown, not checked."""
    if not hasattr(os, "sysconf"):
        return None
    most = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit in _cgroup_limits():
        try:
            with open(limit) as f:
                most = min(most, int(f.read().strip()))
        except (OSError, ValueError):  # none, or "max"
            continue
    return most


def _cgroup_limits() -> list[str]:
    """The memory limit files of this process's cgroups (/proc/self/cgroup)
    and of each of their parents up to the root of the tree mounted here:
    a container sees its own cgroup at the root, where the path listed may
    not exist; no /proc (macOS): none."""
    try:
        with open(os.path.join(PROC_ROOT, "self", "cgroup")) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            top, name = CGROUP_ROOT, "memory.max"  # v2
        elif "memory" in parts[1].split(","):
            top, name = os.path.join(CGROUP_ROOT, "memory"), "memory.limit_in_bytes"  # v1
        else:
            continue
        path = parts[2].strip("/")
        while True:
            found.append(os.path.join(top, path, name) if path else os.path.join(top, name))
            if not path:
                break
            path = os.path.dirname(path)
    return found


def check_memory(config: FitConfig, memory: Optional[int] = None, fitters: int = 1) -> None:
    """Refuses a config whose max_points lets a series fit densely at more
    points than the kernel's default does (`dense_points`; the default, and
    one copied by dataclasses.replace, is not checked) and would let
    `fitters` fitting side by side on this machine (each with its compiled
    batch: `batch_bytes`) need more than `memory` (None: this machine's),
    under auto each candidate's with its starts (`fitted_starts`,
    `check_dense_memory`). Asked where the fit
    runs (a GPFitter's build, a local run's launch), not by FitConfig: a
    Dataflow launcher's memory says nothing of its workers'."""
    for each, starts in fitted_starts(config):
        # One at or below the default asks no more than the default run,
        # which goes on unchecked: refusing it refused a run that lowered
        # its bound (rbf's 4,000, a Markov kernel's 200,000). A batch of
        # shorter series is capped at MAX_BATCH_ELEMENTS, below one series
        # at the default's points.
        if (dense_points(each.kernel, each.max_points)
                > dense_points(each.kernel, default_max_points(each.kernel))):
            check_dense_memory(each.max_points, each.kernel, starts, memory,
                               each.batch_size, fitters)


def fitted_starts(config: FitConfig) -> tuple[tuple[FitConfig, int], ...]:
    """(config, starts) of each GPFitter a fitter for config runs
    (`fitted_configs`): the most Newton starts a series of it runs as batch
    members. Its restarts, but for auto's candidate started from its
    smooth part's fit (`is_started`): the grid's best point and one start
    per period multiple (START_MULTIPLES), whatever its
    restarts (docs/design.md, "The fitter", Memory per series)."""
    if config.kernel != AUTO:
        return ((config, config.restarts),)
    return tuple((each, max(each.restarts, 1 + len(START_MULTIPLES))
                  if is_started(each.kernel, config.candidates) else each.restarts)
                 for each in fitted_configs(config))


def dense_points(k: Kernel, max_points: int) -> int:
    """The most points at which kernel k (not auto) fits a series densely
    under max_points: a Markov kernel fits past MARKOV_ABOVE in O(n)."""
    return min(max_points, MARKOV_ABOVE) if is_markov(k) else max_points


def check_dense_memory(max_points: int, k: Kernel, restarts: int,
                       memory: Optional[int] = None, batch_size: int = 1,
                       fitters: int = 1) -> None:
    """Refuses a max_points at which `fitters` side by side, each holding a
    compiled batch of series of up to max_points under kernel k
    (`batch_bytes`), would need more than `memory` (None: `machine_memory`).

    Raises:
      ValueError: naming max_points, the memory it needs, the most points
        that fit, and what else to lower.
    """
    memory = machine_memory() if memory is None else memory
    if memory is None:  # unknown (Windows: docs/design.md, "Runners and quiet runs")
        return
    need = fitters * batch_bytes(k, restarts, max_points, batch_size)
    if need <= memory:
        return
    matrices = _dense_matrices(k, restarts)
    fits = min(max_points, math.isqrt(memory // (fitters * matrices * 8)))
    while fits > 1 and fitters * batch_bytes(k, restarts, fits, batch_size) > memory:
        fits -= 1
    held = (f"one series' {k.name} fit" if need == fitters * dense_bytes(k, restarts, max_points)
            else f"a compiled batch of {k.name} fits (up to {batch_size} series)")
    held += f" in each of {fitters} fitters side by side" if fitters > 1 else ""
    fewer = (f"give max_points {fits} or less" if fits > 1 else
             "no max_points fits: give a smaller batch_size")
    side = ", fewer fitters side by side (fewer worker processes or cores)" if fitters > 1 else ""
    raise ValueError(
        f"max_points ({max_points}) would let {held} need about "
        f"{need / 2**30:,.1f} GiB ({restarts} start(s): ~{matrices} {max_points} x "
        f"{max_points} float64 matrices a series), more than this machine's "
        f"{memory / 2**30:.1f} GiB; {fewer}{side}, fewer restarts, a kernel that fits long "
        f"series in O(n) ({', '.join(MARKOV_KERNELS)}), or aggregate the series to fewer points")


def default_max_points(k: Kernel) -> int:
    """The default max_points of kernel k (not auto)."""
    return MARKOV_MAX_POINTS if is_markov(k) else DENSE_MAX_POINTS


def fitted_configs(config: FitConfig) -> tuple[FitConfig, ...]:
    """The configs of the GPFitters a fitter for config runs: one per
    candidate under auto (each with its own default restarts, AUTO_BASIN_RESTARTS
    for a single kernel with a length-scale grid, or the restarts asked up to
    its own start grid's points, far_probes AUTO_FAR_PROBES,
    and jumps off, stop_behind STARTED_STOP_BEHIND and at most
    STARTED_BATCH_SIZE series a call where it `is_started`), else itself."""
    if config.kernel != AUTO:
        return (config,)
    candidates = [kernel(name) for name in config.candidates]
    started = [is_started(k, config.candidates) for k in candidates]
    # The restarts asked are checked against the largest candidate's grid
    # (check_restarts); a candidate with a smaller grid keeps at most its
    # own grid's points: a start past them is never active, yet was a batch
    # member of every series (linear under restarts=40: 10 times the
    # members, smaller compiled batches, Batching charging 40 starts), the
    # fits the same (docs/design.md, "The fitter", Restarts past a
    # candidate's grid).
    return tuple(dataclasses.replace(
        config, kernel=k, candidates=CANDIDATES,  # a lone kernel's: it chooses none
        restarts=AUTO_BASIN_RESTARTS if config.restarts is None and k.has_length_axis
        and len(components(k)) == 1 else config.restarts and min(config.restarts,
                                                                 most_restarts(k)[0]),
        jumps=not s if config.jumps is None else config.jumps,
        stop_behind=(STARTED_STOP_BEHIND if s else 0.0) if config.stop_behind is None
        else config.stop_behind,
        far_probes=AUTO_FAR_PROBES if config.far_probes is None else config.far_probes,
        tolerance=max(config.tolerance, STARTED_TOLERANCE) if s and STARTED_TOLERANCE
        else config.tolerance,
        batch_size=min(config.batch_size, STARTED_BATCH_SIZE) if s else config.batch_size)
        for k, s in zip(candidates, started))


def smooth_part(k: Kernel) -> str:
    """The name of kernel k's non-periodic components, joined: "matern52"
    of matern52+periodic ("" where every component is periodic)."""
    return SUM.join(part.name for part in components(k) if not part.has_period)


def is_started(k: Kernel, candidates) -> bool:
    """Whether auto's candidate k starts from its smooth part's fit
    (gpcore/choice.py's periodic_starts) rather than its grid's restarts: it
    has a period, and its smooth part is one of the candidates' names."""
    return k.has_period and smooth_part(k) in candidates


def at_search(search: str, **settings) -> FitConfig:
    """FitConfig(**settings) at a search depth (SEARCHES): their kernel
    (FitConfig's default, rbf, where they name none) with
    `search_settings`' probes.

    Raises:
      ValueError: an unknown search or kernel, or a setting FitConfig refuses.
    """
    return FitConfig(**settings,
                     **search_settings(search, settings.get("kernel", FitConfig.kernel)))


def search_settings(search: str, k: Union[Kernel, str]) -> dict:
    """FitConfig's settings for a search depth (SEARCHES) of kernel k (a
    Kernel, a name or AUTO): THOROUGH keeps FitConfig's default (far probes
    for a lone kernel, none under auto); for a lone kernel with a
    length-scale grid (rbf, the Materns) BALANCED runs the far probes only
    where the fit fails the residual check (probe_check) and QUICK turns
    them off; the others fit as under THOROUGH.

    Raises:
      ValueError: not one of SEARCHES, or k names no kernel.
    """
    if search not in SEARCHES:
        raise ValueError(f"search must be one of {', '.join(SEARCHES)}; got {search!r}")
    if search == THOROUGH or k == AUTO:
        return {}
    lone = k if isinstance(k, Kernel) else kernel(k)
    if not lone.has_length_axis:
        return {}
    return {"probe_check": True} if search == BALANCED else {"far_probes": False}
