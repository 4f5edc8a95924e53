"""The output folder's rules (pipeline.io.outputs)."""
from __future__ import annotations

import os

from pipeline.io import outputs


def test_previous_run_files_are_cleared_including_temp_folders(tmp_path):
    out = tmp_path / "out"
    os.makedirs(out / "beam-temp-params-abc")
    for name in ("params-00000-of-00003.parquet", "_SUCCESS.json",
                 "beam-temp-params-abc/part"):
        (out / name).write_text("old")
    files = outputs.check_output(str(out), ())
    assert len(files) == 3
    outputs.clear_output(str(out), files)
    assert os.listdir(out) == []


def test_shard_names_past_99999_shards_are_gpfits(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    # Beam widens the shard number past the template's five digits.
    for name in ("params-000007-of-120000.parquet", "params-119999-of-120000.parquet",
                 "_RUNNING.json"):
        (out / name).write_text("old")
    files = outputs.check_output(str(out), ())
    # The lock is gpfit's, but not the previous run's to clear.
    assert sorted(os.path.basename(f) for f in files) == [
        "params-000007-of-120000.parquet", "params-119999-of-120000.parquet"]


def test_the_manifest_is_deleted_before_any_shard():
    files = ["o/params-00000-of-00002.parquet", "o/_FAILED.json", "o/_SUCCESS.json",
             "o/params-00001-of-00002.parquet"]
    first, then = outputs.deletion_order(files)
    assert first == ["o/_FAILED.json", "o/_SUCCESS.json"]
    assert then == ["o/params-00000-of-00002.parquet", "o/params-00001-of-00002.parquet"]
