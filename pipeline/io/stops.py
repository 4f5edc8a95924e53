"""A stop signal (SIGTERM, SIGINT) as an exception in a command's main thread.

`gpfit` and `gpfit-report` each raise Stopped from their handler, so that
the run unwinds and releases what it holds (the lock, a temporary page)
and says so in one line, exit 128 + N (docs/design.md, "Output folder",
and "The fitter", A stop while the report writes its page). What else a
command's handler does is its own (pipeline/cli.py).
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Callable, Iterator, NoReturn, Optional

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(BaseException):
    """Raised in the main thread by SIGTERM or SIGINT: unwinds the run so that
    it releases what it holds (a BaseException, so that no `except
    Exception` on the way swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.said = False  # its line is printed


def in_main_thread() -> bool:
    """Whether this is the main thread, the one Python runs handlers in."""
    return threading.current_thread() is threading.main_thread()


def handle(handler: Callable) -> dict:
    """Sets handler(signum, frame) for the stop signals, in the main thread;
    -> the handlers to restore (`restore`). Elsewhere (a thread) signals are
    left alone: {}."""
    if not in_main_thread():
        return {}
    return {signum: signal.signal(signum, handler) for signum in SIGNALS}


def restore(handlers: dict) -> None:
    """Sets the handlers `handle` returned back."""
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


def stop(signum: int, before: Optional[Callable[[], None]] = None) -> NoReturn:
    """A handler's end: later stop signals take their default action (a
    second one while the run unwinds ends the process), then before() (if
    given), then Stopped(signum) is raised."""
    for each in SIGNALS:
        signal.signal(each, signal.SIG_DFL)
    if before is not None:
        before()
    raise Stopped(signum)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Holds a stop signal that arrives in the block until the block is
    done, then hands it to the handler that was set (a SIG_DFL one: raised
    again, its default action). A signal that arrives during a system call
    is handled as the call returns, before its result is kept: a file the
    call created is then left whole or removed by the block, not half made
    (docs/design.md, "The fitter", A stop while the lock is written).
    Outside the main thread the block runs as it is."""
    if not in_main_thread():
        yield
        return
    held: list[int] = []
    previous = handle(lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        restore(previous)
        if held:
            handler = previous[held[0]]
            if callable(handler):
                handler(held[0], None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(held[0])
