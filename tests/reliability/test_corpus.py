"""The bad-input corpus (reliability_corpus.py) through gpfit, end to end.

Runs that must succeed: every series appears exactly once, with a status,
and with a reason a user can act on when it was not fitted; nothing ends
with a traceback. Unusable inputs: exit 2 with one line naming the file or
column and what to do, before any fitting (TensorFlow is never even
imported), and no _SUCCESS.json.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from reliability_corpus import OK, Corpus, write_corpus
from reliability_runs import ENV, REPO, gpfit_here, gpfit_subprocess

RUN_OPTIONS = ("--batch_size", "4")
PARAMS = ("mean", "amplitude", "length_scale", "noise_variance", "nll")
UNUSABLE = ("string_value_column", "missing_column", "empty_file", "no_rows", "not_parquet",
            "glob_matches_nothing", "duplicate_column")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    return write_corpus(str(tmp_path_factory.mktemp("corpus")))


@pytest.fixture(scope="module")
def long_run(corpus, tmp_path_factory):
    """The long-layout corpus as `python -m pipeline`: a real process, whose
    stderr would show any traceback."""
    return gpfit_subprocess(corpus.runs["long"].input,
                            str(tmp_path_factory.mktemp("out") / "long"), *RUN_OPTIONS)


@pytest.fixture(scope="module")
def timestamps_run(corpus, tmp_path_factory):
    return gpfit_here(corpus.runs["timestamps"].input,
                      str(tmp_path_factory.mktemp("out") / "timestamps"), *RUN_OPTIONS)


@pytest.fixture(scope="module")
def nested_run(corpus, tmp_path_factory):
    return gpfit_here(corpus.runs["nested"].input,
                      str(tmp_path_factory.mktemp("out") / "nested"), *RUN_OPTIONS)


@pytest.fixture(scope="module", params=["long", "timestamps", "nested"])
def good(request, corpus):
    """(corpus run, gpfit run) for each run that must succeed."""
    return corpus.runs[request.param], request.getfixturevalue(f"{request.param}_run")


def test_run_succeeds_and_nothing_ends_in_a_traceback(good):
    spec, run = good
    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout
    manifest = run.manifest
    assert manifest is not None and manifest["status"] == "succeeded"
    assert manifest["input"]["layout"] == spec.layout
    assert manifest["time_units"] == spec.time_units


def test_every_series_appears_exactly_once(good):
    spec, run = good
    ids = sorted(row["series_id"] for row in run.rows())
    assert ids == sorted(spec.expected)  # no duplicate, none missing, no null id


def test_counts_in_manifest_and_final_line(good):
    spec, run = good
    statuses = [e.status for e in spec.expected.values()]
    counts = {"series_read": len(statuses), "ok": statuses.count("ok"),
              "skipped": statuses.count("skipped"), "failed": 0, "null_ids": spec.null_ids}
    assert run.manifest["counts"] == counts
    assert (f"{counts['series_read']} series: {counts['ok']} ok, {counts['skipped']} skipped, "
            f"0 failed; {spec.null_ids} rows with a null id") in run.stdout


def test_each_series_ends_as_expected_with_an_actionable_reason(good):
    spec, run = good
    rows = {row["series_id"]: row for row in run.rows()}
    for series_id, expected in spec.expected.items():
        row = rows[series_id]
        got = (row["status"], row["n_points"])
        assert got == (expected.status, expected.n_points), (series_id, row)
        if expected.status == OK:
            assert row["error"] is None, (series_id, row)
            assert all(math.isfinite(row[name]) for name in PARAMS), (series_id, row)
            assert row["amplitude"] > 0 and row["length_scale"] > 0, (series_id, row)
            assert row["noise_variance"] > 0, (series_id, row)
        else:
            assert row["error"], (series_id, row)
            for words in expected.reason:
                assert words in row["error"], (series_id, row["error"])
            assert all(row[name] is None for name in PARAMS), (series_id, row)


def _shape(row: dict) -> tuple[float, float]:
    """Length scale and noise-to-signal ratio: unchanged by rescaling y."""
    return row["length_scale"], row["noise_variance"] / row["amplitude"] ** 2


def test_same_data_in_another_form_gives_the_same_fit(good, long_run):
    """Unsorted, split over files, scaled by 1e12 or 1e-12, in 1970 or 2100,
    nested and duplicated: the data are the same, so are the fits."""
    spec, run = good
    rows = {row["series_id"]: row for row in run.rows()}
    known = {**{row["series_id"]: row for row in long_run.rows()}, **rows}
    for series_id, expected in spec.expected.items():
        if expected.same_fit_as is None:
            continue
        row, twin = rows[series_id], known[expected.same_fit_as]
        np.testing.assert_allclose(_shape(row), _shape(twin), rtol=1e-5, err_msg=series_id)
        scale = expected.y_scale
        np.testing.assert_allclose(
            [row["mean"], row["amplitude"], row["noise_variance"]],
            [scale * twin["mean"], scale * twin["amplitude"], scale ** 2 * twin["noise_variance"]],
            rtol=1e-5, err_msg=series_id)


def test_values_with_missing_points_are_fitted_on_the_rest(long_run):
    rows = {row["series_id"]: row for row in long_run.rows()}
    # NaN, +inf, -inf values, a NaN time and (integer file) a null value: dropped.
    assert rows["nan_and_inf"]["status"] == "ok" and rows["nan_and_inf"]["n_points"] == 35
    assert rows["integer_values"]["status"] == "ok" and rows["integer_values"]["n_points"] == 39
    # Integer values: results in the units of y (100 x the reference's).
    assert 50 < rows["integer_values"]["amplitude"] / rows["reference"]["amplitude"] < 200


# ---- unusable input --------------------------------------------------------------

# The command's run() once per case, in one interpreter (Beam's import is
# paid once; the console script's main() ends the process, so it cannot be
# called twice): exit code, stderr and whether TensorFlow was ever imported.
_DRIVER = """
import json, sys
from pipeline import cli
for name, argv in json.loads(sys.argv[1]).items():
    print("=== " + name, file=sys.stderr, flush=True)
    try:
        code = cli.run(argv)
    except SystemExit as stop:
        code = stop.code
    print(json.dumps({"case": name, "code": code,
                      "tensorflow": "tensorflow" in sys.modules}), flush=True)
"""


@pytest.fixture(scope="module")
def unusable_runs(corpus, tmp_path_factory):
    """{case: (exit code, stderr lines, TensorFlow imported, output folder)}."""
    out = tmp_path_factory.mktemp("unusable-out")
    argv = {name: ["--input", case.input, "--output", str(out / name)]
            for name, case in corpus.unusable.items()}
    done = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(argv)], cwd=REPO,
                          env=ENV, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    sections = done.stderr.split("=== ")[1:]
    assert [r["case"] for r in results] == list(argv) == [s.split("\n")[0] for s in sections]
    return {r["case"]: (r["code"], section.split("\n", 1)[1].strip().splitlines(),
                        r["tensorflow"], str(out / r["case"]))
            for r, section in zip(results, sections)}


def test_corpus_has_every_unusable_case(corpus):
    assert sorted(corpus.unusable) == sorted(UNUSABLE)


@pytest.mark.parametrize("name", UNUSABLE)
def test_unusable_input_exits_2_with_one_line_before_any_fitting(corpus, unusable_runs, name):
    case = corpus.unusable[name]
    code, lines, tensorflow_imported, output = unusable_runs[name]
    assert code == 2, lines
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("gpfit: error: "), line
    assert case.names in line, line  # the file or column
    assert case.advice in line, line  # what to do
    assert "Traceback" not in line
    # Refused before anything was fitted or written: TensorFlow (which the
    # fitter needs) was never imported and the output folder never created.
    assert not tensorflow_imported
    assert not os.path.exists(output)
    assert not os.path.exists(os.path.join(output, "_SUCCESS.json"))
