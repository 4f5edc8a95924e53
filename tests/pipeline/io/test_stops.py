"""pipeline/io/stops.py: a stop signal held over a block that must finish."""
from __future__ import annotations

import os
import signal

import pytest

from pipeline.io import stops


def test_a_stop_in_a_deferred_block_is_raised_once_the_block_is_done():
    """The block runs to its end (here: past the point where a handler
    would have raised), then the command's handler raises Stopped, and the
    handler set before is back."""
    done = []
    handlers = stops.handle(lambda signum, _frame: stops.stop(signum))
    try:
        with pytest.raises(stops.Stopped) as stopped:
            with stops.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                done.append("after the signal")
        assert done == ["after the signal"]
        assert stopped.value.name == "SIGTERM" and not stopped.value.said
        # stop() left later ones to their default action, as a second stop takes it.
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        stops.restore(handlers)
