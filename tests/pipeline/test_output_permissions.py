"""An output folder this user may write only in part (a table's folder
another user's run made, 755): exit 5 at start, one line naming the folder,
and the earlier run's output as it was, _SUCCESS.json included (README,
"Exit codes")."""
from __future__ import annotations

import os

from gpfit_runs import as_a_user_without_access, files_in, write_long_parquet
from pipeline_data import gpfit


def _contents(folder: str) -> dict[str, bytes]:
    found = {}
    for name in files_in(folder):
        with open(os.path.join(folder, name), "rb") as f:
            found[name] = f.read()
    return found


def test_a_table_folder_this_user_cannot_write_exits_5_and_keeps_the_earlier_run(tmp_path):
    # The lock and the manifest's deletion passed (the output folder is
    # writable); the first shard's deletion did not: exit 5 "at start", the
    # earlier run's _SUCCESS.json gone and its shards kept.
    series = str(write_long_parquet(tmp_path / "in"))
    output = str(tmp_path / "night")
    assert gpfit(series, output, "--kernel", "rbf").code == 0
    before = _contents(output)
    table = os.path.join(output, "params")
    os.chmod(table, 0o555)
    try:
        done = as_a_user_without_access("-m", "pipeline", "--input", series, "--output", output,
                                        "--kernel", "rbf")
    finally:
        os.chmod(table, 0o755)
    assert done.returncode == 5, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"gpfit: error: cannot write the output folder {output}: permission denied ([Errno 13] "
        f"Permission denied: '{table}'); free space or make it writable (or give another "
        "--output), then run again into the same folder: its gpfit files are replaced"]
    assert _contents(output) == before  # the lock released, nothing deleted
