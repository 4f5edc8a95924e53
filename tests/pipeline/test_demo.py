"""The demo's seasonal part (`make run`): its data, the auto run and the
table it prints, on a few series."""
from __future__ import annotations

import csv
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpfit_runs import command_in
from pipeline import demo
from pipeline_data import gpfit


def test_seasonal_demo_fits_and_reports_the_choice(tmp_path):
    demo.generate_seasonal(str(tmp_path), n_series=4)
    with open(tmp_path / "seasonal_truth.csv", newline="") as f:
        truth = list(csv.DictReader(f))
    assert [float(t["season_amplitude"]) > 0 for t in truth] == [True, True, False, False]
    table = pq.read_table(tmp_path / "seasonal")
    assert pa.types.is_timestamp(table.schema.field("t").type) and table.num_rows > 400
    run = gpfit(str(tmp_path / "seasonal"), str(tmp_path / "out"), *demo.SEASONAL_OPTIONS)
    assert run.code == 0, run.stderr
    printed = demo.seasonal_report(str(tmp_path / "out"), str(tmp_path / "seasonal_truth.csv"))
    lines = printed.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[2:6]}
    assert sorted(rows) == [t["series_id"] for t in truth]
    for series_id, cells in rows.items():
        assert cells[2] in ("rbf", "rbf+periodic") and float(cells[3]) >= 0
    # A yearly cycle over three years: the sum wins and finds the year.
    for series_id in ("seasonal-00", "seasonal-01"):
        assert rows[series_id][2] == "rbf+periodic"
        assert abs(float(rows[series_id][5]) - demo.YEAR_DAYS) < 10
    assert lines[-2].startswith("kernels chosen: ")


def test_help_and_version_answer_without_generating_or_reporting(tmp_path, monkeypatch, capsys):
    """`python -m pipeline.demo --help` generated the data, printed gpfit's
    help, then reported on demo/output/: a FileNotFoundError traceback in a
    fresh folder, a stale run's table where one was left."""
    monkeypatch.chdir(tmp_path)
    assert demo.main(["--help"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(demo.USAGE) and "--kernel" in printed and "--input" in printed
    assert demo.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("gpfit ")
    assert os.listdir(tmp_path) == []


def test_demo_reports_a_kernel_without_a_flat_length_scale(tmp_path):
    """README: arguments after `python -m pipeline.demo` go to both runs, so
    `--kernel linear` (or a sum, or auto choosing one) reaches report(),
    whose table read each row's flat length_scale: null there, and the demo
    died with a traceback after fitting. Such rows show '-'; the others and
    the counts stay."""
    demo.generate(str(tmp_path), n_series=6)
    out = str(tmp_path / "out")
    run = gpfit(str(tmp_path / "series"), out, "--kernel", "linear")
    assert run.code == 0, run.stderr
    lines = demo.report(out, str(tmp_path / "truth.csv")).splitlines()
    fitted = [line.split() for line in lines[2:] if line.startswith("demo-") and "skipped" not in line]
    assert len(fitted) == 3
    for cells in fitted:
        assert cells[3] == "-" and float(cells[2]) > 0  # true length scale, no fitted one
        assert float(cells[5]) > 0  # linear's amplitude: the slope's sd
    assert any(line.startswith("counts: 6 series read, 3 ok, 3 skipped") for line in lines)


@pytest.mark.parametrize("argv, words", [
    (["--kernel", "linear"], "demo: error: the seasonal run (--kernel auto --candidates "
                             "rbf,rbf+periodic, then the options given): --candidates is for "
                             "--kernel auto; got --kernel 'linear'"),
    (["--output", "elsewhere"], "demo: error: --output is the demo's own"),
    (["--input=elsewhere"], "demo: error: --input is the demo's own"),
])
def test_options_either_run_refuses_are_refused_before_any_work(tmp_path, monkeypatch, capsys,
                                                                argv, words):
    """README: the demo's arguments go to both gpfit runs. The seasonal run
    refused `--kernel linear` after the data was generated and the first run
    had fitted (exit 2); `--output X` sent both runs to X, and the table
    then died reading demo/output/ (FileNotFoundError)."""
    monkeypatch.chdir(tmp_path)
    assert demo.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(words) and "\n" not in err, err
    assert os.listdir(tmp_path) == []


def test_the_demo_as_a_process_leaves_with_its_code_lines_and_gpfits_log_format(
        tmp_path, monkeypatch):
    """`make run`'s process, python -m pipeline.demo, on 4 + 2 generated
    series. It leaves as gpfit does, without Python's finalisation
    (docs/design.md, "Start-up"), so its exit code must still be the demo's
    and its last table, printed to a pipe and so buffered, must arrive
    whole. And it printed gpfit's lines in Python's default format
    (`INFO:pipeline.fitters:gpfit: ...`), not gpfit's (`<time> INFO gpfit:
    ...`): the demo's check of its options parsed them with Beam's
    PipelineOptions, whose constructor calls logging.basicConfig(), before
    gpfit set its own."""
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # a pipe's stdout is buffered
    refused = command_in("", "-m", "pipeline.demo", "--kernel", "linear", cwd=str(tmp_path))
    assert refused.returncode == 2 and refused.stderr.startswith("demo: error: "), refused.stderr
    assert os.listdir(tmp_path) == []
    demo.generate(str(tmp_path / demo.DATA), n_series=4)
    demo.generate_seasonal(str(tmp_path / demo.DATA), n_series=2)
    done = command_in("", "-m", "pipeline.demo", cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.splitlines()[-2:]
    assert last[0].startswith("kernels chosen: ") and last[1] == f"output: {demo.SEASONAL_OUTPUT}/", \
        done.stdout[-300:]
    for output in (demo.OUTPUT, demo.SEASONAL_OUTPUT):
        assert os.path.exists(tmp_path / output / "_SUCCESS.json")
    logged = [line for line in done.stderr.splitlines() if re.search(r"\bgpfit: ", line)
              and not line.startswith("gpfit: ")]  # the result lines are printed as they are
    assert logged, done.stderr[-2000:]
    gpfits = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING) gpfit: ")
    assert [line for line in logged if not gpfits.match(line)] == []
