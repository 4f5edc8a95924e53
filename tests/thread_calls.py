"""Calls made at once on threads of their own, for the tests of what is
safe to share between threads (a fitter, fit_frame)."""
from __future__ import annotations

import threading

JOIN_S = 120.0  # a deadlock fails here, not in the suite's timeout


def at_once(calls, join_s: float = JOIN_S):
    """Runs each call on a thread of its own, started together by a barrier;
    -> their results in order (an exception is re-raised); a call not back
    within join_s seconds fails the test."""
    barrier = threading.Barrier(len(calls))
    results, errors = [None] * len(calls), []

    def run(k):
        barrier.wait(timeout=join_s)
        try:
            results[k] = calls[k]()
        except BaseException as err:  # pylint: disable=broad-except  (the test's to report)
            errors.append(err)

    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(join_s)
        assert not thread.is_alive(), f"a call did not return within {join_s:.0f} s"
    if errors:
        raise errors[0]
    return results
