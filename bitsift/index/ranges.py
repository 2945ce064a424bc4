"""Numeric range criteria: which columns' intervals a value violates (or lies in), as bitmaps.

The dispatcher RFC's "context-sensitive parser" for range criteria: the index knows every range
that subscriptions registered on a field, and a message value finds its place among their
boundaries by bisection. Storing, for every elementary interval between two boundaries, the set
of ranges that cover it is quadratic (a 10k-subscription prototype took 230 MB), so this module
does something near-linear instead.

**Design: split bounds, blocked sorted lists, checkpoint bitmaps of violations.** A value lies
in an interval unless it violates the lower bound or the upper bound, so each side is kept on its
own, and the question the index asks per message (which candidates does this value rule out?) is
answered without building anything: ``candidates -= violated_lower; candidates -= violated_upper``
(:meth:`RangeIndex.discard_violating`). For one side, the columns whose bound ``v`` violates are a
suffix (lower bounds: ``low > v``) or a prefix (upper bounds: ``high < v``) of the bounds in sorted
order. Each side keeps its bounds in a blocked sorted list, the layout of
``sortedcontainers.SortedList`` (blocks of about ``load`` keys, split at twice that, merged under
half of it), with three additions SortedList has no hook for: a parallel ``array('I')`` of the
column of every key, one bitmap per block of its columns, and one *checkpoint* bitmap per block
edge holding the columns of every bound after that edge (lower bounds) or before it (upper
bounds). A query is then, per side:

- two bisections (block maxima, then inside one block) to find the value's place;
- one subtraction of the checkpoint at the block edge on the violated side of the place;
- the correction for the part of that block between the edge and the place: with few candidates
  (an array container's worth), the handful of candidates inside the block (one intersection with
  its bitmap) are tested against their own bounds in Python; otherwise the part's columns, a slice
  of the column array, are subtracted as one bitmap (both sides' parts together).

:meth:`~RangeIndex.containing` and :meth:`~RangeIndex.violating` are built from the same pieces
(a copy of the members minus, or the union of, the checkpoints and parts, each part taken from
the block edge nearer the place, so at most half a block), with in-place operations, which
CRoaring runs about twice as fast as those that allocate. Nothing in a query loops over
intervals in Python. Answers never hold run containers, which intersect slowly with bitsets.

**Memory.** With ``load = sqrt(n)`` a side has about ``sqrt(n)`` checkpoints of at most ``n / 8``
bytes each (roaring bitset containers), so their memory grows as ``n**1.5 / 8`` bytes: about 12
bytes per interval at 10k, 40 at 100k; the keys, columns and block bitmaps cost about 14 bytes
per bound, and the column table 17 bytes per column. The caller's number objects are referenced,
never copied or converted, so every comparison is Python's own and exact across ``int``,
``float``, ``Decimal`` and ``Fraction`` (``2**53 + 1 > float(2**53)``).

**Updates.** Adding or removing one bound touches its block's bitmap and the checkpoints on one
side of its block: one ``BitMap.add`` each, about ``sqrt(n) / 2`` of them. A burst of changes with
no query in between (a bulk load) would pay that on every change, so once the work since the
last query exceeds what a full rebuild costs, a side drops its checkpoints: later additions wait
unsorted in a dict (column to bound; a removal of a waiting bound just deletes it), and the next
query (or :meth:`~RangeIndex.prepare`) sorts them in, one by one when they are few or with one
sort of the whole side when they are many, and rebuilds the checkpoints in one pass. A new index
starts that way, so a bulk load costs a dict insertion per bound and one sort.

**Threads.** Queries never change the blocks, except the one that finds the checkpoints dropped:
it merges and rebuilds under a module lock and publishes the checkpoints last, so concurrent
queries are safe. Changes must not run concurrently with anything: the subscription index owns
that policy.

>>> index = RangeIndex()
>>> index.add(0, 10, True, 20, False)    # 10 <= v < 20
>>> index.add(1, None, True, 15, True)   # v <= 15
>>> index.add(2, 20, True, 20, True)     # v == 20
>>> sorted(index.containing(15)), sorted(index.containing(20)), sorted(index.violating(20))
([0, 1], [2], [0, 1])
"""

from __future__ import annotations

import math
import operator
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import astuple, dataclass
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise
from typing import Any, TypeAlias

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
_SORT_SHARE = 16
"""Pending bounds are merged one by one while fewer than a side's size over this, else by a sort."""
_FEW_CANDIDATES = 4096
"""Candidates up to which (one array container's worth) a query looks inside the cut's block."""
_TESTED_ONE_BY_ONE = 8
"""Candidates inside the cut's block up to which each is tested against its bound in Python."""
_PREPARE_LOCK = threading.Lock()
"""Held by the rare query that merges pending bounds and rebuilds checkpoints, so that two
concurrent queries never do it at once."""

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


class _Side:
    """One side of every interval: bounds sorted in blocks, with checkpoint bitmaps at block edges.

    The checkpoints hold *violating* columns. A lower bound is violated by the values below it, so
    for lower bounds (``suffix=True``) the columns a value ``v`` violates are those of the bounds
    from the cut ``bisect(v)`` on; for upper bounds (``suffix=False``) the bounds before the cut.
    ``right`` picks ``bisect_right`` (a bound equal to ``v`` lies before the cut) or
    ``bisect_left``; together the two flags give the four kinds of bound: ``low <= v`` and
    ``low < v`` are violated by ``low > v`` (suffix, right) and ``low >= v`` (suffix, left);
    ``v <= high`` and ``v < high`` by ``high < v`` (prefix, left) and ``high <= v`` (prefix, right).
    ``violates(bound, v)`` is that test on one bound, and ``bounds`` the owner's table of this
    side's bound by column.

    ``_cuts[j]`` holds the columns of blocks ``0..j-1`` (or ``j..`` for a suffix side), so there is
    one more cut than blocks, and ``_sets[j]`` the columns of block ``j``. ``None`` means dropped
    (both at once): bounds added since then wait in ``_pending`` (column to bound), and the next
    query merges them and rebuilds both.
    """

    __slots__ = (
        "suffix",
        "right",
        "fixed_load",
        "size",
        "bounds",
        "violates",
        "_keys",
        "_columns",
        "_maxes",
        "_cuts",
        "_sets",
        "_pending",
        "_work",
    )

    def __init__(
        self,
        *,
        suffix: bool,
        right: bool,
        fixed_load: int | None,
        bounds: list[Number | None],
    ) -> None:
        self.suffix = suffix
        self.right = right
        self.fixed_load = fixed_load
        self.size = 0
        self.bounds = bounds
        violates: list[Callable[[Any, Any], bool]] = [
            operator.lt,
            operator.le,
            operator.ge,
            operator.gt,
        ]
        self.violates = violates[2 * suffix + right]
        self._keys: list[list[Number]] = []
        self._columns: list[array[int]] = []
        self._maxes: list[Number] = []
        self._cuts: list[BitMap] | None = None
        self._sets: list[BitMap] | None = None
        self._pending: dict[int, Number] = {}
        self._work = 0

    def _load(self) -> int:
        return self.fixed_load or max(_MIN_LOAD, math.isqrt(self.size))

    def add(self, key: Number, column: int) -> None:
        self.size += 1
        if self._cuts is None:
            self._pending[column] = key  # sorted in with the others at the next query
        else:
            self._insert(key, column)

    def _insert(self, key: Number, column: int) -> None:
        maxes = self._maxes
        if not maxes:
            self._keys.append([key])
            self._columns.append(array("I", [column]))
            maxes.append(key)
            self._drop()
            return
        block = bisect_right(maxes, key)
        if block == len(maxes):
            block -= 1
        keys = self._keys[block]
        place = bisect_right(keys, key)
        keys.insert(place, key)
        self._columns[block].insert(place, column)
        maxes[block] = keys[-1]
        self._touch(block, column, BitMap.add)
        if len(keys) > 2 * self._load():
            self._split(block)

    def remove(self, key: Number, column: int) -> None:
        self.size -= 1
        pending = self._pending
        if column in pending:  # a column holds one bound per side: this is it
            del pending[column]
            return
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
        self._touch(block, column, BitMap.discard)
        if not keys:
            del self._keys[block], self._columns[block], maxes[block]
            if self._cuts is not None and self._sets is not None:
                del self._cuts[block]  # the cuts on both sides of an empty block are equal
                del self._sets[block]
            return
        maxes[block] = keys[-1]
        if len(keys) < self._load() // 2 and len(maxes) > 1:
            self._merge(block if block + 1 < len(maxes) else block - 1)

    def _drop(self) -> None:
        self._cuts = self._sets = None

    def _touch(self, block: int, column: int, change: Callable[[BitMap, int], None]) -> None:
        """Apply ``change`` (``BitMap.add`` or ``discard``) to ``block``'s set and to every cut
        past its side, or drop them when that costs more than rebuilding them at the next query."""
        cuts, sets = self._cuts, self._sets
        if cuts is None or sets is None:
            return
        touched = cuts[: block + 1] if self.suffix else cuts[block + 1 :]
        self._work += len(touched)
        if self._work > _REBUILD_WORK * len(cuts):
            self._drop()
            return
        change(sets[block], column)
        for cut in touched:
            change(cut, column)

    def _split(self, block: int) -> None:
        keys, columns = self._keys[block], self._columns[block]
        half = len(keys) // 2
        self._keys[block : block + 1] = [keys[:half], keys[half:]]
        self._columns[block : block + 1] = [columns[:half], columns[half:]]
        self._maxes.insert(block, keys[half - 1])
        cuts, sets = self._cuts, self._sets
        if cuts is not None and sets is not None:
            first, second = _bitmap(columns[:half]), _bitmap(columns[half:])
            sets[block : block + 1] = [first, second]
            # The new edge sits between the halves; derive it from the cut on the far side.
            edge = cuts[block + 1] | second if self.suffix else cuts[block] | first
            cuts.insert(block + 1, edge)

    def _merge(self, block: int) -> None:
        """Merge ``block`` with the next one, splitting again if the result is too large."""
        self._keys[block : block + 2] = [self._keys[block] + self._keys[block + 1]]
        self._columns[block : block + 2] = [self._columns[block] + self._columns[block + 1]]
        del self._maxes[block]
        cuts, sets = self._cuts, self._sets
        if cuts is not None and sets is not None:
            del cuts[block + 1]
            sets[block : block + 2] = [sets[block] | sets[block + 1]]
        if len(self._keys[block]) > 2 * self._load():
            self._split(block)

    def _prepared_cuts(self) -> list[BitMap]:
        """The cuts, after merging the pending bounds and rebuilding the cuts if they were
        dropped. Two queries may arrive here together: a lock makes one do it, once."""
        with _PREPARE_LOCK:
            cuts = self._cuts
            if cuts is None:
                if self._pending:
                    self._merge_pending()
                cuts = self._rebuilt_cuts()
            return cuts

    def _merge_pending(self) -> None:
        """Sort the pending bounds in: one by one when they are few, else by one sort of all."""
        pending, self._pending = self._pending, {}
        if len(pending) * _SORT_SHARE < self.size:
            for column, key in pending.items():
                self._insert(key, column)
            return
        keys = [key for block in self._keys for key in block]
        columns = array("I")
        for block_columns in self._columns:
            columns += block_columns
        keys += pending.values()
        columns.extend(pending)
        order = sorted(range(len(keys)), key=keys.__getitem__)
        keys = list(map(keys.__getitem__, order))
        columns = array("I", map(columns.__getitem__, order))
        count = -(-len(keys) // self._load())
        edges = [len(keys) * number // count for number in range(count + 1)]
        self._keys = [keys[start:stop] for start, stop in pairwise(edges)]
        self._columns = [columns[start:stop] for start, stop in pairwise(edges)]
        self._maxes = [block[-1] for block in self._keys]

    def _rebuilt_cuts(self) -> list[BitMap]:
        """Every block set and cut from the blocks, published (cuts last) once complete."""
        sets = [_bitmap(columns) for columns in self._columns]
        running = BitMap()
        cuts = [running]
        for block_set in reversed(sets) if self.suffix else sets:
            running = running | block_set
            cuts.append(running)
        if self.suffix:
            cuts.reverse()
        self._work = 0
        self._sets = sets
        self._cuts = cuts
        return cuts

    def _locate(self, value: Number) -> tuple[list[BitMap], int, int]:
        """Where ``value`` cuts the sorted bounds: the checkpoints, the block the cut falls in,
        and the cut's place inside that block. ``place == 0`` means the cut is the block's own
        edge (or, with ``block == len(blocks)``, past every block): the checkpoint alone is exact.
        Otherwise the block's last key lies past the cut, so ``place < len(keys)``."""
        cuts = self._cuts
        if cuts is None:
            cuts = self._prepared_cuts()
        self._work = 0
        maxes = self._maxes
        right = self.right
        block = bisect_right(maxes, value) if right else bisect_left(maxes, value)
        if block == len(maxes):
            return cuts, block, 0
        keys = self._keys[block]
        return cuts, block, bisect_right(keys, value) if right else bisect_left(keys, value)

    def violated(self, value: Number) -> tuple[BitMap, array[int] | None]:
        """The columns whose bound ``value`` violates, as a checkpoint (the caller's to read,
        never to change) and the columns of part of one block to add to it (or None)."""
        cuts, block, place = self._locate(value)
        if not place:
            return cuts[block], None
        if self.suffix:
            return cuts[block + 1], self._columns[block][place:]
        return cuts[block], self._columns[block][:place]

    def violated_nearest(self, value: Number) -> tuple[BitMap, array[int] | None, bool]:
        """Like :meth:`violated`, but from the block edge nearer the cut: ``(cut, part, False)``
        means the checkpoint plus the part, ``(cut, part, True)`` the checkpoint minus the part
        (the part is then at most half a block, so a bitmap of it costs less)."""
        cuts, block, place = self._locate(value)
        if not place:
            return cuts[block], None, False
        columns = self._columns[block]
        keys = self._keys[block]
        if self.suffix:
            if 2 * place <= len(keys):
                return cuts[block], columns[:place], True
            return cuts[block + 1], columns[place:], False
        if 2 * place <= len(keys):
            return cuts[block], columns[:place], False
        return cuts[block + 1], columns[place:], True

    def discard_violated(self, candidates: BitMap, value: Number, few: bool) -> array[int] | None:
        """Remove from ``candidates`` the columns whose bound ``value`` violates, except those of
        the part of one block that :meth:`violated` would return: return that part, or None when
        it is dealt with here. With ``few`` candidates, the handful inside the cut's block are
        tested one by one against their bounds, which is cheaper than a bitmap of the part."""
        cuts, block, place = self._locate(value)
        if not place:
            candidates -= cuts[block]
            return None
        suffix = self.suffix
        candidates -= cuts[block + 1] if suffix else cuts[block]
        if few:
            block_set = self._sets[block]  # type: ignore[index]
            if not candidates.intersect(block_set):
                return None
            inside = candidates & block_set
            if len(inside) <= _TESTED_ONE_BY_ONE:
                bounds, violates = self.bounds, self.violates
                for column in inside:
                    if violates(bounds[column], value):
                        candidates.discard(column)
                return None
        return self._columns[block][place:] if suffix else self._columns[block][:place]

    def holds_nothing(self) -> bool:
        """Whether no key, column or checkpoint is left behind (tests check this after removal)."""
        return not (self.size or self._keys or self._columns or self._maxes or self._pending) and (
            self._cuts is None or (len(self._cuts) == 1 and not self._cuts[0] and not self._sets)
        )


def _bitmap(columns: array[int]) -> BitMap:
    """A bitmap of ``columns`` (an ``update`` into an empty bitmap is twice as fast as
    ``BitMap(columns)``, and neither makes run containers, which intersect slowly with bitsets)."""
    bitmap = BitMap()
    if columns:
        bitmap.update(columns)
    return bitmap


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
        "_sides",
        "_bounded",
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
        # Indexed by _side(): lower inclusive, lower exclusive, upper inclusive, upper exclusive.
        # low <= v is violated by a suffix from bisect_right, low < v by one from bisect_left;
        # v <= high by a prefix up to bisect_left, v < high by one up to bisect_right.
        lows, highs = self._lows, self._highs
        self._sides = (
            _Side(suffix=True, right=True, fixed_load=load, bounds=lows),
            _Side(suffix=True, right=False, fixed_load=load, bounds=lows),
            _Side(suffix=False, right=False, fixed_load=load, bounds=highs),
            _Side(suffix=False, right=True, fixed_load=load, bounds=highs),
        )
        self._bounded: tuple[_Side, ...] = ()
        """The sides that hold a bound: only they are asked at a query."""

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
        # A bulk load calls this once per range test, so the usual bounds (int, float, None)
        # are vetted, and the interval checked for emptiness, by their exact type first.
        low_type, high_type = type(low), type(high)
        usual = (low_type is int or low_type is float or low is None) and (
            high_type is int or high_type is float or high is None
        )
        if usual:
            if low is None or high is None:  # NaN is the only way to hold nothing
                empty = (low is not None and low != low) or (high is not None and high != high)
            else:  # crossed, shut, or a NaN bound (every comparison with NaN is false)
                empty = not (low < high or (low == high and low_inclusive and high_inclusive))
        else:
            for bound in (low, high):
                if bound is not None and (
                    not isinstance(bound, _NUMBER_TYPES) or isinstance(bound, bool)
                ):
                    raise InvalidRangeError(f"an interval bound is a number or None, not {bound!r}")
            empty = _holds_nothing(low, low_inclusive, high, high_inclusive)
        flags = self._flags
        size = len(flags)
        if column < size:
            if flags[column]:
                self._remove_held(column)
                size = len(flags)
        if column >= size:
            grow = column + 1 - size
            if grow == 1:
                self._lows.append(None)
                self._highs.append(None)
                flags.append(0)
            else:
                self._lows.extend([None] * grow)
                self._highs.extend([None] * grow)
                flags.extend(bytes(grow))
        flag = _PRESENT
        if low_inclusive:
            flag |= _LOW_INCLUSIVE
        if high_inclusive:
            flag |= _HIGH_INCLUSIVE
        if empty:
            flag |= _EMPTY
        self._lows[column] = low
        self._highs[column] = high
        flags[column] = flag
        self._members.add(column)
        if flag & _EMPTY:
            self._empty.add(column)
            return
        # An unbounded side is violated by nothing, so it is kept nowhere.
        sides = self._sides
        if low is not None:
            side = sides[0 if low_inclusive else 1]
            side.size += 1
            if side._cuts is None:
                side._pending[column] = low  # _Side.add inline: sorted in at the next query
            else:
                side._insert(low, column)
            if side.size == 1:
                self._find_bounded()
        if high is not None:
            side = sides[2 if high_inclusive else 3]
            side.size += 1
            if side._cuts is None:
                side._pending[column] = high
            else:
                side._insert(high, column)
            if side.size == 1:
                self._find_bounded()

    def _find_bounded(self) -> None:
        self._bounded = tuple(side for side in self._sides if side.size)

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
            sides = self._sides
            if low is not None:
                sides[0 if flag & _LOW_INCLUSIVE else 1].remove(low, column)
            if high is not None:
                sides[2 if flag & _HIGH_INCLUSIVE else 3].remove(high, column)
            if not all(side.size for side in self._bounded):
                self._find_bounded()
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
        # Each side's violations come off the members, from the block edge nearer the cut; a
        # side corrected the far way ("the checkpoint minus a part") puts its part back at once,
        # before any other side subtracts, so that nothing it re-adds escapes the other sides.
        # In-place operations on a copy: CRoaring's in-place andnot is about twice as fast as
        # the one that allocates its result.
        result = BitMap(self._members, optimize=False)
        removed: array[int] | None = None
        first = True
        for side in self._bounded:
            cut, part, subtract = side.violated_nearest(value)  # type: ignore[arg-type]
            if subtract:
                if first:
                    result -= cut
                    result.update(part)  # type: ignore[arg-type]
                else:
                    piece = BitMap(cut, optimize=False)
                    piece -= _bitmap(part)  # type: ignore[arg-type]
                    result -= piece
            else:
                if cut:
                    result -= cut
                if part is not None:
                    removed = part if removed is None else removed + part
            first = False
        if self._empty:
            result -= self._empty
        if removed is not None:
            result -= _bitmap(removed)
        return result

    def violating(self, value: object) -> BitMap:
        """The member columns whose interval does not contain ``value``, as a new bitmap.

        >>> index = RangeIndex()
        >>> index.add(0, 1, True, 2, True)
        >>> index.add(1, 3, True, 2, True)  # empty: violated by everything
        >>> list(index.violating(1.5)), list(index.violating(float("nan")))
        ([1], [0, 1])
        """
        if not _is_number(value):
            return BitMap(self._members, optimize=False)
        return self._violations(value)  # type: ignore[arg-type]

    def _violations(self, value: Number) -> BitMap:
        """The member columns whose interval ``value`` (a number) violates, as a new bitmap:
        the union of each side's checkpoint and correction, taken from the nearer block edge."""
        result: BitMap | None = None
        added: array[int] | None = None
        for side in self._bounded:
            cut, part, subtract = side.violated_nearest(value)
            if subtract:
                piece = BitMap(cut, optimize=False)
                piece -= _bitmap(part)  # type: ignore[arg-type]
                if result is None:
                    result = piece
                else:
                    result |= piece
                continue
            if result is None:
                result = BitMap(cut, optimize=False)
            else:
                result |= cut
            if part is not None:
                added = part if added is None else added + part
        if result is None:
            return BitMap(self._empty, optimize=False)
        if self._empty:
            result |= self._empty
        if added is not None:
            result.update(added)
        return result

    def discard_violating(self, candidates: BitMap, value: object) -> None:
        """Remove from ``candidates``, in place, every member column whose interval does not
        contain ``value``; columns that hold no interval here are left alone.

        It is ``candidates -= self.violating(value)`` without building that union: each side's
        checkpoint is subtracted as it is, then the few columns that correct them, in one bitmap.
        Each subtraction costs in proportion to the smaller of the two, so the cost falls as the
        candidates shrink field after field.

        >>> index = RangeIndex()
        >>> index.add(0, 1, True, 2, True)
        >>> index.add(1, 5, True, None, True)
        >>> candidates = BitMap([0, 1, 9])
        >>> index.discard_violating(candidates, 1.5)
        >>> list(candidates)
        [0, 9]
        """
        if not _is_number(value):
            candidates -= self._members
            return
        if self._empty:
            candidates -= self._empty
        few = len(candidates) <= _FEW_CANDIDATES
        parts: array[int] | None = None
        for side in self._bounded:
            part = side.discard_violated(candidates, value, few)  # type: ignore[arg-type]
            if part is not None:
                parts = part if parts is None else parts + part
        if parts is not None:
            correction = BitMap()
            correction.update(parts)
            candidates -= correction

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
        """Sort in the bounds a burst of changes left pending and rebuild the checkpoints now,
        rather than in the next query: call it after a bulk load (about 17 µs per W2
        subscription, 10 ranges), before readers share the index, and while the garbage
        collector is paused if the load paused it."""
        for side in self._bounded:
            if side._cuts is None:
                side._prepared_cuts()

    def holds_nothing(self) -> bool:
        """Whether no interval, bound, checkpoint or table slot is left (tests check removal)."""
        return (
            not (self._lows or self._highs or self._flags)
            and not (self._members or self._empty)
            and all(side.holds_nothing() for side in self._sides)
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
