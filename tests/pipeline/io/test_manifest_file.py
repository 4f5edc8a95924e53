"""The manifest file (pipeline.io.manifest): what it says, writing and reading it."""
from __future__ import annotations

import json
import os

import pytest

from pipeline.io import manifest
from pipeline.io.inputs import Columns, InputSpec, uninspected

FITS = {"fitters_built": 1, "fit_ms_per_series": None, "tracing_count_max": 1}


def test_an_uninspected_input_is_recorded_as_such():
    record = manifest.run_record(uninspected("gs://b/in/*.parquet", Columns()), "out", "rbf",
                                 0.5, {}, 0.0)
    assert record.time_units == "not inspected"
    assert record.input == {"pattern": "gs://b/in/*.parquet", "files": None,
                            "layout": "not inspected", "rows": None}
    spec = InputSpec("in/", ("in/a.parquet", "in/b.parquet"), Columns(), "long", "days", 7)
    record = manifest.run_record(spec, "out", "rbf", 0.5, {}, 0.0)
    assert record.time_units == "days"
    # A local pattern is recorded absolute: the report may run from elsewhere.
    assert record.input == {"pattern": os.path.abspath("in"), "files": 2, "layout": "long",
                            "rows": 7}


def test_written_under_its_status_and_read_back(tmp_path):
    record = manifest.RunRecord(str(tmp_path), "rbf", 0.0, "days", {}, {}, 0.0)
    assert manifest.read(str(tmp_path)) == (None, None)
    failed = manifest.compose(record, {"ok": 1, "failed": 1}, 0, FITS, [], finished_at=1.0)
    path = manifest.write(str(tmp_path), failed)
    assert path == str(tmp_path / "_FAILED.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_FAILED.json"]  # no .tmp left
    assert manifest.read(str(tmp_path) + "/") == ("_FAILED.json", failed)
    succeeded = manifest.compose(record, {"ok": 2}, 3, FITS, [], finished_at=1.0)
    manifest.write(str(tmp_path), succeeded)
    assert manifest.find(str(tmp_path)) == "_SUCCESS.json"  # it wins over _FAILED.json
    assert manifest.summary(manifest.load(str(tmp_path), "_SUCCESS.json")) == (
        "2 series: 2 ok, 0 skipped, 0 failed; 3 rows with a null id")


def test_a_manifest_that_is_not_a_json_object_is_refused(tmp_path):
    (tmp_path / "_SUCCESS.json").write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="holds no JSON object"):
        manifest.read(str(tmp_path))


def test_series_without_predictions_are_warned_of_after_the_job():
    """Counts the job's log may not show: each reason without forecast rows,
    series whose posterior failed, grids that hide a period; none without."""
    assert manifest.warnings({"predictions": {"no_step": {}, "not_predicted": 0,
                                              "coarse_grid": 0}}) == []
    assert manifest.warnings({"predictions": None}) == []
    said = manifest.warnings({"predictions": {
        "no_step": {"too irregular to have a step": 3, "fewer than 2 distinct times": 1},
        "not_predicted": 2, "coarse_grid": 5}})
    assert len(said) == 3
    assert said[0].startswith("4 ok series got no forecast rows (1 fewer than 2 distinct "
                              "times; 3 too irregular to have a step;")
    assert said[1].startswith("2 ok series got no predictions") and "log names each" in said[1]
    assert said[2].startswith("5 series have a forecast spacing coarser")


def test_the_backtests_median_lies_within_its_mases():
    """The median comes from 2 % bins, whose centre may lie outside the
    scored MASEs: one series of 0.409 was said to have a median of 0.406."""
    from pipeline.io import holdout_totals

    acc = holdout_totals.add(holdout_totals.create(), {
        "holdout_points": 3, "holdout_coverage_95": 1.0, "holdout_mase": 0.409})
    assert holdout_totals.extract(acc)["mase_median"] == 0.409
    other = holdout_totals.add(holdout_totals.create(), {
        "holdout_points": 3, "holdout_coverage_95": 1.0, "holdout_mase": 0.4091})
    merged = holdout_totals.extract(holdout_totals.merge([acc, other]))
    assert 0.409 <= merged["mase_median"] <= 0.4091


def test_the_jobs_read_counts_stand_and_no_path_holds_a_secret():
    """The input's files and rows are the job's count (files may come or go
    after the launcher looked), and the input pattern and previous_output
    are recorded without their secrets, as the options are."""
    record = manifest.RunRecord(
        "out", "rbf", 1.0, "days",
        {"pattern": "https://reader:hunter2pass@data.example/in/*.parquet", "files": 1,
         "layout": "long", "rows": 10}, {}, 0.0,
        previous_output="https://reader:hunter2pass@data.example/night1")
    read = {"files": 3, "rows": 99, "unreadable": {"count": 0, "files": []}}
    found = manifest.compose(record, {"ok": 2}, 0, FITS, [], finished_at=1.0, read=read)
    assert found["input"] == {"pattern": "https://reader:<redacted>@data.example/in/*.parquet",
                              "files": 3, "layout": "long", "rows": 99}
    assert found["previous_output"] == "https://reader:<redacted>@data.example/night1"
    assert "hunter2pass" not in json.dumps(found)


def test_a_link_planted_at_the_temporary_name_is_not_written_through(tmp_path):
    """Another user who can write in a shared output folder plants
    _SUCCESS.json.tmp as a link to a file of the user's: the manifest
    replaces the link, and the file it names is left as it was."""
    output, victim = tmp_path / "out", tmp_path / "elsewhere.txt"
    output.mkdir()
    victim.write_text("the user's file\n")
    os.symlink(victim, output / "_SUCCESS.json.tmp")
    os.symlink(tmp_path / "not-yet", output / "_FAILED.json.tmp")  # a dangling one: not created
    record = manifest.RunRecord(str(output), "rbf", 0.0, "days", {}, {}, 0.0)
    for counts in ({"ok": 2}, {"ok": 1, "failed": 1}):
        manifest.write(str(output), manifest.compose(record, counts, 0, FITS, [], finished_at=1.0))
    assert victim.read_text() == "the user's file\n" and not (tmp_path / "not-yet").exists()
    assert sorted(p.name for p in output.iterdir()) == ["_FAILED.json", "_SUCCESS.json"]
    assert not any(p.is_symlink() for p in output.iterdir())
    assert manifest.read(str(output))[1]["counts"]["ok"] == 2
