"""Input that breaks during the run: a file whose footer is fine but whose
data page is corrupt, and a file the launcher's footer sample did not see.
The job reads every other file, writes _FAILED.json naming the file, and
gpfit exits 3 with the path in its last lines; no _SUCCESS.json."""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io import inputs, matching
from gpfit_runs import write_encrypted
from pipeline_data import RUN_OPTIONS, gpfit


def _series_table(ids: list[str], n: int = 24) -> pa.Table:
    t = np.arange(float(n))
    return pa.table({"series_id": np.repeat(ids, n), "t": np.tile(t, len(ids)),
                     "y": np.concatenate([np.sin(t / (3 + i)) for i in range(len(ids))])})


def _corrupt_a_data_page(path: str, row_group: int, column: int) -> None:
    """Overwrites the header of one data page; the footer stays valid."""
    offset = pq.ParquetFile(path).metadata.row_group(row_group).column(column).data_page_offset
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(b"\xff" * 16)


def _failed_manifest(output: str) -> dict:
    assert not os.path.exists(os.path.join(output, "_SUCCESS.json"))
    with open(os.path.join(output, "_FAILED.json")) as f:
        return json.load(f)


def test_a_corrupt_data_page_is_named_and_the_run_exits_3(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(_series_table(["a", "b"]), folder / "good.parquet")
    bad = str(folder / "bad.parquet")
    pq.write_table(_series_table(["c", "d"]), bad, row_group_size=24)  # one series per group
    _corrupt_a_data_page(bad, row_group=1, column=2)
    pq.ParquetFile(bad).metadata  # the footer still reads: the launcher accepts the file

    run = gpfit(str(folder), str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 3, run.stderr
    last = run.stderr.strip().splitlines()[-2:]
    assert any(bad in line and "row group 1" in line for line in last), last
    assert "input file(s) could not be read" in run.stderr
    found = _failed_manifest(run.output)
    assert found["status"] == "failed"
    assert found["unreadable_files"]["count"] == 1
    assert found["unreadable_files"]["files"][0]["path"] == bad
    # Everything else was read and fitted.
    assert sorted(r["series_id"] for r in run.rows()) == ["a", "b", "c"]
    assert not os.path.exists(os.path.join(run.output, "_RUNNING.json"))


def test_a_file_whose_id_column_is_encrypted_is_named_and_the_run_exits_3(tmp_path):
    """Parquet modular encryption with a plaintext footer: the footer reads,
    the encrypted columns do not. Asking the id column's chunk for a
    _metadata summary's file path aborted gpfit (SIGABRT, exit 134, no
    message: Arrow's exception crossed a noexcept accessor); the file is now
    unreadable as a corrupt page is, and a file whose encrypted column gpfit
    does not read is read."""
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(_series_table(["a"]), folder / "good.parquet")
    sealed = str(folder / "sealed.parquet")
    write_encrypted(sealed, _series_table(["b"]), ["series_id"], plaintext_footer=True)
    other = _series_table(["c"]).append_column("customer", pa.array(["x"] * 24))
    write_encrypted(folder / "other.parquet", other, ["customer"], plaintext_footer=True)

    run = gpfit(str(folder), str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 3, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last == (f"gpfit: unreadable: {sealed}: row group 0 cannot be read: Cannot decrypt "
                    "ColumnMetadata. FileDecryption is not setup correctly"), last
    assert _failed_manifest(run.output)["unreadable_files"]["files"][0]["path"] == sealed
    assert sorted(r["series_id"] for r in run.rows()) == ["a", "c"]


def test_a_file_with_two_corrupt_row_groups_is_one_unreadable_file(tmp_path):
    # Each row group is read apart: the file was counted, and named, once
    # per corrupt row group ("2 input file(s) could not be read").
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(_series_table(["a"]), folder / "good.parquet")
    bad = str(folder / "bad.parquet")
    pq.write_table(_series_table(["c", "d", "e"]), bad, row_group_size=24)
    for row_group in (1, 2):
        _corrupt_a_data_page(bad, row_group=row_group, column=2)

    run = gpfit(str(folder), str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 3, run.stderr
    assert "; 1 input file(s) could not be read" in run.stderr
    named = [line for line in run.stderr.splitlines() if line.startswith("gpfit: unreadable:")]
    assert len(named) == 1 and f"{bad}: row group 1 cannot be read" in named[0], named
    unreadable = _failed_manifest(run.output)["unreadable_files"]
    assert unreadable["count"] == 1
    assert [f["path"] for f in unreadable["files"]] == [bad]
    assert sorted(r["series_id"] for r in run.rows()) == ["a", "c"]


def test_a_file_the_launcher_did_not_sample_is_checked_on_the_workers(tmp_path, monkeypatch):
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(5):
        pq.write_table(_series_table([f"s{i}"]), folder / f"part-{i}.parquet")
    (folder / "part-2.parquet").write_bytes(b"not parquet at all")
    monkeypatch.setattr(inputs, "MAX_FOOTERS", 2)  # the first and the last file

    run = gpfit(str(folder), str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 3, run.stderr
    bad = str(folder / "part-2.parquet")
    assert bad in run.stderr.strip().splitlines()[-1]
    assert "is not a Parquet file" in run.stderr.strip().splitlines()[-1]
    found = _failed_manifest(run.output)
    assert found["input"]["files"] == 4 and found["counts"]["series_read"] == 4
    assert [f["path"] for f in found["unreadable_files"]["files"]] == [bad]


def test_a_file_the_launcher_did_not_sample_with_another_kind_of_time_is_refused(
        tmp_path, monkeypatch):
    # Its timestamps would become days since 1970 beside the other files'
    # plain numbers: a series of both units, fitted without a word.
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(5):
        pq.write_table(_series_table([f"s{i}"]), folder / f"part-{i}.parquet")
    dated = _series_table(["s2"]).set_column(
        1, "t", pa.array(np.arange(24) * 86_400_000_000, pa.timestamp("us", tz="UTC")))
    pq.write_table(dated, folder / "part-2.parquet")
    monkeypatch.setattr(inputs, "MAX_FOOTERS", 2)  # the first and the last file

    run = gpfit(str(folder), str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 3, run.stderr
    bad = str(folder / "part-2.parquet")
    last = run.stderr.strip().splitlines()[-1]
    assert bad in last and "give one kind of time" in last, run.stderr
    found = _failed_manifest(run.output)
    assert found["counts"]["series_read"] == 4
    assert [f["path"] for f in found["unreadable_files"]["files"]] == [bad]


def test_the_launcher_reads_a_bounded_sample_of_footers(tmp_path):
    for i in range(10):
        pq.write_table(_series_table([f"s{i}"]), tmp_path / f"part-{i}.parquet")
    spec = inputs.inspect(str(tmp_path), inputs.Columns(), max_footers=4)
    assert len(spec.files) == 10 and spec.footers_checked == 4
    assert spec.glob == os.path.join(str(tmp_path), "*") and spec.data_only
    assert matching.sample(list(range(10)), 4) == [0, 3, 6, 9]


def test_an_offline_build_matches_a_folder_as_a_real_run_does(tmp_path):
    """A Dataflow dry run cannot list its gs:// input: it matched a folder
    given with its "/" as a file of that name, where the real run matches
    the folder's data files."""
    pq.write_table(_series_table(["a"]), tmp_path / "part-0.parquet")
    real = inputs.inspect(str(tmp_path) + "/", inputs.Columns())
    offline = inputs.uninspected(str(tmp_path) + "/", inputs.Columns())
    assert (offline.glob, offline.data_only) == (real.glob, real.data_only)
    assert (inputs.uninspected("gs://b/in/", inputs.Columns()).glob,
            inputs.uninspected("gs://b/in/*.parquet", inputs.Columns()).glob,
            inputs.uninspected("gs://b/in/x.parquet", inputs.Columns()).data_only) == (
        "gs://b/in/*", "gs://b/in/*.parquet", False)


def test_the_job_matches_what_the_launcher_matched(tmp_path):
    """Folders, and names starting with _ or ., are not data, on the workers
    too; a file named explicitly is read whatever its name."""
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    pq.write_table(_series_table(["a"]), folder / "part-0.parquet")
    pq.write_table(_series_table(["b"]), folder / "sub" / "part-1.parquet")
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-0.parquet.crc").write_text("crc")
    run = gpfit(str(folder), str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 0, run.stderr
    assert [r["series_id"] for r in run.rows()] == ["a"]
    assert run.manifest["input"]["files"] == 1
    named = tmp_path / "_odd.parquet"
    pq.write_table(_series_table(["c"]), named)
    run = gpfit(str(named), str(tmp_path / "out2"), *RUN_OPTIONS)
    assert run.code == 0, run.stderr
    assert [r["series_id"] for r in run.rows()] == ["c"]


def test_a_glob_leaves_out_folders_named_with_underscore_or_dot(tmp_path):
    """As in Hadoop and Spark, a folder starting with _ or . holds no data: a
    Spark write's _temporary/ copy of a part, a notebook's checkpoints. Read,
    their rows doubled every point of the series they copy."""
    folder = tmp_path / "in"
    for sub in ("sub", "_temporary/0/_temporary/attempt_1", ".ipynb_checkpoints"):
        (folder / sub).mkdir(parents=True)
    pq.write_table(_series_table(["a"]), folder / "part-0.parquet")
    pq.write_table(_series_table(["a"]), folder / "_temporary/0/_temporary/attempt_1/part-0.parquet")
    pq.write_table(_series_table(["b"]), folder / "sub" / "part-1.parquet")
    pq.write_table(_series_table(["b"]), folder / ".ipynb_checkpoints" / "part-1.parquet")
    pattern = str(folder / "**")
    assert [os.path.relpath(p, folder) for p in inputs.inspect(pattern, inputs.Columns()).files] \
        == ["part-0.parquet", "sub/part-1.parquet"]
    run = gpfit(pattern, str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 0, run.stderr
    assert [(r["series_id"], r["n_points"]) for r in run.rows()] == [("a", 24), ("b", 24)]
    assert run.manifest["input"]["files"] == 2
    # A folder asked for by a part of the pattern that starts with _ is read.
    asked = folder / "_tempor*" / "0" / "_temporary" / "attempt_*" / "*.parquet"
    assert len(inputs.inspect(str(asked), inputs.Columns()).files) == 1


def test_a_double_star_matches_no_folder_too(tmp_path):
    """'in/**/*.parquet' holds the files directly in in/, as Python's and the
    shells' globs do ("any depth"); Beam's own ** needs a folder there."""
    folder = tmp_path / "in"
    (folder / "sub" / "deeper").mkdir(parents=True)
    pq.write_table(_series_table(["a"]), folder / "part-0.parquet")
    pq.write_table(_series_table(["b"]), folder / "sub" / "part-1.parquet")
    pq.write_table(_series_table(["c"]), folder / "sub" / "deeper" / "part-2.parquet")
    pq.write_table(_series_table(["d"]), folder / "sub" / "part-3.other")
    pattern = str(folder / "**" / "*.parquet")
    assert len(inputs.inspect(pattern, inputs.Columns()).files) == 3
    run = gpfit(pattern, str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 0, run.stderr
    assert [r["series_id"] for r in run.rows()] == ["a", "b", "c"]
    assert run.manifest["input"]["files"] == 3


def test_a_folder_or_file_named_with_glob_characters_is_read_as_it_is(tmp_path):
    """An existing path is not a glob, whatever its characters: 'runs [v2]'
    was taken for a glob matching 'runs v' or 'runs 2', and refused."""
    folder = tmp_path / "runs [v2]"
    folder.mkdir()
    pq.write_table(_series_table(["a"]), folder / "part [1].parquet")
    pq.write_table(_series_table(["b"]), folder / "part-2.parquet")
    run = gpfit(str(folder), str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 0, run.stderr
    assert [r["series_id"] for r in run.rows()] == ["a", "b"]
    run = gpfit(str(folder / "part [1].parquet"), str(tmp_path / "out"), *RUN_OPTIONS)
    assert run.code == 0, run.stderr
    assert [r["series_id"] for r in run.rows()] == ["a"]


def test_relative_globs_and_folders_with_a_wildcard_first_are_read(tmp_path, monkeypatch):
    """Relative to the working folder, a glob whose first name holds a
    wildcard ('*.parquet') and a folder named with glob characters
    ('runs [v2]') are read (README, "Input formats"): Beam lists the folder
    of a glob's part before its first wildcard, here none, and matched
    nothing."""
    monkeypatch.chdir(tmp_path)
    pq.write_table(_series_table(["a"]), "a.parquet")
    os.mkdir("runs [v2]")
    pq.write_table(_series_table(["b"]), "runs [v2]/part [1].parquet")
    run = gpfit("*.parquet", "out1", *RUN_OPTIONS)
    assert run.code == 0, run.stderr
    assert [r["series_id"] for r in run.rows()] == ["a"]
    for given, ids in (("runs [v2]", ["b"]), ("runs [v2]/part [1].parquet", ["b"]),
                       ("runs*/*.parquet", ["b"])):
        run = gpfit(given, "out2", *RUN_OPTIONS)
        assert run.code == 0, (given, run.stderr)
        assert sorted(r["series_id"] for r in run.rows()) == ids


def test_a_file_of_many_row_groups_parses_its_footer_a_few_times(tmp_path, monkeypatch):
    # A streaming writer (a ParquetWriter fed small batches) leaves a file of
    # thousands of row groups. Each was read by opening the file anew, which
    # parses its footer, the size of which grows with the row groups: a
    # 1M-row file of 10,001 row groups took 607 s where one row group took
    # 14 s. The fit is that of the same rows in one row group.
    table = _series_table(["a", "b", "c"], n=200)
    order = np.random.default_rng(0).permutation(table.num_rows)
    table = table.take(order)
    (tmp_path / "many").mkdir()
    (tmp_path / "one").mkdir()
    pq.write_table(table, tmp_path / "many" / "x.parquet", row_group_size=1)
    pq.write_table(table, tmp_path / "one" / "x.parquet")
    assert pq.ParquetFile(tmp_path / "many" / "x.parquet").metadata.num_row_groups == 600
    opened = []
    real_open = inputs.open_file
    monkeypatch.setattr(inputs, "open_file", lambda path: opened.append(path) or real_open(path))
    many = gpfit(str(tmp_path / "many"), str(tmp_path / "out_many"), *RUN_OPTIONS)
    assert many.code == 0, many.stderr
    # The launcher's footer check, the workers' and one read of every row group.
    assert len(opened) <= 3, len(opened)
    one = gpfit(str(tmp_path / "one"), str(tmp_path / "out_one"), *RUN_OPTIONS)
    assert [(r["series_id"], r["n_points"], r["nll"], r["length_scale"]) for r in many.rows()] \
        == [(r["series_id"], r["n_points"], r["nll"], r["length_scale"]) for r in one.rows()]


def test_row_groups_are_read_in_ranges_of_bounded_rows_and_groups(monkeypatch):
    monkeypatch.setattr(inputs, "ROWS_PER_READ", 10)
    monkeypatch.setattr(inputs, "GROUPS_PER_READ", 3)
    assert inputs.read_ranges([]) == ()
    # A group larger than a read is a read of its own; no range is empty.
    assert inputs.read_ranges([4, 4, 4, 25, 1, 1, 1, 1, 0]) == ((0, 2), (2, 3), (3, 4), (4, 7),
                                                              (7, 9))


_FOOTER_WITHOUT_DESCRIPTORS = """
import os, resource, sys
from pipeline.io import inputs
from pipeline.io.errors import InputError
path = sys.argv[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
try:
    inputs.check_footer(path, os.path.getsize(path), inputs.Columns("series_id", "t", "y"))
except InputError as err:
    print(err)
"""


def test_a_footer_unread_for_want_of_descriptors_is_not_called_not_parquet(tmp_path):
    """Under `ulimit -n 9`, 400 input files: "part-0089.parquet is not a
    Parquet file ([Errno 24] Too many open files ...); remove it from the
    input or convert it to Parquet", a good file. It says the limit."""
    import subprocess
    import sys

    path = str(tmp_path / "part-0000.parquet")
    pq.write_table(pa.table({"series_id": ["a"] * 3, "t": [0.0, 1.0, 2.0], "y": [1.0, 2.0, 3.0]}),
                   path)
    done = subprocess.run([sys.executable, "-c", _FOOTER_WITHOUT_DESCRIPTORS, path],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"{path} cannot be opened: this process has no file descriptor left (Too many open "
        "files; ulimit -n is 64): raise the limit, e.g. ulimit -n 4096 in the shell that runs "
        "gpfit, and run again"), done.stdout
