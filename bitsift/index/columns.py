"""Conjunction columns: numbering, sharing and reuse.

Each distinct conjunction (its topic pattern plus its criteria) gets one column number, the bit it
owns in every posting bitmap. Subscriptions that normalise to the same conjunction share the column
(the dispatcher RFC's "merge identical requests"), so a thousand subscribers with the same selector
cost one bit per bitmap. A column is freed when its last subscription goes, and freed numbers are
reused lowest first, so bitmaps stay dense and small after churn.
"""

from __future__ import annotations

import heapq

from bitsift.index.criteria import FieldTest, Residual
from bitsift.index.normalize import Conjunction
from bitsift.selectors.topics import TopicPattern

__all__ = ["ColumnKey", "Column", "ColumnTable"]

ColumnKey = tuple["TopicPattern | None", Conjunction]


class Column:
    """One conjunction and the subscriptions that contain it.

    Its field tests are kept as the conjunction's own atoms plus, only when some field is tested
    twice (or a residual is present), their lanes: the usual column (one test per field, no
    residual) then costs no memory beyond its key, where a list of ``(lane, test)`` pairs cost
    about 80 bytes per test (a W2 subscription has ten).
    """

    __slots__ = ("number", "key", "tests", "lanes", "residuals", "_subscribers")

    def __init__(
        self,
        number: int,
        key: ColumnKey,
        tests: tuple[FieldTest, ...],
        lanes: tuple[int, ...] | None,
        residuals: tuple[Residual, ...],
    ) -> None:
        self.number = number
        self.key = key
        self.tests = tests
        """The field tests, in the conjunction's order."""
        self.lanes = lanes
        """Each test's lane (its position among this column's tests of that field), or None
        when every lane is 0."""
        self.residuals = residuals
        self._subscribers: str | set[str] | None = None
        """The subscriber's id while there is one (the usual column), else a set (216 bytes
        even for one id), or None before the first."""

    @property
    def subscribers(self) -> set[str]:
        """The ids of the subscriptions that contain this conjunction.

        A set the caller may change, so reading it stores one; :meth:`subscribe`,
        :meth:`unsubscribe` and :meth:`subscriber_ids` keep a lone id as it is.
        """
        found = self._subscribers
        if type(found) is set:
            return found
        found = self._subscribers = set() if found is None else {found}  # type: ignore[arg-type]
        return found

    def subscriber_ids(self) -> set[str] | tuple[str, ...]:
        """The subscribers' ids, to read only (no set is made for a lone id)."""
        found = self._subscribers
        if found is None:
            return ()
        if type(found) is str:
            return (found,)
        return found  # type: ignore[return-value]

    def subscribe(self, subscription_id: str) -> int:
        """Add a subscriber (again is a no-op); returns how many there are now."""
        found = self._subscribers
        if found is None:
            self._subscribers = subscription_id
            return 1
        if type(found) is str:
            if found == subscription_id:
                return 1
            self._subscribers = {found, subscription_id}
            return 2
        found.add(subscription_id)  # type: ignore[union-attr]
        return len(found)

    def unsubscribe(self, subscription_id: str) -> int:
        """Remove a subscriber if present; returns how many are left."""
        found = self._subscribers
        if found is None:
            return 0
        if type(found) is str:
            if found == subscription_id:
                self._subscribers = None
                return 0
            return 1
        found.discard(subscription_id)  # type: ignore[union-attr]
        left = len(found)
        if left == 1:
            self._subscribers = next(iter(found))
        return left

    @property
    def topic(self) -> TopicPattern | None:
        return self.key[0]

    @property
    def field_tests(self) -> list[tuple[int, FieldTest]]:
        """Each field test with its lane, as ``(lane, test)`` pairs (made on each read)."""
        lanes = self.lanes
        if lanes is None:
            return [(0, test) for test in self.tests]
        return list(zip(lanes, self.tests, strict=True))

    def __repr__(self) -> str:
        return (
            f"Column(number={self.number!r}, key={self.key!r}, "
            f"field_tests={self.field_tests!r}, residuals={self.residuals!r}, "
            f"subscribers={set(self.subscriber_ids())!r})"
        )


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
        conjunction = key[1]
        try:
            distinct = len({atom.field for atom in conjunction}) == len(conjunction)  # type: ignore[union-attr]
        except AttributeError:  # a residual
            distinct = False
        by_key = self.by_key
        if distinct:
            # The common case: field tests only, one per field, so every lane is 0. The column
            # is made first so that one lookup both finds and inserts: hashing a key hashes
            # every test in it, and a shared key (the rarer case) only wastes the small object.
            column = Column(-1, key, conjunction, None, ())  # type: ignore[arg-type]
            found = by_key.setdefault(key, column)
            if found is not column:
                return found, False
        else:
            shared = by_key.get(key)
            if shared is not None:
                return shared, False
            column = Column(-1, key, *self._lanes_and_residuals(conjunction))
            by_key[key] = column
        if self._free:
            column.number = heapq.heappop(self._free)
        else:
            column.number = self._next
            self._next += 1
        self.by_number[column.number] = column
        return column, True

    def _lanes_and_residuals(
        self, conjunction: Conjunction
    ) -> tuple[tuple[FieldTest, ...], tuple[int, ...] | None, tuple[Residual, ...]]:
        lanes: dict[str, int] = {}
        tests: list[FieldTest] = []
        test_lanes: list[int] = []
        residuals: list[Residual] = []
        for atom in conjunction:
            if isinstance(atom, Residual):
                entry = self._residuals.setdefault(atom, [atom, 0])
                entry[1] += 1  # type: ignore[operator]
                residuals.append(entry[0])  # type: ignore[arg-type]
            else:
                lane = lanes.get(atom.field, 0)
                lanes[atom.field] = lane + 1
                tests.append(atom)
                test_lanes.append(lane)
        if len(tests) == len(conjunction):
            plain: tuple[FieldTest, ...] = conjunction  # type: ignore[assignment]
        else:
            plain = tuple(tests)
        return plain, (tuple(test_lanes) if any(test_lanes) else None), tuple(residuals)

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
