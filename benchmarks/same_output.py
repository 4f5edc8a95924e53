"""Do two versions of gpfit write the same files? A check for refactors.

    python benchmarks/same_output.py --before <git revision> [--after <revision>]

Exports each revision's tree (`git archive`; --after defaults to the working
tree) and runs its `gpfit` command on the same small input (tests/pipeline's
pipeline_data: 10 smooth series and one too short, long layout in two
files): a cold run with --holdout 4 --predict_steps 3; the next night's run
with --previous_output and one changed series (reuse, a warm start,
forecasts of reused rows); and a --transform log run (series with values
<= 0: skipped rows). Then compares, table by table (params, predictions),
the Parquet schemas with their fields' metadata and every row's values,
exactly (floats by their repr). Prints one line per table and exits 1 on a
difference.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import pyarrow.parquet as pq

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_RUN = ("--kernel", "rbf", "--batch_size", "4")
_NIGHTS = (("cold", "in1", ("--holdout", "4", "--predict_steps", "3")),
           ("nightly", "in2", ("--holdout", "4", "--predict_steps", "3",
                               "--previous_output", "{cold}")),
           ("log", "in1", ("--transform", "log")))


def _tree(revision, folder: str) -> str:
    """The source tree of a revision (None: the working tree) in folder."""
    os.makedirs(folder)
    if revision is None:
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                               check=True, capture_output=True, text=True).stdout
        listed = subprocess.run(["tar", "-cf", "-", "-T", "-"], cwd=REPO, input=files.encode(),
                                check=True, capture_output=True).stdout
    else:
        listed = subprocess.run(["git", "archive", revision], cwd=REPO, check=True,
                                capture_output=True).stdout
    subprocess.run(["tar", "-xf", "-", "-C", folder], input=listed, check=True)
    return folder


def _inputs(folder: str) -> dict[str, str]:
    sys.path[:0] = [os.path.join(REPO, "tests", "pipeline"), os.path.join(REPO, "tests")]
    from pipeline_data import make_series, write_long

    series = make_series(n_series=10)
    changed = dict(series)
    t, y = changed["s01"]
    changed["s01"] = (t, y + 0.5)
    return {"in1": write_long(os.path.join(folder, "in1"), series),
            "in2": write_long(os.path.join(folder, "in2"), changed)}


def _runs(tree: str, inputs: dict, folder: str) -> dict:
    """{night: {table: {"schemas": [...], "rows": [...]}}} of tree's gpfit."""
    env = dict(os.environ, PYTHONPATH=tree)
    outputs, found = {}, {}
    for night, data, extra in _NIGHTS:
        outputs[night] = os.path.join(folder, night)
        args = [a.format(**outputs) for a in extra]
        done = subprocess.run([sys.executable, "-m", "pipeline", "--input", inputs[data],
                               "--output", outputs[night], *_RUN, *args], cwd=tree, env=env,
                              capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"{tree}: gpfit {night} exited {done.returncode}:\n"
                             f"{done.stderr[-3000:]}")
        found[night] = _tables(outputs[night])
    return found


def _tables(output: str) -> dict:
    found = {}
    for table in ("params", "predictions"):
        folder = os.path.join(output, table)
        if not os.path.isdir(folder):
            continue
        read = [pq.read_table(os.path.join(folder, name)) for name in sorted(os.listdir(folder))
                if name.endswith(".parquet")]
        schemas = sorted({str(t.schema) + repr([f.metadata for f in t.schema]) for t in read})
        rows = [json.dumps(r, sort_keys=True, default=repr) for t in read for r in t.to_pylist()]
        found[table] = {"schemas": schemas, "rows": sorted(rows)}
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision of the first version")
    parser.add_argument("--after", default=None, help="git revision (default: working tree)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gpfit-same-") as work:
        inputs = _inputs(os.path.join(work, "data"))
        before = _runs(_tree(args.before, os.path.join(work, "before")), inputs,
                       os.path.join(work, "out-before"))
        after = _runs(_tree(args.after, os.path.join(work, "after")), inputs,
                      os.path.join(work, "out-after"))
    same = True
    for night in before:
        for table in sorted(set(before[night]) | set(after[night])):
            old, new = before[night].get(table), after[night].get(table)
            equal = old == new
            same &= equal
            rows = len(old["rows"]) if old else 0
            print(f"{night:8s} {table:12s} {rows:4d} rows: "
                  + ("same schema and values" if equal else "DIFFERENT"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
