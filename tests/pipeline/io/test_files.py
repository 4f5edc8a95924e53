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
