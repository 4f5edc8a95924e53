"""Smoke test of the benchmark: it runs end to end on a few series and prints
tables that parse. No timing assertions: timings on a shared machine are
noise at this size."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_speed_runs_and_prints_a_table(tmp_path):
    command = [sys.executable, os.path.join(ROOT, "benchmarks", "speed.py"),
               "--count", "6", "--workloads", "a", "--skip-pipeline", "--restarts", "1",
               "--skip-jax", "--rounds", "1",
               "--results-dir", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    table = (tmp_path / "latest.md").read_text()
    assert table in done.stdout
    lines = table.splitlines()
    head = lines.index(next(l for l in lines if l.startswith("| workload | contender")))
    columns = _cells(lines[head])
    rows = {}
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        cells = dict(zip(columns, _cells(line)))
        rows[cells["contender"]] = cells
    assert set(rows) == {"gpcore", "sklearn"}
    for cells in rows.values():
        assert cells["workload"] == "a" and cells["R"] == "1" and cells["series"] == "6"
        assert float(cells["series/s"]) > 0
        assert float(cells["peak MB (tree)"]) > 0
    gpcore = rows["gpcore"]
    assert float(gpcore["× sklearn"].rstrip("×")) > 0
    assert float(gpcore["gap median"]) < 1.0
    assert re.fullmatch(r"[\d.]+ % [✓✗]", gpcore["within 0.01 nats"])
    assert float(gpcore["worst gap"]) < 1e3
    assert "fraction of peak" in table
    assert "search thorough" in table  # the default search, named for gpcore and real data

    # The real-data quality line: 6 real series, gpcore's defaults vs sklearn.
    real_head = lines.index(next(l for l in lines if l.startswith("| series | within")))
    real = dict(zip(_cells(lines[real_head]), _cells(lines[real_head + 2])))
    assert real["series"] == "6"
    assert re.fullmatch(r"[\d.]+ % [✓✗]", real["within 0.01 nats"])
    # The count is the gaps above 1 nat in latest.json (+inf: gpcore gave no
    # nll; None: the peer failed, left out).
    gaps = json.loads((tmp_path / "latest.json").read_text())["realdata"]["gaps"]
    assert len(gaps) == 6
    assert int(real["worse by > 1 nat"]) == sum(g is not None and g > 1.0 for g in gaps)
    assert float(real["evaluations / series"]) > 0
    assert (tmp_path / "speed.png").stat().st_size > 0
