"""The output folder's rules (pipeline.io.outputs): gpfit replaces exactly
the files it writes, and nothing else, on real folders."""
from __future__ import annotations

import os

import pytest
from apache_beam.io.filesystem import BeamIOError

from pipeline.io import outputs
from pipeline.io.errors import UsageError

UUID1 = "0123456789abcdef0123456789abcdef"
UUID4 = "01234567-89ab-4cde-8f01-23456789abcd"


def _touch(root, *names):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("old")


def test_previous_run_files_are_cleared_including_temp_folders(tmp_path):
    out = tmp_path / "out"
    _touch(out, "params/part-00000-of-00003.parquet", "predictions/part-00000-of-00001.parquet",
           "_SUCCESS.json", "_SUCCESS.json.tmp", "_RUNNING.json.tmp",
           f"beam-temp-params-{UUID1}/{UUID4}.params.parquet",
           f"beam-temp-predictions-{UUID1}/{UUID4}.predictions.parquet")
    files = outputs.check_output(str(out), ())
    assert len(files) == 7
    outputs.clear_output(str(out), files, outputs.TABLES)
    # Only the tables' (empty) folders are left, ready for Beam's renames.
    assert sorted(os.listdir(out)) == ["params", "predictions"]
    assert os.listdir(out / "params") == [] and os.listdir(out / "predictions") == []


def test_a_040_layout_folder_is_gpfits_and_cleared(tmp_path):
    out = tmp_path / "out"
    _touch(out, "params-00000-of-00002.parquet", "params-00001-of-00002.parquet",
           "predictions-00000-of-00001.parquet", "_SUCCESS.json")
    files = outputs.check_output(str(out), ())
    outputs.clear_output(str(out), files)
    assert sorted(os.listdir(out)) == ["params"]


@pytest.mark.parametrize("name", [
    "beam-temp-params-backup/thesis.tex",  # under a Beam-like folder, not Beam's names
    f"beam-temp-params-backup/{UUID4}.params.parquet",  # Beam's file name, not its folder's
    f"beam-temp-params-{UUID1}/notes.txt",
    f"beam-temp-params-{UUID1}/copy.params.parquet",  # not Beam's uuid4 name
    "settings.json.tmp",                    # a .json.tmp that is not a manifest's
    "_SUCCESS.json.bak",                    # someone's copy of a manifest
    "params/notes.txt",
    "params/part-0.parquet",
    "params/part-1-of-2.parquet",           # Beam pads shard numbers to five digits
    "predictions/data.parquet",
    "mydir/_SUCCESS.json",
    "train-00000-of-00001.parquet",          # a shard name, but not a table's
])
def test_files_gpfit_did_not_write_are_refused_and_kept(tmp_path, name):
    out = tmp_path / "out"
    _touch(out, "_SUCCESS.json", "params/part-00000-of-00001.parquet", name)
    with pytest.raises(UsageError, match="which gpfit did not write"):
        outputs.check_output(str(out), ())
    assert (out / name).read_text() == "old"


@pytest.mark.parametrize("name", ["keep-me", "beam-temp-params-backup"])
def test_an_empty_folder_of_someone_else_survives_a_clear(tmp_path, name):
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    outputs.clear_output(str(out), outputs.check_output(str(out), ()))
    assert (out / name).is_dir()


@pytest.mark.parametrize("link, target", [("params", "elsewhere"),
                                          ("params/part-00000-of-00001.parquet",
                                           "elsewhere/part-00000-of-00001.parquet")])
def test_a_symbolic_link_inside_the_output_is_refused(tmp_path, link, target):
    """A linked folder or a linked file, even under one of gpfit's names."""
    _touch(tmp_path, "elsewhere/part-00000-of-00001.parquet")
    out = tmp_path / "out"
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(tmp_path / target, out / link)
    with pytest.raises(UsageError, match=f"symbolic link '{link}'"):
        outputs.check_output(str(out), ())
    assert (tmp_path / "elsewhere" / "part-00000-of-00001.parquet").read_text() == "old"


def test_output_below_a_regular_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        outputs.check_output(str(tmp_path / "file" / "out"), ())


def test_folders_are_compared_resolved(tmp_path):
    (tmp_path / "night1").mkdir()
    os.symlink(tmp_path / "night1", tmp_path / "latest")
    assert outputs.same_folder(str(tmp_path / "latest"), str(tmp_path / "night1/"))
    assert not outputs.same_folder(str(tmp_path / "latest"), str(tmp_path / "night2"))


def test_input_in_a_sibling_folder_whose_name_extends_the_outputs_is_not_inside_it(tmp_path):
    """out-2/a.parquet is beside out/, not in it: a run reading it into out/
    goes ahead; one reading out/a.parquet is refused."""
    _touch(tmp_path, "out-2/a.parquet")
    assert outputs.check_output(str(tmp_path / "out"), (str(tmp_path / "out-2" / "a.parquet"),)
                                ) == []
    _touch(tmp_path, "out/a.parquet")
    with pytest.raises(UsageError, match="lies inside the output folder"):
        outputs.check_output(str(tmp_path / "out"), (str(tmp_path / "out" / "a.parquet"),))


@pytest.mark.parametrize("pattern, output, reads", [
    ("data/**", "data/out", True),
    ("data/**/*.parquet", "data/out", True),
    ("data/*/*/*.parquet", "data/out", True),
    ("link/**", "data/out", True),  # through a symbolic link to data
    ("data/*.parquet", "data/out", False),
    ("data/*", "data/out", False),  # the folder itself is not data
    ("data/**", "out", False),
    ("data/*/predictions/*.parquet", "data/out", True),  # the predictions' shards only
    ("data/a.parquet", "data/out", False),
])
def test_an_input_glob_that_would_read_the_output_is_found(tmp_path, pattern, output, reads):
    (tmp_path / "data").mkdir()
    os.symlink(tmp_path / "data", tmp_path / "link")
    assert outputs.would_read(str(tmp_path / pattern), str(tmp_path / output)) is reads
    # Unprobed, as after the input failed to read: the same answers.
    assert outputs.would_read(str(tmp_path / pattern), str(tmp_path / output),
                              probe=False) is reads


def test_an_unprobed_gs_glob_is_judged_without_a_request():
    """Offline, asking Cloud Storage whether a pattern names an object
    retries for 120 s: unprobed, the answer comes from the names alone."""
    bucket = "gs://gpfit-offline-test-bucket"
    assert outputs.would_read(f"{bucket}/data/**", f"{bucket}/data/out", probe=False)
    assert not outputs.would_read(f"{bucket}/data/*.parquet", f"{bucket}/data/out", probe=False)


def test_shard_names_past_99999_shards_are_gpfits(tmp_path):
    out = tmp_path / "out"
    # Beam widens the shard number past the template's five digits.
    _touch(out, "params/part-000007-of-120000.parquet", "params/part-119999-of-120000.parquet",
           "_RUNNING.json")
    files = outputs.check_output(str(out), ())
    # The lock is gpfit's, but not the previous run's to clear.
    assert sorted(outputs.relative(f, str(out)) for f in files) == [
        "params/part-000007-of-120000.parquet", "params/part-119999-of-120000.parquet"]


def test_the_manifest_is_deleted_before_any_shard():
    files = ["o/params/part-00000-of-00002.parquet", "o/_FAILED.json", "o/_SUCCESS.json",
             "o/params/part-00001-of-00002.parquet"]
    first, then = outputs.deletion_order(files)
    assert first == ["o/_FAILED.json", "o/_SUCCESS.json"]
    assert then == ["o/params/part-00000-of-00002.parquet", "o/params/part-00001-of-00002.parquet"]


def test_a_clear_that_fails_midway_has_deleted_the_manifest_already(tmp_path):
    """A shard that cannot be deleted (here: gone meanwhile) stops the clear;
    by then the manifest is gone, so no reader takes the half-cleared folder
    for a finished run."""
    out = tmp_path / "out"
    _touch(out, "_SUCCESS.json", "params/part-00001-of-00002.parquet")
    files = outputs.check_output(str(out), ())
    vanished = str(out / "params" / "part-00000-of-00002.parquet")
    with pytest.raises(BeamIOError, match="part-00000-of-00002"):
        outputs.clear_output(str(out), [vanished, *files])
    assert not (out / "_SUCCESS.json").exists()


def test_a_linked_folder_named_as_a_table_is_left_by_the_clear(tmp_path):
    """remove_empty_folders removes only real folders: a link named params/
    (made after the check) is neither followed nor removed, and no error."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(elsewhere, out / "params")
    outputs.remove_empty_folders(str(out))
    assert os.path.islink(out / "params") and elsewhere.is_dir()


def test_finders_ds_store_is_neither_refused_nor_deleted(tmp_path):
    """A user looked at yesterday's output in macOS Finder, which left
    .DS_Store in the folders it showed: the run goes ahead and keeps them."""
    out = tmp_path / "out"
    _touch(out, "_SUCCESS.json", "params/part-00000-of-00001.parquet", ".DS_Store",
           "params/.DS_Store")
    files = outputs.check_output(str(out), ())
    assert sorted(outputs.relative(f, str(out)) for f in files) == [
        "_SUCCESS.json", "params/part-00000-of-00001.parquet"]
    outputs.clear_output(str(out), files)
    assert (out / ".DS_Store").read_text() == "old"
    assert os.listdir(out / "params") == [".DS_Store"]


@pytest.mark.parametrize("output", ["gs://bucket", "gs://bucket/", "/"])
def test_a_file_in_a_root_run_folder_is_not_told_to_move_into_it(output):
    """A bucket's root (or the file system's) has no folder beside it: the
    refusal named 'gs:/report.html' (not a gs:// path) and '/report.html'
    (the file itself). It says to move the file out, naming no place."""
    said = outputs._foreign(output, "report.html", previous=True)
    assert "report.html" in said and "move it out of the folder" in said
    assert "e.g. to" not in said, said
