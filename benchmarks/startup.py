"""The fixed cost of a `gpfit` run, phase by phase, on a tiny input.

Each round runs, in a fresh process, the steps the `gpfit` command takes
(pipeline/cli.py), in its order, stamping CPU and wall seconds after each:

  interpreter        Python's own start, to the first line of the child
  cli imports        `import pipeline.cli`: Beam, pyarrow, numpy, gpfit's modules
  parse options      parse_options (Beam's and gpfit's flags)
  tf imports         TensorFlow and TFP (builder.import_tensorflow), which
                     builder.build loads after the cheap checks
  checks + graph     build_from_options: inspect the input's footers, check
                     the output folder and its lock, construct the Beam graph
  clear output       the previous run's files
  beam job           pipeline.run() to DONE: start the runner, read, build
                     the fitter, fit (the first call traces), write, manifest
    of which fits    the job's fit calls (the manifest's fit_ms_per_series)
  report             manifest.read
  trace, alone       a second fitter in this process: its first fit call of
                     one series less its second (the trace and first run)

Rounds alternate with the whole command (`python -m pipeline`, timed from
outside), so the table's sum can be held against it, and each is run
twice: tracing (GPFIT_TRACE_CACHE=off) and loading the trace that an
earlier run kept (a cache folder filled by one run before the rounds). Exit is not timed in
the child: the command leaves with os._exit (docs/design.md, "Start-up").

Usage: python benchmarks/startup.py [--count 10] [--rounds 3]
Prints a markdown table (median over rounds) and the machine's load.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from gpcore import threads  # noqa: E402  (nothing heavy: before numpy loads)

threads.set_process_env()


def child(folder: str, output: str, started_wall: float) -> None:
    """The command's steps in one process; prints one JSON line of stamps."""
    stamps = [("interpreter", time.process_time(), time.time() - started_wall)]
    last = {"cpu": time.process_time(), "wall": time.perf_counter()}
    phases = {"interpreter": (stamps[0][1], stamps[0][2])}

    def stamp(name):
        cpu, wall = time.process_time(), time.perf_counter()
        phases[name] = (cpu - last["cpu"], wall - last["wall"])
        last.update(cpu=cpu, wall=wall)

    from pipeline import builder, cli, logs, runtime  # noqa: F401  (the command's imports)
    from pipeline.io import manifest, outputs
    from pipeline.options import parse_options
    stamp("cli imports")
    logs.configure_logs("warning")
    options = parse_options(["--input", folder, "--output", output])
    stamp("parse options")
    builder.import_tensorflow()
    stamp("tf imports")
    built = builder.build_from_options(options)
    stamp("checks + graph")
    # As the command does, under its lock: the folder listed again, then cleared.
    outputs.clear_output(built.gp.output, outputs.check_output(built.gp.output, built.spec.files),
                         built.tables)
    stamp("clear output")
    built.pipeline.run().wait_until_finish()
    stamp("beam job")
    _, found = manifest.read(output)
    stamp("report")
    phases["  of which fits"] = (None, found["fit_ms_per_series"]["sum"] / 1000.0)
    from gpcore import FitConfig, GPFitter, Series
    from workloads import workload
    one = workload("a", 1)
    fitter = GPFitter(FitConfig(), name="startup_probe")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    fitter.fit(one)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    fitter.fit([Series(s.series_id, s.t, s.y) for s in one])
    cpu2, wall2 = time.process_time(), time.perf_counter()
    phases["trace, alone"] = ((cpu1 - cpu0) - (cpu2 - cpu1), (wall1 - wall0) - (wall2 - wall1))
    print("STAMPS " + json.dumps(phases), flush=True)
    sys.stdout.flush()
    os._exit(0)


def run_child(folder: str, output: str, env: dict) -> dict:
    started = time.time()
    out = subprocess.run([sys.executable, __file__, "--child", folder, output, repr(started)],
                         env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    line = next(li for li in out.stdout.splitlines() if li.startswith("STAMPS "))
    return json.loads(line[len("STAMPS "):])


def run_command(folder: str, output: str, env: dict) -> tuple[float, float]:
    """(wall s, CPU s of the child) of the whole `gpfit` command."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", "--input", folder, "--output", output],
                   env=env, cwd=ROOT, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user
                  + after.children_system - before.children_system)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/startup.py", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--count", type=int, default=10, help="series of workload a")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, HERE)
    if args.child:
        child(args.child[0], args.child[1], float(args.child[2]))
    import numpy as np
    from nightly import write_long
    from workloads import workload

    scratch = tempfile.mkdtemp(prefix="gpfit-startup-")
    folder = os.path.join(scratch, "series")
    write_long(folder, {s.series_id: (np.asarray(s.t), np.asarray(s.y))
                        for s in workload("a", args.count)})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, HERE, os.environ.get("PYTHONPATH")) if p))
    # Each round twice: tracing (the cache off) and loading the trace a
    # previous run kept (gpcore/trace_cache.py), filled by one run first.
    modes = {"traced": dict(env, GPFIT_TRACE_CACHE="off"),
             "trace kept": dict(env, GPFIT_TRACE_CACHE=os.path.join(scratch, "traces"))}
    run_command(folder, os.path.join(scratch, "fill"), modes["trace kept"])
    load_before = os.getloadavg()
    rounds = {mode: [] for mode in modes}
    commands = {mode: [] for mode in modes}
    for k in range(args.rounds):
        for mode, mode_env in modes.items():
            tag = f"{k}-{mode.replace(' ', '-')}"
            rounds[mode].append(run_child(folder, os.path.join(scratch, f"out-{tag}"), mode_env))
        for mode, mode_env in modes.items():
            tag = f"{k}-{mode.replace(' ', '-')}"
            commands[mode].append(run_command(folder, os.path.join(scratch, f"cmd-{tag}"), mode_env))
    load_after = os.getloadavg()
    med = lambda xs: statistics.median(xs) if xs and xs[0] is not None else None  # noqa: E731
    print(f"`python benchmarks/startup.py --count {args.count} --rounds {args.rounds}`; "
          f"{os.cpu_count()} CPUs, load (1 min) {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after; medians over the rounds\n")
    print("| phase | " + " | ".join(f"{m}: CPU s | {m}: wall s" for m in modes) + " |\n|---|"
          + "--:|--:|" * len(modes))
    fmt = lambda x: "–" if x is None else f"{x:.2f}"  # noqa: E731
    totals = {mode: [0.0, 0.0] for mode in modes}
    for name in rounds["traced"][0]:
        cells = []
        for mode in modes:
            cpu = med([r[name][0] for r in rounds[mode]])
            wall = med([r[name][1] for r in rounds[mode]])
            if not name.startswith(" ") and name != "trace, alone":
                totals[mode][0] += cpu or 0.0
                totals[mode][1] += wall
            cells += [fmt(cpu), fmt(wall)]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| **sum of the phases** | " + " | ".join(
        f"{cpu:.2f} | {wall:.2f}" for cpu, wall in totals.values()) + " |")
    print("| **whole command** (from outside, exit included) | " + " | ".join(
        f"{med([c[1] for c in commands[m]]):.2f} | {med([c[0] for c in commands[m]]):.2f}"
        for m in modes) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
