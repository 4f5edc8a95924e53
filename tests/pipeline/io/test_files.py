"""Reading many files at once (pipeline.io.files)."""
from __future__ import annotations

import threading

import pytest

from pipeline.io.files import map_files


def test_results_come_in_item_order_and_nothing_is_a_no_op():
    assert map_files(lambda n: n * n, range(40)) == [n * n for n in range(40)]
    assert map_files(lambda n: n, []) == []


def test_the_first_failing_item_in_order_is_reported_not_the_fastest():
    second_failed = threading.Event()

    def check(n):
        if n == 1:  # fails only after item 2 has failed
            second_failed.wait(5)
            raise ValueError("item 1")
        if n == 2:
            second_failed.set()
            raise ValueError("item 2")
        return n

    with pytest.raises(ValueError, match="item 1"):
        map_files(check, [0, 1, 2, 3])


def test_a_local_file_is_given_to_arrows_scan_as_arrows_own(tmp_path):
    """pq.read_table's scan threads release their file after the call
    returns; a Python file's release takes the GIL, which at interpreter exit
    aborted the process (SIGABRT, seen in 1 of about 100 runs). A local file
    goes to Arrow as its own file, read as Beam's would be."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.io.files import open_file, open_for_scan

    path = tmp_path / "part.parquet"
    pq.write_table(pa.table({"series_id": ["a", "b"], "t": [0.0, 1.0]}), path)
    with open_for_scan(str(path)) as f:
        assert isinstance(f, pa.NativeFile) and not isinstance(f, pa.PythonFile), type(f)
        table = pq.read_table(f, filters=[("series_id", "=", "b")])
    with open_file(str(path)) as beams:
        assert table.equals(pq.read_table(beams, filters=[("series_id", "=", "b")]))
    assert table.column("t").to_pylist() == [1.0]


def test_a_missing_local_file_is_said_as_open_says_it(tmp_path):
    from pipeline.io.files import open_for_scan

    path = str(tmp_path / "gone.parquet")
    with pytest.raises(FileNotFoundError) as said:
        open_for_scan(path)
    with pytest.raises(FileNotFoundError) as opened:
        open(path, "rb")
    assert (said.value.errno, said.value.strerror, said.value.filename) == (
        opened.value.errno, opened.value.strerror, opened.value.filename)
