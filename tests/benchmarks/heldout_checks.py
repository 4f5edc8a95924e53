"""What the held-out and tuning sets' smoke tests share: a set's scoring
command run as a subprocess, its markdown table read back, and series
compared by their values (a set must share no series with another)."""
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def values(series) -> set:
    """Each series' finite values (Series, or Cases with .series), rounded,
    as a hashable key."""
    out = set()
    for s in series:
        y = getattr(s, "series", s).y
        out.add(tuple(np.round(y[np.isfinite(y)], 6)))
    return out


def run(script: str, *args: str, timeout: float = 600) -> str:
    """stdout of benchmarks/<script> with args; fails the test on a non-zero exit."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def table_rows(text: str) -> dict:
    """{first cell: [the other cells]} of the markdown table rows in text."""
    return {r[0]: r[1:] for r in ([c.strip() for c in line.strip("|").split("|")]
                                  for line in text.splitlines() if line.startswith("| "))}


def assert_real_check_scores(script: str, count: int = 4) -> None:
    """A real set's `--check --count count --fresh` prints its one table
    row: a share in [0, 100] % and no oracle failure."""
    cells = table_rows(run(script, "--check", "--count", str(count), "--fresh")).get(str(count))
    assert cells, f"no table row for {count} series from {script}"
    assert 0 <= float(cells[0].rstrip(" %")) <= 100 and cells[2] == "0"
