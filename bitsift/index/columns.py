"""Conjunction columns: numbering, sharing and reuse.

Each distinct conjunction (its topic pattern plus its criteria) gets one column number, the bit it
owns in every posting bitmap. Subscriptions that normalise to the same conjunction share the column
(the dispatcher RFC's "merge identical requests"), so a thousand subscribers with the same selector
cost one bit per bitmap. A column is freed when its last subscription goes, and freed numbers are
reused lowest first, so bitmaps stay dense and small after churn.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from bitsift.index.criteria import FieldTest, Residual
from bitsift.index.normalize import Conjunction
from bitsift.selectors.topics import TopicPattern

__all__ = ["ColumnKey", "Column", "ColumnTable"]

ColumnKey = tuple["TopicPattern | None", Conjunction]


@dataclass(slots=True)
class Column:
    """One conjunction and the subscriptions that contain it."""

    number: int
    key: ColumnKey
    field_tests: list[tuple[int, FieldTest]]
    """Each field test with its lane (its position among this column's tests of that field)."""
    residuals: tuple[Residual, ...]
    subscribers: set[str] = field(default_factory=set)

    @property
    def topic(self) -> TopicPattern | None:
        return self.key[0]


class ColumnTable:
    """Column numbers by key, with reuse of freed numbers (lowest first)."""

    def __init__(self) -> None:
        self.by_key: dict[ColumnKey, Column] = {}
        self.by_number: dict[int, Column] = {}
        self._free: list[int] = []
        self._next = 0
        self._residuals: dict[Residual, list[Residual | int]] = {}
        """Each distinct residual once, with how many columns use it: the matcher evaluates a
        residual shared by many columns once per message, keyed by identity."""

    def __len__(self) -> int:
        return len(self.by_number)

    def acquire(self, key: ColumnKey) -> tuple[Column, bool]:
        """The column for ``key`` and whether it is new (the caller then indexes its tests)."""
        column = self.by_key.get(key)
        if column is not None:
            return column, False
        if self._free:
            number = heapq.heappop(self._free)
        else:
            number = self._next
            self._next += 1
        conjunction = key[1]
        try:
            distinct = len({atom.field for atom in conjunction}) == len(conjunction)  # type: ignore[union-attr]
        except AttributeError:  # a residual
            distinct = False
        if distinct:
            # The common case: field tests only, one per field, so every lane is 0.
            column = Column(number, key, [(0, atom) for atom in conjunction], ())  # type: ignore[misc]
        else:
            column = Column(number, key, *self._lanes_and_residuals(conjunction))
        self.by_key[key] = column
        self.by_number[number] = column
        return column, True

    def _lanes_and_residuals(
        self, conjunction: Conjunction
    ) -> tuple[list[tuple[int, FieldTest]], tuple[Residual, ...]]:
        lanes: dict[str, int] = {}
        field_tests: list[tuple[int, FieldTest]] = []
        residuals: list[Residual] = []
        for atom in conjunction:
            if isinstance(atom, Residual):
                entry = self._residuals.setdefault(atom, [atom, 0])
                entry[1] += 1  # type: ignore[operator]
                residuals.append(entry[0])  # type: ignore[arg-type]
            else:
                lane = lanes.get(atom.field, 0)
                lanes[atom.field] = lane + 1
                field_tests.append((lane, atom))
        return field_tests, tuple(residuals)

    def release(self, column: Column) -> None:
        del self.by_key[column.key]
        del self.by_number[column.number]
        for residual in column.residuals:
            entry = self._residuals[residual]
            entry[1] -= 1  # type: ignore[operator]
            if not entry[1]:
                del self._residuals[residual]
        if not self.by_number:
            # An emptied table forgets its free list too: nothing lingers after removing everything.
            self._free.clear()
            self._next = 0
        else:
            heapq.heappush(self._free, column.number)
