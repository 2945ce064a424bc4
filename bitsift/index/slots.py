"""A slot: the bitmaps for one field test per conjunction, and which of them a value violates.

The seeds AND one bitmap per message criterion. bitsift does the same per field: each slot
holds, for the conjunction columns that test one field, posting bitmaps keyed by what a value must
be (typed keys, types, numeric ranges, prefixes). For a message value, the slot answers
:meth:`FieldSlot.violated`: the columns whose test the value fails. The index subtracts that from
its candidates, field after field, which is the hit-count rule "all criteria of a conjunction hit"
computed with bitmap operations instead of counters.

A conjunction with two tests on one field (``price > 10 AND price < 20``) puts them in two slots of
that field (lanes 0 and 1), so each slot holds at most one test per column.

Negated tests ("present and not C") are kept as a set of columns that hold unless vetoed: the
value's key, type, range bucket and prefixes select the vetoing columns.

Answers are cached per value (bounded, per slot), because message streams repeat values: the same
symbols, regions and flags arrive again and again. Any change to the slot clears its cache.

A slot whose tests are all plain ranges (every W2 attribute; ``price`` and ``qty`` in W3) answers a
number straight from its :class:`~bitsift.index.ranges.RangeIndex`, and
:meth:`FieldSlot.discard_violated` lets the caller narrow its candidates in place instead of
building the violated columns as a bitmap first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import cast

from pyroaring import BitMap, FrozenBitMap

from bitsift.index.criteria import (
    Equals,
    FieldTest,
    HasPrefix,
    InRange,
    Kind,
    Missing,
    OfType,
    key_of,
)
from bitsift.index.ranges import RangeIndex

__all__ = ["FieldSlot", "PostingTable"]

_CACHE_LIMIT = 512
_EMPTY = FrozenBitMap()


class PostingTable:
    """Columns per key, for one kind of criterion; removing the last column drops the key."""

    __slots__ = ("postings",)

    def __init__(self) -> None:
        self.postings: dict[object, BitMap] = {}

    def add(self, key: object, column: int) -> None:
        postings = self.postings.get(key)
        if postings is None:
            postings = self.postings[key] = BitMap()
        postings.add(column)

    def discard(self, key: object, column: int) -> None:
        postings = self.postings.get(key)
        if postings is not None:
            postings.discard(column)
            if not postings:
                del self.postings[key]

    def get(self, key: object) -> BitMap | None:
        return self.postings.get(key)

    def __bool__(self) -> bool:
        return bool(self.postings)


class _Tests:
    """Posting tables for one polarity (plain tests, or the vetoes of negated tests)."""

    __slots__ = ("keys", "kinds", "ranges", "prefixes", "prefix_lengths")

    def __init__(self) -> None:
        self.keys = PostingTable()
        self.kinds = PostingTable()
        self.ranges = RangeIndex()
        self.prefixes = PostingTable()
        self.prefix_lengths: Counter[int] = Counter()

    def add(self, column: int, criterion: Equals | OfType | InRange | HasPrefix) -> None:
        if isinstance(criterion, InRange):
            self.ranges.add(
                column,
                criterion.low,
                criterion.low_inclusive,
                criterion.high,
                criterion.high_inclusive,
            )
        elif isinstance(criterion, Equals):
            postings = self.keys.postings  # PostingTable.add inline: a bulk load calls this a lot
            for key in criterion.keys:
                found = postings.get(key)
                if found is None:
                    found = postings[key] = BitMap()
                found.add(column)
        elif isinstance(criterion, OfType):
            self.kinds.add(criterion.kind, column)
        else:
            self.prefixes.add(criterion.prefix, column)
            self.prefix_lengths[len(criterion.prefix)] += 1

    def remove(self, column: int, criterion: Equals | OfType | InRange | HasPrefix) -> None:
        if isinstance(criterion, Equals):
            for key in criterion.keys:
                self.keys.discard(key, column)
        elif isinstance(criterion, OfType):
            self.kinds.discard(criterion.kind, column)
        elif isinstance(criterion, InRange):
            self.ranges.remove(column)
        else:
            self.prefixes.discard(criterion.prefix, column)
            self.prefix_lengths[len(criterion.prefix)] -= 1
            if not self.prefix_lengths[len(criterion.prefix)]:
                del self.prefix_lengths[len(criterion.prefix)]

    def hits(self, kind: Kind, value: object) -> list[BitMap]:
        """The posting bitmaps of every test here that the classified value meets."""
        found: list[BitMap] = []
        key = key_of(kind, value)
        if key is not None and self.keys:
            postings = self.keys.get(key)
            if postings is not None:
                found.append(postings)
        if self.kinds:
            postings = self.kinds.get(kind)
            if postings is not None:
                found.append(postings)
        if kind is Kind.NUMBER and len(self.ranges) and value == value:
            found.append(self.ranges.containing(value))
        if kind is Kind.STRING and self.prefix_lengths:
            text: str = value  # type: ignore[assignment]
            for length in self.prefix_lengths:
                if length <= len(text):
                    postings = self.prefixes.get(text[:length])
                    if postings is not None:
                        found.append(postings)
        return found


class FieldSlot:
    """One lane of one field: at most one test per conjunction column."""

    __slots__ = (
        "field",
        "constrained",
        "_missing",
        "_negated",
        "_plain",
        "_vetoes",
        "_cache",
        "_ranges_only",
    )

    def __init__(self, field: str) -> None:
        self.field = field
        self.constrained = BitMap()
        """Every column with a test in this slot."""
        self._missing = BitMap()  # columns whose test is "missing" (IS NULL)
        self._negated = BitMap()  # columns whose test is "present and not C"
        self._plain = _Tests()
        self._vetoes = _Tests()
        self._cache: dict[object, FrozenBitMap] = {}
        self._ranges_only: RangeIndex | None = self._plain.ranges
        """The plain ranges when every test here is a plain range test (the W2 shape, and
        ``price``/``qty`` in W3): a number's answers then come straight from them."""

    def _update_shape(self) -> None:
        # A column holds one test per slot, so this counts every test that is not a plain range
        # (an Equals with no keys posts nothing anywhere, but still constrains its column).
        ranges = self._plain.ranges
        self._ranges_only = ranges if len(ranges) == len(self.constrained) else None

    def add(self, column: int, test: FieldTest) -> None:
        if self._cache:
            self._cache.clear()
        self.constrained.add(column)
        criterion = test.criterion
        if test.negated:
            # "present and not C" (or "present": present and not missing, which nothing vetoes).
            self._negated.add(column)
            if not isinstance(criterion, Missing):
                self._vetoes.add(column, criterion)
            self._ranges_only = None
        elif isinstance(criterion, Missing):
            self._missing.add(column)
            self._ranges_only = None
        else:
            self._plain.add(column, criterion)
            if not isinstance(criterion, InRange):
                self._ranges_only = None

    def add_many(self, columns: list[int], tests: list[FieldTest]) -> None:
        """:meth:`add` for each column and its test in turn (a bulk load): the columns of the
        "missing", negated and equality tests are collected first and each bitmap is updated
        once, rather than one roaring call and three Python calls per test.

        >>> from bitsift.index.criteria import MISSING, Equals, FieldTest
        >>> slot = FieldSlot("region")
        >>> eu = Equals(frozenset([("s", "eu")]))
        >>> slot.add_many([0, 1, 2], [FieldTest("region", eu), FieldTest("region", MISSING),
        ...                           FieldTest("region", eu, True)])
        >>> sorted(slot.violated(Kind.STRING, "eu")), sorted(slot.violated(Kind.MISSING, None))
        ([1, 2], [0, 2])
        """
        if self._cache:
            self._cache.clear()
        if columns:
            self.constrained.update(columns)
        missing: list[int] = []
        negated: list[int] = []
        keyed: dict[object, list[int]] = {}
        plain, vetoes = self._plain, self._vetoes
        ranges_only = True
        for column, test in zip(columns, tests, strict=True):
            criterion = test.criterion
            if test.negated:
                negated.append(column)
                if not isinstance(criterion, Missing):
                    vetoes.add(column, criterion)
                ranges_only = False
            elif isinstance(criterion, InRange):
                plain.add(column, criterion)  # the range index's own add: no posting to batch
            elif isinstance(criterion, Equals):
                for key in criterion.keys:
                    found = keyed.get(key)
                    if found is None:
                        keyed[key] = [column]
                    else:
                        found.append(column)
                ranges_only = False
            elif isinstance(criterion, Missing):
                missing.append(column)
                ranges_only = False
            else:
                plain.add(column, criterion)
                ranges_only = False
        if missing:
            self._missing.update(missing)
        if negated:
            self._negated.update(negated)
        postings = plain.keys.postings
        for posted, found in keyed.items():
            bitmap = postings.get(posted)
            if bitmap is None:
                bitmap = postings[posted] = BitMap()
            bitmap.update(found)
        if not ranges_only:
            self._ranges_only = None

    def remove(self, column: int, test: FieldTest) -> None:
        self._cache.clear()
        self.constrained.discard(column)
        criterion = test.criterion
        if isinstance(criterion, Missing):
            (self._negated if test.negated else self._missing).discard(column)
        elif test.negated:
            self._negated.discard(column)
            self._vetoes.remove(column, criterion)
        else:
            self._plain.remove(column, criterion)
        if self._ranges_only is None:
            self._update_shape()

    def __bool__(self) -> bool:
        return bool(self.constrained)

    def violated(self, kind: Kind, value: object) -> FrozenBitMap:
        """The columns whose test in this slot fails for the classified value."""
        if kind is Kind.MISSING:
            cache_key: object = _MISSING_KEY
        elif kind is Kind.NUMBER and value != value:
            cache_key = _NAN_KEY
        elif kind is Kind.OTHER:
            cache_key = _OTHER_KEY
        else:
            cache_key = key_of(kind, value)
        cached = self._cache.get(cache_key)
        if cached is not None:
            return cached
        answer = FrozenBitMap(self.violated_now(kind, value))
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.pop(next(iter(self._cache)))
        self._cache[cache_key] = answer
        return answer

    def violated_now(self, kind: Kind, value: object) -> BitMap:
        """The columns whose test in this slot fails for the classified value, computed afresh
        (the caller caches: :class:`~bitsift.index.fields.FieldIndex` keys it by bucket)."""
        ranges = self._ranges_only
        if ranges is not None and kind is Kind.NUMBER:
            return ranges.violating(value)
        return self.constrained - self._satisfied(kind, value)

    def discard_violated(self, candidates: BitMap, kind: Kind, value: object) -> None:
        """Remove from ``candidates``, in place, every column whose test in this slot fails for
        the classified value; columns without a test here are left alone.

        Equal to ``candidates -= self.violated_now(kind, value)``, but a field of plain ranges
        subtracts its checkpoints one by one instead of building their union first.

        >>> from bitsift.index.criteria import FieldTest, InRange
        >>> slot = FieldSlot("price")
        >>> slot.add(0, FieldTest("price", InRange(10, True, 20, False)))
        >>> slot.add(1, FieldTest("price", InRange(None, True, 5, True)))
        >>> candidates = BitMap([0, 1, 2])
        >>> slot.discard_violated(candidates, Kind.NUMBER, 12)
        >>> list(candidates)
        [0, 2]
        """
        ranges = self._ranges_only
        if ranges is not None and kind is Kind.NUMBER:
            ranges.discard_violating(candidates, value)
        else:
            candidates -= self.violated_now(kind, value)

    def prepare(self) -> None:
        """Finish now any work a bulk load left for the first query (sorting range bounds and
        building their checkpoints); call it after loading, before readers share the slot."""
        self._plain.ranges.prepare()
        self._vetoes.ranges.prepare()

    def satisfied_now(self, kind: Kind, value: object) -> BitMap | FrozenBitMap:
        """The columns whose test in this slot the classified value meets, computed afresh.

        The result may be one of the slot's own postings: read it, never change it.
        """
        if kind is Kind.MISSING:
            return self._missing
        ranges = self._ranges_only
        if ranges is not None and kind is Kind.NUMBER:
            return ranges.containing(value)
        if not self._negated:
            hits = self._plain.hits(kind, value)
            if len(hits) == 1:
                return hits[0]
            return BitMap.union(_EMPTY, *hits)
        return self._satisfied(kind, value)

    def _satisfied(self, kind: Kind, value: object) -> BitMap:
        if kind is Kind.MISSING:
            return self._missing
        # Frozen when nothing is hit; '|=' below then makes a new bitmap instead of mutating.
        satisfied = cast(BitMap, BitMap.union(_EMPTY, *self._plain.hits(kind, value)))
        if self._negated:
            vetoes = self._vetoes.hits(kind, value)
            satisfied |= self._negated.difference(*vetoes) if vetoes else self._negated
        return satisfied

    def columns(self) -> Iterable[int]:
        return iter(self.constrained)


_MISSING_KEY = ("missing",)
_NAN_KEY = ("nan",)
_OTHER_KEY = ("other",)
