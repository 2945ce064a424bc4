"""Numeric range criteria: which columns' intervals contain a value, as one bitmap.

The dispatcher RFC's "context-sensitive parser" for range criteria: the index knows every range
that subscriptions registered on a field, and a message value finds its place among their
boundaries by bisection. Storing, for every elementary interval between two boundaries, the set
of ranges that cover it is quadratic (a 10k-subscription prototype took 230 MB), so this module
does something near-linear instead.

**Design: split bounds, blocked sorted lists, checkpoint bitmaps.** An interval is the
conjunction of a lower-bound test and an upper-bound test, so each side is kept on its own:
``containing(v) = (lower bound satisfied) & (upper bound satisfied)``. For one side, the columns
whose bound ``v`` satisfies are a prefix (lower bounds) or a suffix (upper bounds) of the bounds
in sorted order. Each side keeps its bounds in a blocked sorted list, the layout of
``sortedcontainers.SortedList`` (blocks of about ``load`` keys, split at twice that, merged under
half of it), with two additions SortedList has no hook for: a parallel ``array('I')`` of the
column of every key, and one *checkpoint* bitmap per block edge holding the columns of every
bound before that edge (or after it, for upper bounds). A query is then:

- two bisections (block maxima, then inside one block) to find the value's place;
- a copy of the nearer checkpoint, corrected by at most half a block of columns taken straight
  from the column array by a slice (one C call: ``update`` or ``-=``);
- one bitmap intersection of the lower and upper results.

Nothing in a query loops over intervals in Python. With ``load = sqrt(n)`` a side has about
``sqrt(n)`` checkpoints of at most ``n / 8`` bytes each (roaring bitset containers), so their
memory grows as ``n**1.5 / 8`` bytes: about 12 bytes per interval at 10k, 40 at 100k; the keys
and columns cost 12 bytes per bound, and the column table 17 bytes per column. The caller's
number objects are referenced, never copied or converted, so every comparison is Python's own
and exact across ``int``, ``float``, ``Decimal`` and ``Fraction`` (``2**53 + 1 > float(2**53)``).

**Updates.** Adding or removing one bound touches the checkpoints on one side of its block: one
``BitMap.add`` each, about ``sqrt(n) / 2`` of them. A burst of changes with no query in between
(a bulk load) would pay that on every change, so once the work since the last query exceeds
what a full rebuild costs, a side drops its checkpoints and the next query rebuilds them in one
pass: amortised, an update costs at most about twice the cheaper of the two.

**Threads.** Queries never change the blocks; a query that finds the checkpoints dropped builds a
new list locally and publishes it with one assignment, so concurrent queries are safe. Changes
must not run concurrently with anything: the subscription index owns that policy.

>>> index = RangeIndex()
>>> index.add(0, 10, True, 20, False)    # 10 <= v < 20
>>> index.add(1, None, True, 15, True)   # v <= 15
>>> index.add(2, 20, True, 20, True)     # v == 20
>>> sorted(index.containing(15)), sorted(index.containing(20)), sorted(index.violating(20))
([0, 1], [2], [0, 1])
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import astuple, dataclass
from decimal import Decimal
from fractions import Fraction
from typing import TypeAlias

from pyroaring import BitMap

from bitsift.errors import BitsiftError

__all__ = ["Interval", "InvalidRangeError", "Number", "RangeIndex", "UnknownColumnError"]

Number: TypeAlias = "int | float | Decimal | Fraction"
_NUMBER_TYPES = (int, float, Decimal, Fraction)
_MAX_COLUMN = 2**32 - 1
_MIN_LOAD = 64
"""Smallest adaptive block load: below it, blocks are too small for checkpoints to pay."""
_REBUILD_WORK = 32
"""Checkpoint updates worth one checkpoint rebuilt (an ``|`` of two bitmaps vs a ``BitMap.add``)."""

# Bits of the column table's flag byte; 0 means the column is absent.
_PRESENT, _LOW_INCLUSIVE, _HIGH_INCLUSIVE, _EMPTY = 1, 2, 4, 8


class InvalidRangeError(BitsiftError, ValueError):
    """A column number or interval bound that a :class:`RangeIndex` cannot hold."""


class UnknownColumnError(BitsiftError, KeyError):
    """A column that holds no interval in this :class:`RangeIndex`."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown column"


@dataclass(frozen=True, slots=True)
class Interval:
    """One interval as given to :meth:`RangeIndex.add`; ``None`` is an unbounded side.

    >>> Interval(1, True, 2.5, False).contains(2.5), Interval(None, True, 0, True).contains(-1e300)
    (False, True)
    """

    low: Number | None
    low_inclusive: bool
    high: Number | None
    high_inclusive: bool

    def contains(self, value: object) -> bool:
        """Whether ``value`` lies inside, by plain comparisons; a value that is not a number
        (NaN, ``bool``, ``str``...) lies inside no interval."""
        if not _is_number(value):
            return False
        number: Number = value  # type: ignore[assignment]
        low, high = self.low, self.high
        if low is not None and (
            _is_nan(low) or not (low <= number if self.low_inclusive else low < number)
        ):
            return False
        if high is not None and (
            _is_nan(high) or not (number <= high if self.high_inclusive else number < high)
        ):
            return False
        return True


def _is_nan(number: Number) -> bool:
    # Decimal NaNs (quiet or signalling) must not be compared, not even with ==.
    return number.is_nan() if isinstance(number, Decimal) else number != number


def _is_number(value: object) -> bool:
    """A number an interval can contain: not NaN, not a bool (the selector language keeps
    booleans and numbers apart)."""
    if type(value) is float:
        return value == value
    if type(value) is int:
        return True
    return isinstance(value, _NUMBER_TYPES) and not isinstance(value, bool) and not _is_nan(value)


class _Thresholds:
    """One side of every interval: bounds sorted in blocks, with checkpoint bitmaps at block edges.

    ``satisfied(v)`` returns the columns whose bound ``v`` satisfies. For lower bounds
    (``suffix=False``) they are the bounds before the cut ``bisect(v)``; for upper bounds
    (``suffix=True``) the bounds from the cut on. ``right`` picks ``bisect_right`` (a bound equal
    to ``v`` lies before the cut) or ``bisect_left``; together the two flags give the four kinds
    of bound: ``low <= v``, ``low < v``, ``v <= high``, ``v < high``.

    ``_cuts[j]`` holds the columns of blocks ``0..j-1`` (or ``j..`` for a suffix side), so there is
    one more cut than blocks; ``None`` means dropped, to be rebuilt by the next query.
    """

    __slots__ = (
        "suffix",
        "right",
        "fixed_load",
        "size",
        "_keys",
        "_columns",
        "_maxes",
        "_cuts",
        "_work",
    )

    def __init__(self, *, suffix: bool, right: bool, fixed_load: int | None) -> None:
        self.suffix = suffix
        self.right = right
        self.fixed_load = fixed_load
        self.size = 0
        self._keys: list[list[Number]] = []
        self._columns: list[array[int]] = []
        self._maxes: list[Number] = []
        self._cuts: list[BitMap] | None = [BitMap()]
        self._work = 0

    def _load(self) -> int:
        return self.fixed_load or max(_MIN_LOAD, math.isqrt(self.size))

    def add(self, key: Number, column: int) -> None:
        maxes = self._maxes
        if not maxes:
            self._keys.append([key])
            self._columns.append(array("I", [column]))
            maxes.append(key)
            self.size = 1
            self._cuts = None
            return
        block = bisect_right(maxes, key)
        if block == len(maxes):
            block -= 1
        keys = self._keys[block]
        place = bisect_right(keys, key)
        keys.insert(place, key)
        self._columns[block].insert(place, column)
        maxes[block] = keys[-1]
        self.size += 1
        self._touch_cuts(block, column, BitMap.add)
        if len(keys) > 2 * self._load():
            self._split(block)

    def remove(self, key: Number, column: int) -> None:
        maxes = self._maxes
        block = bisect_left(maxes, key)
        # Bounds equal to ``key`` may span several blocks; the column is in one of them.
        while True:
            keys, columns = self._keys[block], self._columns[block]
            try:
                place = columns.index(column, bisect_left(keys, key), bisect_right(keys, key))
                break
            except ValueError:
                block += 1
        del keys[place]
        del columns[place]
        self.size -= 1
        self._touch_cuts(block, column, BitMap.discard)
        if not keys:
            del self._keys[block], self._columns[block], maxes[block]
            if self._cuts is not None:
                del self._cuts[block]  # the cuts on both sides of an empty block are equal
            return
        maxes[block] = keys[-1]
        if len(keys) < self._load() // 2 and len(maxes) > 1:
            self._merge(block if block + 1 < len(maxes) else block - 1)

    def _touch_cuts(self, block: int, column: int, change: Callable[[BitMap, int], None]) -> None:
        """Apply ``change`` (``BitMap.add`` or ``discard``) to every cut past ``block``'s side,
        or drop the cuts when that costs more than rebuilding them at the next query."""
        cuts = self._cuts
        if cuts is None:
            return
        touched = cuts[: block + 1] if self.suffix else cuts[block + 1 :]
        self._work += len(touched)
        if self._work > _REBUILD_WORK * len(cuts):
            self._cuts = None
            return
        for cut in touched:
            change(cut, column)

    def _split(self, block: int) -> None:
        keys, columns = self._keys[block], self._columns[block]
        half = len(keys) // 2
        self._keys[block : block + 1] = [keys[:half], keys[half:]]
        self._columns[block : block + 1] = [columns[:half], columns[half:]]
        self._maxes.insert(block, keys[half - 1])
        cuts = self._cuts
        if cuts is not None:
            # The new edge sits between the halves; derive it from the cut on the far side.
            if self.suffix:
                edge = cuts[block + 1] | BitMap(columns[half:], optimize=False)
            else:
                edge = cuts[block] | BitMap(columns[:half], optimize=False)
            cuts.insert(block + 1, edge)

    def _merge(self, block: int) -> None:
        """Merge ``block`` with the next one, splitting again if the result is too large."""
        self._keys[block : block + 2] = [self._keys[block] + self._keys[block + 1]]
        self._columns[block : block + 2] = [self._columns[block] + self._columns[block + 1]]
        del self._maxes[block]
        if self._cuts is not None:
            del self._cuts[block + 1]
        if len(self._keys[block]) > 2 * self._load():
            self._split(block)

    def _rebuilt_cuts(self) -> list[BitMap]:
        """Every cut from the blocks, built locally and published by one assignment."""
        running = BitMap()
        cuts = [running]
        blocks = reversed(self._columns) if self.suffix else iter(self._columns)
        for columns in blocks:
            running = running | BitMap(columns, optimize=False)
            cuts.append(running)
        if self.suffix:
            cuts.reverse()
        self._cuts = cuts
        return cuts

    def satisfied(self, value: Number) -> BitMap:
        """The columns whose bound ``value`` satisfies, as a new bitmap."""
        cuts = self._cuts
        if cuts is None:
            cuts = self._rebuilt_cuts()
        self._work = 0
        maxes = self._maxes
        if self.right:
            block = bisect_right(maxes, value)
        else:
            block = bisect_left(maxes, value)
        if block == len(maxes):
            return BitMap(cuts[block], optimize=False)
        keys = self._keys[block]
        place = bisect_right(keys, value) if self.right else bisect_left(keys, value)
        columns = self._columns[block]
        before, after = cuts[block], cuts[block + 1]
        # Start from the nearer block edge and correct by the columns between it and the cut.
        if self.suffix:
            if place <= len(keys) - place:
                if not place:
                    return BitMap(before, optimize=False)
                return before - BitMap(columns[:place], optimize=False)
            result = BitMap(after, optimize=False)
            result.update(columns[place:])
            return result
        if place <= len(keys) - place:
            if not place:
                return BitMap(before, optimize=False)
            result = BitMap(before, optimize=False)
            result.update(columns[:place])
            return result
        return after - BitMap(columns[place:], optimize=False)

    def holds_nothing(self) -> bool:
        """Whether no key, column or checkpoint is left behind (tests check this after removal)."""
        return not (self.size or self._keys or self._columns or self._maxes) and (
            self._cuts is None or (len(self._cuts) == 1 and not self._cuts[0])
        )


class RangeIndex:
    """Intervals owned by column numbers; finds the columns whose interval contains a value.

    A column (an ``int`` in ``[0, 2**32)``, chosen by the caller) holds at most one interval;
    adding to a held column replaces its interval. Keep columns dense, as the subscription index
    does by reusing freed ones: the column table grows to the largest column number.

    Semantics, which the stateful test checks against plain Python comparisons:

    - ``None`` is an unbounded side; ``-inf`` and ``inf`` are ordinary bounds and values.
    - An interval that no number satisfies (``low > high``, equal bounds with an exclusive end, a
      NaN bound) is legal and contains nothing; it is still a member, so it is always violated.
    - A value that is not a number (NaN, ``bool``, ``str``, ``None``...) is contained in nothing,
      as comparisons with it are false in the selector language.

    ``load`` fixes the block size (tests use tiny blocks to exercise splits and checkpoints);
    by default it adapts to about ``sqrt(n)`` per side.
    """

    __slots__ = (
        "_load",
        "_lows",
        "_highs",
        "_flags",
        "_members",
        "_empty",
        "_lower",
        "_upper",
        "_lower_unbounded",
        "_upper_unbounded",
    )

    def __init__(self, load: int | None = None) -> None:
        if load is not None and load < 1:
            raise InvalidRangeError(f"block load must be at least 1, not {load}")
        self._load = load
        # The column table: bounds by column, for remove() and interval().
        self._lows: list[Number | None] = []
        self._highs: list[Number | None] = []
        self._flags = bytearray()
        self._members = BitMap()
        self._empty = BitMap()
        self._lower_unbounded = BitMap()
        self._upper_unbounded = BitMap()
        # (inclusive, exclusive): low <= v is bisect_right, low < v is bisect_left;
        # v <= high is a suffix from bisect_left, v < high a suffix from bisect_right.
        self._lower = (
            _Thresholds(suffix=False, right=True, fixed_load=load),
            _Thresholds(suffix=False, right=False, fixed_load=load),
        )
        self._upper = (
            _Thresholds(suffix=True, right=False, fixed_load=load),
            _Thresholds(suffix=True, right=True, fixed_load=load),
        )

    def add(
        self,
        column: int,
        low: Number | None,
        low_inclusive: bool,
        high: Number | None,
        high_inclusive: bool,
    ) -> None:
        """Give ``column`` the interval from ``low`` to ``high``, replacing any it held.

        >>> index = RangeIndex()
        >>> index.add(7, 0, False, None, True)   # v > 0
        >>> index.add(7, 0, True, 0, True)       # replaced: v == 0
        >>> list(index.containing(0)), list(index.containing(1))
        ([7], [])
        """
        if type(column) is not int or not 0 <= column <= _MAX_COLUMN:
            raise InvalidRangeError(f"a column is an int in [0, 2**32), not {column!r}")
        for bound in (low, high):
            if bound is not None and (
                not isinstance(bound, _NUMBER_TYPES) or isinstance(bound, bool)
            ):
                raise InvalidRangeError(f"an interval bound is a number or None, not {bound!r}")
        low_inclusive, high_inclusive = bool(low_inclusive), bool(high_inclusive)
        if column in self:
            self._remove_held(column)
        flags = self._flags
        if column >= len(flags):
            grow = column + 1 - len(flags)
            self._lows.extend([None] * grow)
            self._highs.extend([None] * grow)
            flags.extend(bytes(grow))
        flag = _PRESENT | (_LOW_INCLUSIVE if low_inclusive else 0)
        flag |= _HIGH_INCLUSIVE if high_inclusive else 0
        if _holds_nothing(low, low_inclusive, high, high_inclusive):
            flag |= _EMPTY
        self._lows[column], self._highs[column], flags[column] = low, high, flag
        self._members.add(column)
        if flag & _EMPTY:
            self._empty.add(column)
            return
        if low is None:
            self._lower_unbounded.add(column)
        else:
            self._lower[0 if low_inclusive else 1].add(low, column)
        if high is None:
            self._upper_unbounded.add(column)
        else:
            self._upper[0 if high_inclusive else 1].add(high, column)

    def remove(self, column: int) -> None:
        """Forget ``column``'s interval; :class:`UnknownColumnError` if it holds none."""
        if not self.discard(column):
            raise UnknownColumnError(f"column {column!r} holds no interval")

    def discard(self, column: int) -> bool:
        """Forget ``column``'s interval if it holds one; return whether it did."""
        if column not in self:
            return False
        self._remove_held(column)
        return True

    def _remove_held(self, column: int) -> None:
        low, high, flag = self._lows[column], self._highs[column], self._flags[column]
        self._members.discard(column)
        if flag & _EMPTY:
            self._empty.discard(column)
        else:
            if low is None:
                self._lower_unbounded.discard(column)
            else:
                self._lower[0 if flag & _LOW_INCLUSIVE else 1].remove(low, column)
            if high is None:
                self._upper_unbounded.discard(column)
            else:
                self._upper[0 if flag & _HIGH_INCLUSIVE else 1].remove(high, column)
        self._lows[column] = self._highs[column] = None
        flags = self._flags
        flags[column] = 0
        # Trim free slots at the end, so that removing everything leaves an empty table.
        while flags and not flags[-1]:
            flags.pop()
            self._lows.pop()
            self._highs.pop()

    def containing(self, value: object) -> BitMap:
        """The columns whose interval contains ``value``, as a new bitmap.

        >>> index = RangeIndex()
        >>> index.add(0, 2**53, False, None, True)
        >>> list(index.containing(2**53 + 1)), list(index.containing(float(2**53 + 1)))
        ([0], [])
        """
        if not _is_number(value):
            return BitMap()
        number: Number = value  # type: ignore[assignment]
        lower = self._satisfied(self._lower, self._lower_unbounded, number)
        if lower is None:
            return BitMap()
        upper_sides = self._upper
        if not (upper_sides[0].size or upper_sides[1].size):
            # No bounded upper end: every interval that can hold a value is unbounded above, so
            # the lower side's answer is already the intersection (``qty > 5`` fields; saves a
            # copy and two merges of the large unbounded set per query).
            return lower
        upper = self._satisfied(upper_sides, self._upper_unbounded, number)
        if upper is None:
            return BitMap()
        lower &= upper
        return lower

    def violating(self, value: object) -> BitMap:
        """The member columns whose interval does not contain ``value``, as a new bitmap.

        >>> index = RangeIndex()
        >>> index.add(0, 1, True, 2, True)
        >>> index.add(1, 3, True, 2, True)  # empty: violated by everything
        >>> list(index.violating(1.5)), list(index.violating(float("nan")))
        ([1], [0, 1])
        """
        return self._members - self.containing(value)

    @staticmethod
    def _satisfied(
        sides: tuple[_Thresholds, _Thresholds], unbounded: BitMap, value: Number
    ) -> BitMap | None:
        """The union of one side's satisfied columns as a new bitmap, or None if empty."""
        inclusive, exclusive = sides
        result = inclusive.satisfied(value) if inclusive.size else None
        if exclusive.size:
            if result is None:
                result = exclusive.satisfied(value)
            else:
                result |= exclusive.satisfied(value)
        if unbounded:
            if result is None:
                return BitMap(unbounded, optimize=False)
            result |= unbounded
        return result

    def interval(self, column: int) -> Interval:
        """The interval ``column`` holds; :class:`UnknownColumnError` if none."""
        if column not in self:
            raise UnknownColumnError(f"column {column!r} holds no interval")
        flag = self._flags[column]
        return Interval(
            self._lows[column],
            bool(flag & _LOW_INCLUSIVE),
            self._highs[column],
            bool(flag & _HIGH_INCLUSIVE),
        )

    def intervals(self) -> Iterator[tuple[int, Interval]]:
        """Every ``(column, interval)`` pair, by column."""
        for column in self._members:
            yield column, self.interval(column)

    @property
    def members(self) -> BitMap:
        """Every column that holds an interval (a copy)."""
        return BitMap(self._members, optimize=False)

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, column: object) -> bool:
        return type(column) is int and 0 <= column < len(self._flags) and bool(self._flags[column])

    def __repr__(self) -> str:
        return f"RangeIndex({len(self)} intervals)"

    def __reduce__(self) -> tuple[object, ...]:
        # Pickle as the intervals, rebuilt on load: smaller than the checkpoints.
        return (_restore, (self._load, [(column, *astuple(iv)) for column, iv in self.intervals()]))

    def prepare(self) -> None:
        """Rebuild any checkpoints dropped by a burst of changes now, rather than in the next
        query (call it after a bulk load, before readers share the index)."""
        for side in (*self._lower, *self._upper):
            if side.size:
                side.satisfied(0)

    def holds_nothing(self) -> bool:
        """Whether no interval, bound, checkpoint or table slot is left (tests check removal)."""
        return (
            not (self._lows or self._highs or self._flags)
            and not (self._members or self._empty)
            and not (self._lower_unbounded or self._upper_unbounded)
            and all(side.holds_nothing() for side in (*self._lower, *self._upper))
        )


def _holds_nothing(
    low: Number | None, low_inclusive: bool, high: Number | None, high_inclusive: bool
) -> bool:
    """Whether no number lies in the interval: a NaN bound, crossed bounds or a shut point."""
    if low is not None and _is_nan(low) or high is not None and _is_nan(high):
        return True
    if low is None or high is None:
        return False
    return low > high or (low == high and not (low_inclusive and high_inclusive))


def _restore(
    load: int | None, intervals: list[tuple[int, Number | None, bool, Number | None, bool]]
) -> RangeIndex:
    index = RangeIndex(load)
    for column, low, low_inclusive, high, high_inclusive in intervals:
        index.add(column, low, low_inclusive, high, high_inclusive)
    return index
