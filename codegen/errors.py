"""One error type for bad robot descriptions: it always names the file and the field."""

from __future__ import annotations


class DescriptionError(ValueError):
    """A robot description is invalid. ``str()`` reads ``file:line: field: message``."""

    def __init__(self, file: str, field: str, message: str, line: int | None = None) -> None:
        self.file = file
        self.field = field
        self.line = line
        self.message = message
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")
