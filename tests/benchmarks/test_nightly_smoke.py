"""Smoke test of the nightly benchmark: a cold run and a next night on a few
series, a table that parses, under a search that is not the default. No
timing assertions (noise at this size)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_nightly_runs_and_prints_a_table(tmp_path):
    command = [sys.executable, os.path.join(ROOT, "benchmarks", "nightly.py"),
               "--count", "12", "--fractions", "0.25", "--search", "balanced",
               "--results-dir", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = (tmp_path / "nightly.md").read_text()
    assert text in done.stdout and "`--search balanced`" in text
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ")][1:]
    assert [r[0] for r in rows] == ["cold (night 1)", "next night"]
    cold, night = rows
    assert cold[2] == night[2] == "12" and (night[1], night[5], night[6]) == ("25 %", "9", "3")
    assert night[8].startswith("100.0 %")
