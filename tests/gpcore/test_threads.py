"""gpcore.threads' process settings that need no TensorFlow: the garbage
collector paused for the heavy imports. (The thread counts and the process
environment are tested where a process applies them:
tests/pipeline/test_runtime.py.)"""
import gc
import threading
import weakref

import pytest

from gpcore import threads


@pytest.fixture
def collector_as_found():
    """The test may turn the collector off; it is left as the test found it."""
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


class Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self):
        self.me = self


def test_the_collector_is_off_inside_and_on_again_after_the_last_block(collector_as_found):
    gc.enable()
    with threads.collection_paused():
        assert not gc.isenabled()
        with threads.collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still runs
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_as_found):
    gc.disable()
    with threads.collection_paused():
        pass
    assert not gc.isenabled()


def test_what_the_block_made_is_frozen_and_later_cycles_are_collected(collector_as_found):
    gc.enable()
    frozen = gc.get_freeze_count()
    with threads.collection_paused():
        kept = [Cycle() for _ in range(1000)]
    assert gc.get_freeze_count() >= frozen + len(kept)
    freed = threading.Event()
    garbage = Cycle()
    weakref.finalize(garbage, freed.set)
    del garbage
    gc.collect()
    assert freed.is_set()  # a cycle made after the block is still freed


def test_blocks_in_two_threads_leave_the_collector_on_after_both(collector_as_found):
    gc.enable()
    inside, release = threading.Event(), threading.Event()

    def other():
        with threads.collection_paused():
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=other)
    worker.start()
    inside.wait(10)
    with threads.collection_paused():
        pass
    assert not gc.isenabled()  # the other thread's block still runs
    release.set()
    worker.join(10)
    assert gc.isenabled()


def test_a_module_already_loaded_is_not_imported_again_and_nothing_is_frozen(collector_as_found):
    gc.enable()
    frozen = gc.get_freeze_count()
    with threads.collection_paused("gc"):  # loaded in every process
        assert gc.isenabled()
        kept = [Cycle() for _ in range(1000)]
    # Nothing was frozen: a freeze would have added at least the 1,000
    # cycles. (Frozen objects that other threads free meanwhile lower the
    # count: a suite's earlier tests leave some.)
    assert gc.get_freeze_count() <= frozen and len(kept) == 1000

