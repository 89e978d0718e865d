"""One error type for bad robot descriptions: it always names the file and the field."""

from __future__ import annotations

import warnings

MAX_MESSAGE = 240


class DescriptionError(ValueError):
    """A robot description is invalid. ``str()`` reads ``file:line: field: message``."""

    def __init__(self, file: str, field: str, message: str, line: int | None = None) -> None:
        # One line of sane length, whatever the file held (newlines in names, megabyte values)
        message = " ".join(message.splitlines())
        message = message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."
        field = " ".join(field.splitlines())
        field = field if len(field) <= MAX_MESSAGE // 3 else field[: MAX_MESSAGE // 3 - 3] + "..."
        self.file, self.field, self.line, self.message = file, field, line, message
        file = " ".join(file.splitlines())  # a file name with a newline stays on the one line
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")


class ManipgenWarning(UserWarning):
    """Something that may be wrong, said in one line (the command line prints ``manipgen: warning:``)."""


class DescriptionWarning(ManipgenWarning):
    """A description that loads but may be wrong (a limit beyond a turn, an unusual sample period,
    an inertia no rigid body has, joints locked by the chosen chain). ``str()`` reads like
    DescriptionError's: ``file:line: field: message``."""


def warn(file: str, field: str, message: str, line: int | None = None) -> None:
    """Issue a DescriptionWarning (the command line prints it as ``manipgen: warning: ...``)."""
    where = f"{file}:{line}" if line is not None else file
    warnings.warn(f"{where}: {field}: {message}" if field else f"{where}: {message}", DescriptionWarning, stacklevel=3)
