"""gpfit against a competent scikit-learn user: speed, memory and fit quality.
`make bench` runs it; `--help` lists the options.

Contenders, each in a process tree of its own (its memory is its own):
  gpcore    the fitter in one process, --threads copies side by side with one
            TF intra-op thread each (as the gpfit command runs them);
            series/s over the fits only, the one-off import + build + trace
            reported apart.
  pipeline  the `gpfit` command, Parquet -> Parquet on the local runner with
            --pipeline-workers worker processes; series/s over the whole command,
            start-up included; its trace cache (gpcore/trace_cache.py) empty.
  pipeline-warm
            the same command again with the trace cache the cold run filled,
            as a nightly job on one machine runs (and as jax-warm).
  sklearn   the competent peer of benchmarks/peers.py (initial length scale
            span/10, bounds span/1000 to 10 x span, normalize_y, L-BFGS-B) per
            series in a Pool of --processes processes with one BLAS thread
            each; series/s over pool + fits.

  jax-cold, jax-warm
            the JAX peer of benchmarks/jax_peer.py (needs the jaxbench
            extra; left out with a note where jax is not installed): 2
            processes of 1 thread; cold = an empty persistent compilation
            cache, warm = the same cache again; series/s over the whole
            process, its fitting time without compilation in the notes.
            One start at 0.03 of the span (jax_peer.START_LENGTHS: the
            start that meets the quality target; its first form started
            at a tenth: --jax-start-lengths 0.1; docs/design.md, "The JAX
            peer").

Each workload runs --rounds rounds, interleaved (sklearn, gpcore, JAX cold,
JAX warm, the gpfit command cold and warm), the load average printed before each; the
main table is round 1's, the round table has every round's wall times.

R is the peer's starts per series: sklearn gets n_restarts_optimizer = R - 1.
With --restarts auto (the default) gpcore and the pipeline run with their
default starts (FitConfig: for rbf up to 3, the grid's best point and its
other basins, the restarts only where the grid shows one), whatever R; with
a list, with R. Quality of gpcore and pipeline is judged per series against
sklearn at the same R. --search quick runs gpcore and the pipeline without the
far probes, --search balanced with them only where a fit fails the residual
check (the command's --search; docs/design.md, "Quick search", "Balanced
search"). Then a
real-data quality line: gpcore with FitConfig's defaults (and --search)
against sklearn at 4 starts on benchmarks/realdata.py's series. Results: a
markdown table on stdout and in RESULTS_DIR/latest.md, everything measured in
latest.json, a chart in speed.png.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.metadata
import json
import os
import platform
import shlex
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

# gpfit's process settings (one BLAS thread) before numpy loads, for this
# process and, through self.env, the contenders it starts.
from gpcore import threads  # noqa: E402  (nothing heavy)

threads.set_process_env()

import jax_peer  # noqa: E402  (numpy only until a peer process imports JAX)
import peers  # noqa: E402
import quality  # noqa: E402
import report  # noqa: E402
from measure import Measured, run_measured  # noqa: E402

from gpcore.config import MAX_ITERATIONS, SEARCHES, THOROUGH, FitConfig  # noqa: E402  (defaults; no TensorFlow)

AUTO_RESTARTS = (1, 2, 3)
# Series per workload in a full run: b's 1,024-point fits cost ~40x a's.
DEFAULT_COUNTS = {"a": 4000, "b": 50, "c": 1000}
PACKAGES = ("tensorflow", "tensorflow-probability", "apache-beam", "scikit-learn", "numpy",
            "jax", "optax")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="benchmarks/speed.py",
        description="Benchmark gpcore, the gpfit pipeline and a competent "
                    "scikit-learn user; fit quality on real series.")
    parser.add_argument("--workloads", default="a,b",
                        help="comma-separated workloads from benchmarks/workloads.py, among "
                             "a, b, c (default %(default)s)")
    parser.add_argument("--count", type=int, default=None,
                        help="only the first N series of each workload, and N spread over "
                             "the real-data set (quick runs; default: "
                             + ", ".join(f"{w} {n}" for w, n in DEFAULT_COUNTS.items())
                             + ", all real series)")
    parser.add_argument("--restarts", default="auto",
                        help="starts per series: a comma list (each measured, for both "
                             "sides; the pipeline runs the smallest that meets the quality "
                             "target), or 'auto': gpcore and the pipeline at their default "
                             f"starts, the peer at {', '.join(map(str, AUTO_RESTARTS))} in "
                             "turn until gpcore meets it (default %(default)s)")
    parser.add_argument("--skip-pipeline", action="store_true", help="leave out the pipeline")
    parser.add_argument("--skip-jax", action="store_true", help="leave out the JAX peer")
    parser.add_argument("--jax-start-lengths",
                        default=",".join(map(str, jax_peer.START_LENGTHS)),
                        help="the JAX peer's start length scales, spans, comma-separated "
                             "(jax_peer.py --start-lengths; default %(default)s)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="interleaved rounds of every contender per workload "
                             "(default %(default)s)")
    parser.add_argument("--skip-realdata", action="store_true",
                        help="leave out the real-data quality line")
    parser.add_argument("--threads", type=int, default=2,
                        help="fitter copies (threads) of the gpcore contender (default %(default)s)")
    parser.add_argument("--processes", type=int, default=2,
                        help="sklearn pool processes (default %(default)s)")
    parser.add_argument("--pipeline-workers", type=int, default=1,
                        help="pipeline worker processes (--direct_num_workers, multi_processing); "
                             "1: the pipeline's default single process (default %(default)s)")
    parser.add_argument("--search", choices=SEARCHES, default=THOROUGH,
                        help="gpcore's and the pipeline's search depth (FitConfig.far_probes "
                             "and probe_check: the command's --search; default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=FitConfig.batch_size,
                        help="FitConfig.batch_size, gpcore and pipeline (default %(default)s)")
    parser.add_argument("--tolerance", type=float, default=FitConfig.tolerance,
                        help="FitConfig.tolerance, gpcore only (default %(default)s)")
    parser.add_argument("--max-iterations", type=int, default=MAX_ITERATIONS,
                        help="FitConfig.max_iterations, gpcore only (default %(default)s)")
    parser.add_argument("--reuse-sklearn", action="store_true",
                        help="reuse sklearn results cached by an earlier run with the same "
                             "workload, count and R (marked 'cached'; for sweeping gpcore levers)")
    parser.add_argument("--results-dir", default=os.path.join(HERE, "results"),
                        help="where latest.md, latest.json, speed.png and logs go "
                             "(default benchmarks/results)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds before a contender is killed (default %(default)s)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds: at least 1; got {args.rounds}")
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    bad = [w for w in args.workloads if w not in ("a", "b", "c")]
    if bad:
        parser.error(f"--workloads: expected names among a, b, c; got {','.join(bad)}")
    if args.restarts != "auto":
        try:
            args.restarts = sorted({int(r) for r in args.restarts.split(",")})
        except ValueError:
            parser.error(f"--restarts: expected 'auto' or integers like 1,3; got {args.restarts!r}")
        if args.restarts[0] < 1:
            parser.error("--restarts: every R must be >= 1")
    return args


def _jax_missing():
    """None if the JAX peer's packages are installed, else why it cannot run."""
    import importlib.util

    absent = [m for m in ("jax", "jaxlib", "optax") if importlib.util.find_spec(m) is None]
    return (f"{', '.join(absent)} not installed (bench-only: pip install -e '.[jaxbench]')"
            if absent else None)


def _manifest_summary(output: str) -> dict:
    """Fitting time, fitter builds and traces from the run's _SUCCESS.json
    (whatever of them it records): where the pipeline's time went."""
    try:
        with open(os.path.join(output, "_SUCCESS.json")) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return {}
    fit_ms = record.get("fit_ms_per_series") or {}
    summary = {"fitters_built": record.get("fitters_built"),
               "traces_max": record.get("tracing_count_max")}
    if isinstance(fit_ms, dict) and fit_ms.get("sum") is not None:
        summary["fit_s_summed"] = fit_ms["sum"] / 1000.0
    return summary


class Bench:
    """One benchmark run: its scratch folder, environment and measured rows."""

    def __init__(self, args):
        self.args = args
        os.makedirs(os.path.join(args.results_dir, "logs"), exist_ok=True)
        os.makedirs(os.path.join(args.results_dir, "sklearn-cache"), exist_ok=True)
        self.scratch = tempfile.mkdtemp(prefix="gpfit-bench-")
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
        threads.set_process_env(self.env)  # gpfit's process settings, one BLAS thread
        # gpcore traces in every process; the command's runs name their own
        # trace cache (pipeline()), never the user's.
        self.env["GPFIT_TRACE_CACHE"] = "off"
        self.rows: list[report.Row] = []
        self.notes: list[str] = []
        self.problems: list[str] = []
        self._tiny = None  # 2 series, for the pipeline's start-up time
        self.collect = True  # rows of round 1 go to the main table; later rounds' do not
        self.rounds: list[dict] = []  # {"workload", "round", "load", contender: Row}
        self.jax_missing = None if args.skip_jax else _jax_missing()
        self.real = None  # quality.Comparison.to_json() on the real-data set

    # ---- running ----------------------------------------------------------

    def _log(self, name):
        return os.path.join(self.args.results_dir, "logs", f"{name}.log")

    def _contender(self, kind: str, name: str, spec: dict, env=None):
        """Runs contenders.py KIND; returns (its JSON output or None, Measured)."""
        spec_path = os.path.join(self.scratch, f"{name}.spec.json")
        out_path = os.path.join(self.scratch, f"{name}.out.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        measured = run_measured(
            [sys.executable, os.path.join(HERE, "contenders.py"), kind, spec_path, out_path],
            env or self.env, ROOT, self._log(name), self.args.timeout)
        if not self._succeeded(name, measured) or not os.path.exists(out_path):
            return None, measured
        with open(out_path) as f:
            return json.load(f), measured

    def _succeeded(self, name: str, measured: Measured) -> bool:
        if measured.returncode == 0 and not measured.timed_out:
            return True
        with open(self._log(name), errors="replace") as f:
            tail = f.read()[-2000:]
        why = "timed out" if measured.timed_out else f"exit {measured.returncode}"
        self.problems.append(f"{name}: {why}; log {self._log(name)}")
        print(f"!! {name} {why}; last lines of {self._log(name)}:\n{tail}", file=sys.stderr)
        return False

    def prepare(self, workload: str, count) -> dict:
        name = f"{workload}-{count or 'all'}"
        spec = {"workload": workload, "count": count,
                "data": os.path.join(self.scratch, f"{name}.npz"),
                "parquet": os.path.join(self.scratch, f"{name}-parquet")}
        out, _ = self._contender("prepare", f"prepare-{name}", spec)
        if out is None:
            raise SystemExit(f"could not generate workload {workload}; see {self._log('prepare-' + name)}")
        return {**spec, **out}

    def _ours(self, restarts: int):
        """gpcore's and the pipeline's starts when the peer has `restarts`:
        None (their defaults) under --restarts auto."""
        return None if self.args.restarts == "auto" else restarts

    def gpcore(self, workload: str, data: dict, restarts: int):
        spec = {"data": data["data"], "restarts": self._ours(restarts), "threads": self.args.threads,
                "batch_size": self.args.batch_size, "tolerance": self.args.tolerance,
                "search": self.args.search,
                "max_iterations": self.args.max_iterations}
        out, m = self._contender("gpcore", f"{workload}-gpcore-R{restarts}", spec)
        if out is None:
            return None
        return self._add(report.Row(
            workload, "gpcore", restarts, len(out["ids"]), out["timing"]["fit_s"], "fits only",
            out["timing"]["one_off_s"], m.wall_s, m.tree_peak_mb, m.largest_process_mb,
            dict(zip(out["ids"], out["nll"])), {**out["info"], "timing": out["timing"]}))

    def sklearn(self, workload: str, data: dict, restarts: int):
        version = importlib.metadata.version("scikit-learn")
        # The peer's set-up is part of the key: results of another set-up never match.
        peer = hashlib.sha1(peers.DESCRIPTION.encode()).hexdigest()[:8]
        cache = os.path.join(self.args.results_dir, "sklearn-cache",
                             f"{workload}-{len(data['ids'])}-R{restarts}-"
                             f"p{self.args.processes}-{version}-{peer}.json")
        if self.args.reuse_sklearn and os.path.exists(cache):
            with open(cache) as f:
                row = report.Row(**{k: v for k, v in json.load(f).items()
                                    if k not in ("gaps", "series_per_s", "speedup")})
            row.info["cached"] = True
            self.notes.append(f"sklearn on {workload} at R={restarts} reused from {cache} "
                              f"(measured {row.info.get('measured_at', '?')}).")
            return self._add(row)
        env = dict(self.env, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1")
        spec = {"data": data["data"], "restarts": restarts, "processes": self.args.processes}
        out, m = self._contender("sklearn", f"{workload}-sklearn-R{restarts}", spec, env)
        if out is None:
            return None
        info = {**out["info"], "timing": out["timing"],
                "measured_at": datetime.datetime.now().isoformat(timespec="seconds")}
        if info["blas_threads_max"] != 1:
            self.problems.append(f"sklearn workers ran {info['blas_threads_max']} BLAS threads, "
                                 "not 1 (threadpoolctl)")
        row = report.Row(
            workload, "sklearn", restarts, len(out["ids"]), out["timing"]["fit_s"],
            "pool + fits", out["timing"]["one_off_s"], m.wall_s, m.tree_peak_mb,
            m.largest_process_mb, dict(zip(out["ids"], out["nll"])), info)
        with open(cache, "w") as f:
            json.dump(row.to_json(), f)
        return self._add(row)

    def pipeline(self, workload: str, data: dict, restarts: int, traces: str,
                 startup: bool = True, warm: bool = False):
        """The gpfit command on the workload's Parquet; whole command timed.
        `traces`: its trace cache folder (gpcore/trace_cache.py), empty for
        the cold run ("pipeline"), filled by it for the warm one
        ("pipeline-warm"), as the JAX peer's compilation cache is."""
        import pyarrow.parquet as pq

        # Start-up cost alone: the same command on the first 2 series of a,
        # just before, so that both see about the same load on the machine.
        one_off = None
        if startup:
            if self._tiny is None:
                self._tiny = self.prepare("a", 2)
            measured, _ = self._run_pipeline(f"{workload}-pipeline-startup-R{restarts}",
                                             self._tiny, restarts, "off")
            one_off = measured.wall_s if measured else None
        contender = "pipeline-warm" if warm else "pipeline"
        measured, output = self._run_pipeline(f"{workload}-{contender}-R{restarts}", data,
                                              restarts, traces)
        if measured is None:
            return None
        table = pq.read_table(output, columns=["series_id", "status", "nll"]).to_pydict()
        nll = {i: (v if s == "ok" else None)
               for i, s, v in zip(table["series_id"], table["status"], table["nll"])}
        missing = set(data["ids"]) - set(nll)
        if missing:
            self.problems.append(f"pipeline on {workload}: {len(missing)} series missing "
                                 "from the output")
        info = {"statuses": {s: table["status"].count(s) for s in set(table["status"])},
                "workers": self.args.pipeline_workers,
                **_manifest_summary(output)}
        return self._add(report.Row(
            workload, contender, restarts, len(data["ids"]), measured.wall_s,
            "whole command", one_off, measured.wall_s,
            measured.tree_peak_mb, measured.largest_process_mb, nll, info))

    def _run_pipeline(self, name: str, data: dict, restarts: int, traces: str):
        output = os.path.join(self.scratch, f"{name}-output")
        command = [sys.executable, "-m", "pipeline", "--input", data["parquet"],
                   "--output", output, "--kernel", "rbf", "--batch_size", str(self.args.batch_size),
                   "--search", self.args.search]
        if self._ours(restarts) is not None:
            command += ["--restarts", str(restarts)]
        if self.args.pipeline_workers > 1:
            command += ["--direct_num_workers", str(self.args.pipeline_workers),
                        "--direct_running_mode", "multi_processing"]
        env = dict(self.env, GPFIT_TRACE_CACHE=traces)
        measured = run_measured(command, env, ROOT, self._log(name), self.args.timeout)
        if not self._succeeded(name, measured):
            return None, output
        return measured, output

    def _add(self, row):
        if self.collect:
            self.rows.append(row)
        return row

    def jax(self, workload: str, data: dict, restarts: int, warm: bool, cache: str):
        """The JAX peer's whole process on the workload, its compilation cache
        in `cache` (empty for cold); compared with sklearn at `restarts`."""
        name = f"{workload}-jax-{'warm' if warm else 'cold'}-R{restarts}"
        out_path = os.path.join(self.scratch, f"{name}.out.json")
        measured = run_measured(
            [sys.executable, os.path.join(HERE, "jax_peer.py"), data["data"], out_path,
             "--cache-dir", cache, "--start-lengths", self.args.jax_start_lengths],
            self.env, ROOT, self._log(name), self.args.timeout)
        if not self._succeeded(name, measured) or not os.path.exists(out_path):
            return None
        with open(out_path) as f:
            out = json.load(f)
        info = {k: v for k, v in out["info"].items() if k != "nll_jax"}
        info["timing"] = {k: v for k, v in out["timing"].items() if k != "workers"}
        # gpfit's own likelihood check: numpy's nll and JAX's at the same parameters.
        both = [(a, b) for a, b in zip(out["nll"], out["info"]["nll_jax"]) if a is not None]
        info["nll_numpy_vs_jax_max"] = max((abs(a - b) for a, b in both), default=None)
        return self._add(report.Row(
            workload, "jax-warm" if warm else "jax-cold", restarts, len(out["ids"]),
            measured.wall_s, "whole process", out["timing"]["one_off_s"], measured.wall_s,
            measured.tree_peak_mb, measured.largest_process_mb,
            dict(zip(out["ids"], out["nll"])), info))

    def round(self, workload: str, data: dict, restarts: int, k: int, first: dict):
        """Round k of every contender on the workload, interleaved; `first`
        holds the rows round 1 already measured (sklearn, gpcore)."""
        entry = {"workload": workload, "round": k, "load": os.getloadavg()[0], **first}
        print(f"   round {k} (load {entry['load']:.1f}):", flush=True)
        if "sklearn" not in entry:
            entry["sklearn"] = self.sklearn(workload, data, restarts)
        if "gpcore" not in entry:
            entry["gpcore"] = self.gpcore(workload, data, restarts)
        if not self.args.skip_jax and self.jax_missing is None:
            cache = os.path.join(self.scratch, f"jax-cache-{workload}-{k}")
            os.makedirs(cache, exist_ok=True)
            entry["jax-cold"] = self.jax(workload, data, restarts, False, cache)
            entry["jax-warm"] = self.jax(workload, data, restarts, True, cache)
        if not self.args.skip_pipeline:
            traces = os.path.join(self.scratch, f"gpfit-traces-{workload}-{k}")
            entry["pipeline"] = self.pipeline(workload, data, restarts, traces, startup=(k == 1))
            entry["pipeline-warm"] = self.pipeline(workload, data, restarts, traces,
                                                   startup=False, warm=True)
        entry["load_after"] = os.getloadavg()[0]
        print("     " + ", ".join(f"{c} {r.wall_s:.1f} s" for c, r in entry.items()
                                  if isinstance(r, report.Row)), flush=True)
        self.rounds.append(entry)

    # ---- the run ------------------------------------------------------------

    def run(self):
        args = self.args
        self.chosen = {}
        for workload in args.workloads:
            data = self.prepare(workload, args.count or DEFAULT_COUNTS[workload])
            print(f"== workload {workload}: {len(data['ids'])} series, "
                  f"{data['finite_points']} of {data['points']} points observed", flush=True)
            candidates = AUTO_RESTARTS if args.restarts == "auto" else args.restarts
            chosen = None
            for restarts in candidates:
                theirs = self.sklearn(workload, data, restarts)
                ours = self.gpcore(workload, data, restarts)
                if theirs is None or ours is None:
                    continue
                q = report.quality(report.quality_gaps(ours.nll, theirs.nll))
                print(f"   R={restarts}: gpcore {ours.series_per_s:.2f} series/s, sklearn "
                      f"{theirs.series_per_s:.2f} series/s; {100 * q['share_within']:.1f} % "
                      f"of series within {report.QUALITY_GAP}", flush=True)
                if q["met"] and chosen is None:
                    chosen = restarts
                    if args.restarts == "auto":
                        break
            if chosen is None:
                chosen = candidates[-1]
                self.notes.append(f"Workload {workload}: no R tried met the quality target; "
                                  f"the pipeline ran with R={chosen}.")
            self.chosen[workload] = chosen
            first = {c: r for r in self.rows
                     if r.workload == workload and r.restarts == chosen
                     for c in [r.contender]}
            for k in range(1, args.rounds + 1):
                self.collect = k == 1
                self.round(workload, data, chosen, k, first if k == 1 else {})
            self.collect = True
        report.compare(self.rows)
        for entry in self.rounds:
            report.compare([r for r in entry.values() if isinstance(r, report.Row)])
        if self.jax_missing:
            self.notes.append(f"JAX peer left out: {self.jax_missing}")
        if not args.skip_realdata:
            self.realdata()

    def realdata(self):
        """gpcore's defaults against sklearn at 4 starts on the real series."""
        out, measured = self._contender("realdata", "realdata",
                                        {"count": self.args.count, "threads": self.args.threads,
                                         "search": self.args.search})
        if out is not None:
            out["wall_s"], out["search"] = measured.wall_s, self.args.search
            self.real = out
            print(f"== real data: {len(out['ids'])} series, "
                  f"{100 * out['share_within']:.1f} % within {report.QUALITY_GAP}", flush=True)


def header(args, argv, load_before, load_after) -> str:
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    fmt = lambda load: " / ".join(f"{x:.2f}" for x in load)  # noqa: E731
    return "\n".join([
        f"Measured {datetime.datetime.now().isoformat(timespec='seconds')} with "
        f"`python benchmarks/speed.py {shlex.join(argv)}`",
        "",
        f"- machine: {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}; "
        + ", ".join(versions),
        f"- load average (1 / 5 / 15 min) before: {fmt(load_before)}; after: {fmt(load_after)} "
        f"(other work on this machine slows every contender)",
        f"- gpcore: {args.threads} fitter copies, 1 TF intra-op thread each, batch_size {args.batch_size}, "
        f"tolerance {args.tolerance:g}, max_iterations {args.max_iterations}, search {args.search}; "
        f"sklearn: {args.processes} processes; pipeline: {args.pipeline_workers} worker "
        f"process(es), batch_size {args.batch_size}, --search {args.search}",
        "",
    ])


READING = """\
How to read it: R = the peer's starts per series (sklearn: n_restarts_optimizer
= R − 1); gpcore and the pipeline run at their default starts unless --restarts
listed R (then at R too).
series/s is over the *timed span*: gpcore's fits alone (its one-off import,
build and trace are the *one-off* column), sklearn's process pool and fits
(one-off = its imports), the pipeline's whole command, start-up included (its
one-off = the same command on 2 series). × sklearn compares with sklearn on
the same workload and R. Peak memory: *tree* is the sampled peak of the summed
proportional set size of all the contender's processes; *largest proc* is the
peak RSS of its largest process. gap = nll_ours − nll_sklearn per series (nats,
raw units; negative = ours fits better); the target on the synthetic workloads
is gap ≤ 0.01 on ≥ 99.5 % of series (✓/✗); a series not fitted counts as +inf.
"""


def realdata_lines(real) -> list[str]:
    """The real-data quality line and the worst series, from quality.Comparison.to_json()."""
    if real is None:
        return []
    gaps = [(g, i) for g, i in zip(real["gaps"], real["ids"]) if g is not None]
    worst = sorted(gaps, reverse=True)[:5]
    met = real["share_within"] >= quality.TARGET_SHARE
    return [
        f"Real-data quality ({len(real['ids'])} series of benchmarks/realdata.py; gpcore with "
        f"FitConfig's defaults, search {real['search']}, R={real['restarts']}, "
        f"against sklearn at "
        f"{quality.REFERENCE_RESTARTS} starts):",
        "",
        f"| series | within {quality.TOLERANCE} nats | worse by > {quality.BAD_GAP:g} nat | "
        "worst gap | evaluations / series | iterations mean | gpcore fit s | sklearn fit s |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|",
        f"| {len(real['ids'])} | {100 * real['share_within']:.1f} % {'✓' if met else '✗'} | "
        f"{real['worse_than_bad_gap']} | {worst[0][0]:.3g} | "
        f"{real['evaluations_per_series']:.1f} | {real['iterations_mean']:.1f} | "
        f"{real['gpcore_s']:.1f} | {real['sklearn_s']:.1f} |",
        "",
        f"Target: ≥ {100 * quality.TARGET_SHARE:.0f} % within {quality.TOLERANCE} nats. Worst: "
        + ", ".join(f"{i} ({g:+.2f})" for g, i in worst if g > quality.TOLERANCE),
        "",
    ]


# Targets on whole-process wall time, the median of the per-round ratios
# (a round's contenders ran back to back, under about the same load):
# (workload, what, its wall time over which contender's, factor).
TARGETS = (("a", "gpfit command", "pipeline", "sklearn", 3.0),
           ("a", "gpfit command", "pipeline", "jax-warm", 1.5),
           ("a", "gpfit command, traces kept", "pipeline-warm", "jax-warm", 1.5),
           ("b", "gpfit command", "pipeline", "sklearn", 2.0))
# gpcore's fits alone against the JAX peer's, compilation excluded.
FIT_TARGET = ("a", 2.0)


def _fit_s(row):
    """Fitting time without one-off costs: gpcore's fits, the JAX peer's
    compiled calls (its busier process)."""
    if row.contender == "gpcore":
        return row.timed_s
    return row.info.get("timing", {}).get("fit_s")


def _ratio(slow, fast):
    return slow / fast if slow and fast else None


def rounds_table(rounds) -> list[str]:
    """Every round's whole-process wall times, the load, and the ratios."""
    if not rounds:
        return []
    names = ("sklearn", "gpcore", "jax-cold", "jax-warm", "pipeline", "pipeline-warm")
    lines = ["Rounds (whole-process wall seconds; gpcore: fits alone / whole process; JAX: "
             "whole process (fitting without compilation)); load = 1-minute load average "
             "before / after the round:", "",
             "| workload | round | load | sklearn | gpcore | JAX cold | JAX warm | gpfit command | "
             "gpfit, traces kept | command × sklearn | command × JAX warm | "
             "kept × JAX warm | gpcore fits × JAX fits |",
             "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for e in rounds:
        def cell(name):
            r = e.get(name)
            if r is None:
                return "–"
            if name == "gpcore":
                return f"{r.timed_s:.1f} / {r.wall_s:.1f}"
            if name.startswith("jax"):
                return f"{r.wall_s:.1f} ({_fit_s(r):.1f})"
            return f"{r.wall_s:.1f}"
        wall = {n: e[n].wall_s if e.get(n) else None for n in names}
        fits = _ratio(e.get("jax-warm") and _fit_s(e["jax-warm"]),
                      e.get("gpcore") and _fit_s(e["gpcore"]))
        lines.append(" | ".join([
            f"| {e['workload']}", str(e["round"]), f"{e['load']:.1f} / {e['load_after']:.1f}",
            *(cell(n) for n in names),
            *(f"{x:.2f}×" if x else "–" for x in (
                _ratio(wall["sklearn"], wall["pipeline"]),
                _ratio(wall["jax-warm"], wall["pipeline"]),
                _ratio(wall["jax-warm"], wall["pipeline-warm"]), fits))]) + " |")
    return lines + [""]


def _median(values):
    values = sorted(v for v in values if v)
    return values[len(values) // 2] if len(values) % 2 else (
        0.5 * (values[len(values) // 2 - 1] + values[len(values) // 2]) if values else None)


def targets(rows, rounds) -> list[str]:
    """Lines saying whether the speed and quality targets are met."""
    out = []
    for workload, what, ours, theirs, factor in TARGETS:
        ratios = [_ratio(e[theirs].wall_s, e[ours].wall_s) for e in rounds
                  if e["workload"] == workload and e.get(ours) and e.get(theirs)]
        if not any(ratios):
            continue
        m = _median(ratios)
        out.append(f"- {what} on {workload}: {m:.2f}× {theirs}, whole process, median of "
                   f"rounds ({', '.join(f'{r:.2f}' for r in ratios if r)}) "
                   f"(target ≥ {factor}×: {'met' if m >= factor else 'NOT met'})")
    workload, factor = FIT_TARGET
    ratios = [_ratio(_fit_s(e["jax-warm"]), _fit_s(e["gpcore"])) for e in rounds
              if e["workload"] == workload and e.get("jax-warm") and e.get("gpcore")]
    if any(ratios):
        m = _median(ratios)
        out.append(f"- gpcore's fits on {workload}: {m:.2f}× the JAX peer's fitting time "
                   f"without compilation, median of rounds (target ≥ {factor}×: "
                   f"{'met' if m >= factor else 'NOT met'})")
    for r in rows:
        if r.gaps is not None and r.contender in ("pipeline", "pipeline-warm", "jax-cold",
                                                  "jax-warm"):
            q = report.quality(r.gaps)
            out.append(f"- quality of {r.contender} on {r.workload} (R={r.restarts}): "
                       f"{100 * q['share_within']:.1f} % within {report.QUALITY_GAP} nats of "
                       f"sklearn (target ≥ {100 * report.QUALITY_SHARE:g} %: "
                       f"{'met' if q['met'] else 'NOT met'})"
                       + (f"; numpy's nll vs JAX's at its parameters: max "
                          f"{r.info['nll_numpy_vs_jax_max']:.1e} nats"
                          if r.info.get("nll_numpy_vs_jax_max") is not None else ""))
    return out


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    load_before = os.getloadavg()
    bench = Bench(args)
    try:
        bench.run()
    finally:
        shutil.rmtree(bench.scratch, ignore_errors=True)
    load_after = os.getloadavg()

    rows = bench.rows
    lines = [header(args, argv, load_before, load_after), report.markdown(rows) if rows else "",
             *rounds_table(bench.rounds), *realdata_lines(bench.real), READING]
    if args.restarts == "auto":
        lines += ["gpcore and the pipeline ran at FitConfig's default starts; the peer at "
                  "the smallest R meeting the quality target: "
                  + ", ".join(f"{w}: R={r}" for w, r in bench.chosen.items())]
    else:
        lines += ["Restarts used by the pipeline (smallest R meeting the quality target): "
                  + ", ".join(f"{w}: R={r}" for w, r in bench.chosen.items())]
    for r in rows:
        if r.contender == "pipeline" and r.one_off_s and r.wall_s > r.one_off_s:
            fit_s = r.info.get("fit_s_summed")
            lines.append(
                f"- pipeline on {r.workload}: {r.series / (r.wall_s - r.one_off_s):.1f} "
                f"series/s after its {r.one_off_s:.0f} s start-up; statuses "
                f"{r.info.get('statuses')}; fitters built {r.info.get('fitters_built')}, "
                f"traces per worker ≤ {r.info.get('traces_max')}"
                + (f"; fitting {fit_s:.0f} s summed over workers "
                   f"({r.series / fit_s * r.info.get('workers', 1):.1f} series/s while fitting) "
                   f"of {r.wall_s:.0f} s wall" if fit_s else ""))
        if r.contender == "sklearn":
            lines.append(f"- sklearn on {r.workload} R={r.restarts}: "
                         f"{r.info.get('processes')} processes, threadpoolctl saw at most "
                         f"{r.info.get('blas_threads_max')} BLAS thread(s) per worker"
                         + (" (cached)" if r.info.get("cached") else ""))
        if r.contender.startswith("jax"):
            t = r.info.get("timing", {})
            lines.append(f"- {r.contender} on {r.workload}: {r.wall_s:.1f} s whole process, "
                         f"fitting {t.get('fit_s', 0):.1f} s (busier process), compiling up to "
                         f"{t.get('compile_s_max', 0):.1f} s per process for "
                         f"{len(r.info.get('shapes', []))} bucket shapes, "
                         f"{r.info.get('iterations_mean', 0):.1f} L-BFGS iterations per series"
                         f" (all starts'), starts at "
                         f"{', '.join(map(str, r.info.get('start_lengths', [])))} spans")
    lines += targets(rows, bench.rounds)
    lines += [f"- note: {n}" for n in bench.notes]
    lines += [f"- PROBLEM: {p}" for p in bench.problems]
    text = "\n".join(lines) + "\n"
    print("\n" + text)

    with open(os.path.join(args.results_dir, "latest.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.results_dir, "latest.json"), "w") as f:
        json.dump({"argv": argv, "load_before": load_before, "load_after": load_after,
                   "chosen_restarts": bench.chosen, "rows": [r.to_json() for r in rows],
                   "rounds": [{k: (v.to_json() if isinstance(v, report.Row) else v)
                               for k, v in e.items()} for e in bench.rounds],
                   "realdata": bench.real,
                   "notes": bench.notes, "problems": bench.problems}, f)
    if rows:
        report.chart(rows, os.path.join(args.results_dir, "speed.png"))
    return 1 if bench.problems else 0


if __name__ == "__main__":
    sys.exit(main())
