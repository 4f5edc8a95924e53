"""Errors that end a run before any work starts (exit code 2)."""


class UsageError(ValueError):
    """A bad invocation: an option, the output folder. The message is one
    line that says what was expected, what was found and what to do."""


class InputError(UsageError):
    """The input cannot be used: no file matches, a file is not Parquet, a
    column is missing or of the wrong type, there are no rows."""


def first_line(err: BaseException) -> str:
    """The first line of an exception's message (its type if it has none),
    for one-line error messages."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
