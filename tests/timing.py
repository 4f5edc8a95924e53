"""Where the suite's time goes, from a run with GPFIT_TEST_TIMES set
(tests/conftest.py writes one JSON line per test):

    GPFIT_TEST_TIMES=/tmp/times.jsonl .venv/bin/python -m pytest -q -n auto \\
        --dist loadgroup tests
    .venv/bin/python tests/timing.py /tmp/times.jsonl

prints the seconds per file and per xdist group (with the processes,
pipelines and fitters each group's tests started), and what `make test`'s
pytest would take on a quiet machine with 2 workers: each group's CPU
seconds (on a shared machine its wall seconds are the load's), handed out
in the order the workers take them (tests/conftest.py's, or xdist's own by
number of tests), each worker taking the next group when it is free.
"""
from __future__ import annotations

import collections
import heapq
import json
import sys


# What tests/conftest.py counts per test: Python processes launched, Beam
# pipelines run in the test's process, fitters built.
COUNTED = ("processes", "pipelines", "fitters")


def load(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def schedule(costs: list[float], workers: int = 2) -> tuple[float, list[float]]:
    """(makespan, each worker's busy seconds) when `workers` take the groups
    of `costs` in that order, each the next one when it is free."""
    free = [(0.0, w) for w in range(workers)]
    busy = [0.0] * workers
    for cost in costs:
        at, w = heapq.heappop(free)
        busy[w] += cost
        heapq.heappush(free, (at + cost, w))
    return max(at for at, _ in free), busy


def main(argv: list[str]) -> int:
    lines = load(argv[0])
    files = collections.defaultdict(lambda: [0, 0.0, 0.0])
    groups = collections.defaultdict(lambda: [0, 0.0, 0.0, []])
    counts = collections.defaultdict(collections.Counter)  # group: launches, pipelines, fitters
    workers = collections.defaultdict(lambda: [0.0, 0.0])
    for line in lines:
        path = line["nodeid"].split("::")[0]
        for table, key in ((files, path), (groups, line["group"] or path)):
            table[key][0] += 1
            table[key][1] += line["wall_s"]
            table[key][2] += line["cpu_s"]
        groups[line["group"] or path][3].append(line["nodeid"])
        counts[line["group"] or path].update({k: line.get(k, 0) for k in COUNTED})
        workers[line["worker"]][0] += line["wall_s"]
        workers[line["worker"]][1] += line["cpu_s"]

    print("| file | tests | wall s | CPU s |\n|---|---:|---:|---:|")
    for path, (n, wall, cpu) in sorted(files.items(), key=lambda kv: -kv[1][2]):
        print(f"| {path} | {n} | {wall:.0f} | {cpu:.0f} |")
    print(f"| all | {len(lines)} | {sum(v[1] for v in files.values()):.0f} | "
          f"{sum(v[2] for v in files.values()):.0f} |")
    print("\n| worker | wall s | CPU s |\n|---|---:|---:|")
    for worker, (wall, cpu) in sorted(workers.items()):
        print(f"| {worker} | {wall:.0f} | {cpu:.0f} |")

    # The order the run took them in: first test of each group.
    first = {}
    for k, line in enumerate(lines):
        first.setdefault(line["group"] or line["nodeid"].split("::")[0], k)
    cost = {g: v[2] for g, v in groups.items()}
    orders = {"as run": sorted(groups, key=first.get),
              "xdist's (most tests first)": sorted(groups, key=lambda g: -groups[g][0]),
              "costliest first": sorted(groups, key=lambda g: -cost[g])}
    print("\n| order | quiet pytest wall s (2 workers) | workers busy s |\n|---|---:|---|")
    for name, order in orders.items():
        span, busy = schedule([cost[g] for g in order])
        print(f"| {name} | {span:.0f} | {', '.join(f'{b:.0f}' for b in busy)} |")
    print("\n| group | tests | CPU s | " + " | ".join(COUNTED) + " |\n|---|---:|---:|"
          + "---:|" * len(COUNTED))
    for g in orders["costliest first"][:25]:
        print(f"| {g} | {groups[g][0]} | {cost[g]:.0f} | "
              + " | ".join(str(counts[g][k]) for k in COUNTED) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
