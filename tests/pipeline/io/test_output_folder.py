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
