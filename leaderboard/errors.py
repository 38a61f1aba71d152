"""The error services raise for bad input: which field, and what was expected."""

from __future__ import annotations


class FieldError(ValueError):
    """Input that a service refuses, naming the field; nothing has been written."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
