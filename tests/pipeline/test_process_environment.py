"""gpfit, gpfit-report and fit_frame in the process environments schedulers,
containers and test suites give them: Python's flags (-W error, -OO) and the
variables a user or a scheduler sets. Each runs a fresh process: the
environment in question is the process's own."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpfit_runs import read_rows, write_long_parquet

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _python(tmp_path, *args: str, flags: tuple[str, ...] = (), **env: str
            ) -> subprocess.CompletedProcess:
    """`python *flags *args` in a fresh process in tmp_path, with env added
    to this one's environment (the checkout first on its path)."""
    environ = dict(os.environ, PYTHONPATH=REPO, **env)
    return subprocess.run([sys.executable, *flags, *args], cwd=str(tmp_path), env=environ,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def series(tmp_path_factory) -> str:
    return str(write_long_parquet(tmp_path_factory.mktemp("in")))


def test_warnings_made_errors_fail_no_fit(tmp_path, series):
    # TFP's check of TensorFlow's version warned (distutils' LooseVersion is
    # deprecated) inside every fitter's build: under PYTHONWARNINGS=error, a
    # test suite's -W error, the run failed, exit 3, for TFP's warning.
    output = str(tmp_path / "out")
    done = _python(tmp_path, "-m", "pipeline", "--input", series, "--output", output,
                   "--kernel", "rbf", PYTHONWARNINGS="error")
    assert done.returncode == 0, done.stderr
    assert [row["status"] for row in read_rows(output)] == ["ok"] * 3


# Beam builds parts of its API from docstrings: with them stripped, its
# import raised AttributeError ('NoneType' object has no attribute 'split'),
# a traceback and exit 1, which says "too many series failed".
STRIPPED = "docstrings stripped (python -OO, or PYTHONOPTIMIZE=2"


@pytest.mark.parametrize("command", ["gpfit", "gpfit-report"])
def test_docstrings_stripped_are_refused_in_one_line(tmp_path, series, command):
    output = str(tmp_path / "out")
    if command == "gpfit":
        args = ("-m", "pipeline", "--input", series, "--output", output)
    else:
        args = ("-m", "pipeline.report", "--input", series, "--params", output,
                "--out", str(tmp_path / "report.html"))
    done = _python(tmp_path, *args, flags=("-OO",), PYTHONDONTWRITEBYTECODE="1")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{command}: error: Python runs with "
                                                   f"{STRIPPED}"), lines
    assert "unset PYTHONOPTIMIZE" in lines[0]
    assert sorted(os.listdir(tmp_path)) == []


def test_fit_frame_with_docstrings_stripped_raises_import_error_saying_why(tmp_path):
    done = _python(tmp_path, "-c", "import gpfit", PYTHONOPTIMIZE="2",
                   PYTHONDONTWRITEBYTECODE="1")
    assert done.returncode == 1
    assert f"ImportError: Python runs with {STRIPPED}" in done.stderr.splitlines()[-1]


def test_a_utf8_name_in_an_ascii_locale_is_said_to_be_the_locales_doing(tmp_path, series):
    # LC_ALL=C with PYTHONUTF8=0: Python reads arguments and file names as
    # ASCII, escaping the other bytes. gpfit said the UTF-8 name was "not
    # UTF-8 text" and to rename it; a column named so was told the same.
    folder = tmp_path / "données"
    folder.mkdir()
    os.link(series, folder / "part-00000.parquet")
    done = _python(tmp_path, "-m", "pipeline", "--input", str(folder / "part-00000.parquet"),
                   "--output", str(tmp_path / "out"), LC_ALL="C", LANG="C", PYTHONUTF8="0")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("gpfit: error: --input '"), lines
    assert "is UTF-8 text, but this Python reads names and arguments as ascii" in lines[0]
    assert "PYTHONUTF8=1" in lines[0] and "rename" not in lines[0]
    assert sorted(os.listdir(tmp_path)) == ["données"]


def test_an_empty_blas_thread_count_is_gpfits_one(tmp_path):
    # A scheduler's template exports OPENBLAS_NUM_THREADS= with no value:
    # gpfit left it so, and OpenBLAS started a thread per core.
    probe = ("import pipeline.cli; from threadpoolctl import threadpool_info; "
             "print([i['num_threads'] for i in threadpool_info() "
             "if i['internal_api'] == 'openblas'])")
    done = _python(tmp_path, "-c", probe, OPENBLAS_NUM_THREADS="")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1]"


@pytest.mark.parametrize("command", ["gpfit", "gpfit-report"])
def test_a_relative_path_in_a_removed_working_folder_is_refused_naming_it(
        tmp_path, series, command):
    # A shell left in a folder another job removed: os.path.abspath raised,
    # "gpfit failed unexpectedly: FileNotFoundError ... report it", exit 3;
    # gpfit-report blamed a run replacing --params.
    if command == "gpfit":
        args = ["-m", "pipeline", "--input", series, "--output", "out"]
        flag = "--output out"
    else:
        args = ["-m", "pipeline.report", "--input", series, "--params", str(tmp_path),
                "--out", "report.html"]
        flag = "--out 'report.html'"
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rmdir "{gone}" && exec "$@"'
    environ = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run(["sh", "-c", script, "sh", sys.executable, *args], env=environ,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{command}: error: {flag} is relative to the working folder, "
                               "which no longer exists"), lines
    assert "give the path in full" in lines[0]
    assert sorted(os.listdir(tmp_path)) == []


def test_the_report_says_a_utf8_argument_in_an_ascii_locale_is_the_locales_doing(tmp_path):
    # gpfit-report said the file "has no column 's\udcc3\udca9rie' (its
    # columns: s\xe9rie, ...)": the column it was given, read as ASCII.
    table = tmp_path / "in.parquet"
    write_long_parquet(tmp_path / "data")
    os.rename(tmp_path / "data" / "part-00000.parquet", table)
    done = _python(tmp_path, "-m", "pipeline.report", "--input", str(table), "--params",
                   str(tmp_path), "--out", str(tmp_path / "report.html"), "--id_column", "série",
                   LC_ALL="C", LANG="C", PYTHONUTF8="0")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("gpfit-report: error: --id_column '"), lines
    assert "is UTF-8 text, but this Python reads names and arguments as ascii" in lines[0]
    assert not (tmp_path / "report.html").exists()
