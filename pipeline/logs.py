"""Log set-up for the gpfit command: gpfit's lines, few of Beam's.

Worker processes of the local runner send their log records to the runner,
which logs each as 'Worker: <protobuf text>' at INFO. Those lines are cut
down here to the ones from gpfit (progress, fitter built) and warnings, and
shown as plain messages.
"""
from __future__ import annotations

import logging
import re
import sys

_WORKER_LOGGER = "apache_beam.runners.portability.local_job_service"
_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')
# Warnings every local worker process gives, and harmless here: the worker
# parses the options without gpfit's option class, and has no staging folder.
_HARMLESS = ("Discarding unparseable args", "No semi_persistent_directory found")


class _WorkerLines(logging.Filter):
    """Keeps gpfit's own worker lines and warnings; drops Beam's chatter."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != "Worker: %s" or not record.args:
            return True
        found = _MESSAGE.search(str(record.args[0]))
        message = _unescape(found.group(1)) if found else str(record.args[0])
        if message.startswith(_HARMLESS):
            return False
        if record.levelno < logging.WARNING and not message.startswith("gpfit"):
            return False
        record.msg, record.args = "worker: %s", (message,)
        return True


def configure() -> None:
    """INFO for gpfit, WARNING for Beam; worker lines filtered (see above)."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(message)s")
    for name in ("gpfit", "pipeline"):
        logging.getLogger(name).setLevel(logging.INFO)
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    worker = logging.getLogger(_WORKER_LOGGER)
    worker.setLevel(logging.INFO)
    if not any(isinstance(f, _WorkerLines) for f in worker.filters):
        worker.addFilter(_WorkerLines())


def _unescape(text: str) -> str:
    try:
        return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return text
