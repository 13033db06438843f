"""What is wrong with an input: every problem, each located precisely enough to fix without reading the
code (model.py hands these names on, as most callers know them from there)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input, located precisely enough to fix without reading the code."""

    where: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.field}: {self.message}"


class InvalidInputError(ValueError):
    """Raised with every problem found, never with a half-parsed value."""

    def __init__(self, what: str, problems: Iterable[Problem]) -> None:
        self.what = what
        self.problems: tuple[Problem, ...] = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid {what} ({len(self.problems)} problem(s)):\n{lines}")
