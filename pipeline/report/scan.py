"""Checks the input and the params, then streams the params once.

Everything a user can get wrong is found here, before TensorFlow and
matplotlib are loaded and before anything is drawn or written: the input
(pipeline.io.inputs.inspect), the params folder, and --series ids that are
not in the params. The one pass counts (summary.Tally) and samples
(sample.Sampler) at the same time.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

from pipeline.io.errors import UsageError
from pipeline.io.inputs import Columns, InputSpec, inspect
from pipeline.report import params as params_io
from pipeline.report.sample import Sampler
from pipeline.report.summary import Tally

# Plots a page holds at most (--series ids, --random and --worst): each is
# about 26 KB of the page and 0.3 s of drawing, so 1,000 are a 26 MB page in
# about five minutes; --random 1000000000 plotted every series of the run,
# hours and gigabytes for a 50,000-series run, held in memory until written,
# and 2,000 --series ids (a list through xargs) a 52 MB page.
MAX_PLOTS = 1000


@dataclasses.dataclass(frozen=True)
class ReportOptions:
    """What to report on, and which series to plot."""

    input: str
    params: str
    columns: Columns = Columns()
    series: Sequence[str] = ()
    random: int = 6
    worst: int = 3
    seed: int = 0


@dataclasses.dataclass
class Scan:
    """A checked run after one pass over its params."""

    options: ReportOptions
    spec: InputSpec
    run: params_io.ParamsRun
    tally: Tally
    sampler: Sampler


def scan(options: ReportOptions,
         manifest_of: Optional[Callable[[], params_io.Manifest]] = None) -> Scan:
    """Checks the input and params and makes the first pass over the params;
    manifest_of: the run's manifest, as the command read it (params.locate).

    Raises:
      UsageError (incl. InputError): the input or the params cannot be used,
        a --series is not in the params, --random, --worst or --seed is
        negative, or --series, --random and --worst ask for more than
        MAX_PLOTS plots.
    """
    if options.random < 0 or options.worst < 0:
        raise UsageError(f"--random and --worst must be >= 0; got {options.random} "
                         f"and {options.worst}")
    _check_plots(options.random, options.worst, len(set(map(str, options.series))))
    if options.seed < 0:  # as numpy's generators, which drew the sample before
        raise UsageError(f"--seed must be >= 0; got {options.seed}")
    spec = inspect(options.input, options.columns)
    run = params_io.locate(options.params, manifest_of)
    tally = Tally()
    sampler = Sampler(options.series, options.random, options.worst, options.seed)
    for batch in params_io.iter_batches(run):
        tally.add(batch)
        sampler.add(batch)
    missing = sampler.missing()
    if missing:
        shown = ", ".join(repr(m) for m in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise UsageError(f"--series {shown} not in the params in {options.params} "
                         f"({tally.rows:,} series); check the id and the --params folder")
    return Scan(options, spec, run, tally, sampler)


def _check_plots(random: int, worst: int, named: int = 0) -> None:
    """Refuses --random and --worst (each >= 0) and `named` distinct
    --series ids past MAX_PLOTS together, saying how far to lower them (a
    series picked twice is drawn once: the bound is the most drawn)."""
    if random + worst + named <= MAX_PLOTS:
        return
    if named:
        advice = (f"give --random and --worst together at most {MAX_PLOTS - named:,}"
                  if named < MAX_PLOTS else
                  f"give at most {MAX_PLOTS:,} --series ids, and --random 0 --worst 0")
        raise UsageError(f"--series ({named:,} ids), --random {random} and --worst {worst} ask "
                         f"for more plots than a page holds: at most {MAX_PLOTS:,} together "
                         "(each plot is about 26 KB of the page and 0.3 s to draw); " + advice)
    flag, given, other = ("--random", random, worst) if random >= worst else (
        "--worst", worst, random)
    raise UsageError(f"{flag} {given} asks for more plots than a page holds: --random and "
                     f"--worst together at most {MAX_PLOTS:,} (each plot is about 26 KB of the "
                     f"page and 0.3 s to draw); give {flag} {max(MAX_PLOTS - other, 0)} or "
                     "fewer, or --series ID for the series you want to see")
