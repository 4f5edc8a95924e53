"""Errors that end a run before any work starts (exit code 2)."""
from gpcore.result import first_line  # noqa: F401  (one-line messages, defined once)


class UsageError(ValueError):
    """A bad invocation: an option, the output folder. The message is one
    line that says what was expected, what was found and what to do."""


class InputError(UsageError):
    """The input cannot be used: no file matches, a file is not Parquet, a
    column is missing or of the wrong type, there are no rows."""

