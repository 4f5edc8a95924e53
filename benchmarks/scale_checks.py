"""Checks behind docs/scale.md: what 50 million series would need.

    .venv/bin/python benchmarks/scale_checks.py fit-rate              # ~3 min here
    .venv/bin/python benchmarks/scale_checks.py many-files --files 20000
    .venv/bin/python benchmarks/scale_checks.py huge-series --rows 20000000

fit-rate:     gpcore's fit rate with one TensorFlow thread at 64, 256 and
              1,024 points (series/s per core), beside gpcore.batching's cost.
many-files:   writes --files small Parquet files, then builds the Dataflow job
              for them offline (--dry_run --no_auth, input inspected as
              `gpfit` does): launch time and the job graph's size.
huge-series:  one series id with --rows rows among normal series, through
              the `gpfit` command (one process) under /usr/bin/time -v: peak
              RSS, and that the huge id comes out "skipped".

Every check prints one JSON line. Other engineers share this machine:
timings are noisy, and the load average is printed with them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fit_rate(args) -> dict:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    import gpcore.threads
    gpcore.threads.configure_threads(1, 1)
    from gpcore import Batching, FitConfig, GPFitter, Series

    config = FitConfig()
    fitter, batching = GPFitter(config), Batching(config)
    rng = np.random.default_rng(0)

    def series(n, i):
        t = np.sort(rng.uniform(0, 100, n))
        return Series(i, t, np.sin(t / rng.uniform(3, 15)) + 0.1 * rng.standard_normal(n))

    fitter.fit([series(32, "warm-up") for _ in range(4)])
    found = {}
    for n, count in ((64, args.count_64), (256, args.count_256), (1024, args.count_1024)):
        batch = [series(n, i) for i in range(count)]
        start = time.process_time(), time.perf_counter()
        results = fitter.fit(batch)
        cpu, wall = time.process_time() - start[0], time.perf_counter() - start[1]
        found[n] = {"series": count, "ok": sum(r.status == "ok" for r in results),
                    "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
                    "series_per_cpu_s": round(count / cpu, 3),
                    "estimated_core_s_per_series": round(batching.cost(n), 4)}
    return {"check": "fit-rate", "lengths": found, "load": os.getloadavg()}


def many_files(args) -> dict:
    folder = os.path.join(args.workdir, f"files-{args.files}")
    if not os.path.isdir(folder):
        os.makedirs(folder)
        rng = np.random.default_rng(1)
        for i in range(args.files):
            t = np.arange(32.0)
            pq.write_table(pa.table({"series_id": [f"f{i}"] * 32, "t": t,
                                     "y": rng.standard_normal(32)}),
                           os.path.join(folder, f"part-{i:06d}.parquet"))
    sys.path.insert(0, os.path.join(REPO, "deploy"))
    import dataflow_dry_run
    from pipeline import builder
    from pipeline.options import parse_options

    # Local files stand in for gs:// ones, which gpfit refuses for the Dataflow
    # service (pipeline/dataflow.py); an endpoint on localhost is not the service.
    argv = dataflow_dry_run.with_defaults([
        f"--input={folder}", f"--output={os.path.join(args.workdir, 'many-out')}",
        "--runner=DataflowRunner", "--temp_location=gs://gpfit-dry-run/temp",
        "--dataflow_endpoint=http://localhost:9",
        "--sdk_container_image=example/gpfit:1"]) + ["--dry_run=True", "--no_auth"]
    start = time.perf_counter()
    with dataflow_dry_run.no_network():
        built = builder.build_from_options(parse_options(argv), check_paths=True)
        checked = time.perf_counter()
        job = built.pipeline.run().job
    done = time.perf_counter()
    return {"check": "many-files", "files": args.files,
            "inspect_and_build_s": round(checked - start, 2),
            "translate_s": round(done - checked, 2), "launch_s": round(done - start, 2),
            "pipeline_proto_bytes": len(job.proto_pipeline.SerializeToString()),
            "dataflow_job_bytes": len(type(job.proto).serialize(job.proto)),
            "load": os.getloadavg()}


def huge_series(args) -> dict:
    folder = os.path.join(args.workdir, f"huge-{args.rows}")
    if not os.path.isdir(folder):
        os.makedirs(folder)
        rng = np.random.default_rng(2)
        ids = np.repeat([f"n{i:04d}" for i in range(args.normal)], 64)
        t = np.tile(np.arange(64.0), args.normal)
        pq.write_table(pa.table({"series_id": ids, "t": t, "y": np.sin(t / 7) + 0.1 *
                                 rng.standard_normal(t.size)}), os.path.join(folder, "normal.parquet"))
        per_file = 5_000_000
        for k in range(0, args.rows, per_file):
            n = min(per_file, args.rows - k)
            pq.write_table(pa.table({"series_id": pa.array(["junk"] * n),
                                     "t": np.arange(k, k + n, dtype=np.float64),
                                     "y": rng.standard_normal(n)}),
                           os.path.join(folder, f"junk-{k // per_file}.parquet"),
                           row_group_size=1_000_000)
    output = os.path.join(args.workdir, "huge-out")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=args.code or REPO)
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "pipeline", "--input", folder,
               "--output", output, *args.gpfit_args]
    start = time.perf_counter()
    run = subprocess.run(command, env=env, capture_output=True, text=True,
                         timeout=args.timeout, cwd=args.code or REPO)
    wall = time.perf_counter() - start
    peak_kb = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
    found = {"check": "huge-series", "rows": args.rows, "normal_series": args.normal,
             "code": args.code or REPO, "exit": run.returncode, "wall_s": round(wall, 1),
             "peak_rss_mb": int(peak_kb.group(1)) // 1024 if peak_kb else None,
             "last_lines": run.stdout.strip().splitlines()[-1:] + run.stderr.strip().splitlines()[-25:-22],
             "load": os.getloadavg()}
    if run.returncode == 0:
        table = pq.read_table(output, columns=["series_id", "status", "error"]).to_pylist()
        found["junk"] = [r for r in table if r["series_id"] == "junk"]
        found["statuses"] = {s: sum(r["status"] == s for r in table)
                             for s in ("ok", "skipped", "failed")}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("check", choices=("fit-rate", "many-files", "huge-series"))
    parser.add_argument("--workdir", default="/tmp/gpfit-scale-checks")
    parser.add_argument("--count-64", type=int, default=256)
    parser.add_argument("--count-256", type=int, default=64)
    parser.add_argument("--count-1024", type=int, default=4)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--normal", type=int, default=500)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--code", help="another checkout's root to run (a comparison)")
    parser.add_argument("gpfit_args", nargs="*", help="after --: more gpfit options")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    check = {"fit-rate": fit_rate, "many-files": many_files, "huge-series": huge_series}
    print(json.dumps(check[args.check](args)), flush=True)


if __name__ == "__main__":
    main()
