"""One field's tests across every lane, the numeric buckets they define, and a bounded answer cache.

A message is matched field by field: for each field the subscriptions test, the index keeps only
the candidate columns the message's value *allows* (:meth:`FieldIndex.answer`): every column
except those whose test on this field the value violates. Answers are complements, so they are
dense, and an intersection of two costs the same whatever their cardinality. Since a complement is
taken against a fixed *universe* (every column number below some bound the index sets), columns
added or removed on *other* fields leave it exact.

Computing an answer from the postings takes several bitmap operations (and, for ranges,
bisections and checkpoint corrections), so answers are cached. The cache key is what makes the
cache work:

* a string or boolean is its own key (message streams repeat symbols, regions and flags);
* a number is keyed by its **bucket**. Every number a test on this field mentions (range bounds,
  numbers in ``=`` and ``IN``) is a *boundary*; sorted, the boundaries cut the number line into
  elementary intervals: each boundary itself, and the open interval between two neighbours. Any
  two numbers in the same elementary interval compare the same way with every boundary, so they
  satisfy and violate exactly the same tests: one bisection gives the bucket, and the bucket's
  cached answer is exact for every value in it. This is the dispatcher RFC's context-sensitive
  parser: the message value is read in the light of what the subscriptions ask;
* missing (NULL), NaN and values of no selector type have one key each.

**Answers are integers** (bit ``c`` set: column ``c`` allowed; see :mod:`bitsift.index.bits` for
why): the match loop intersects them with ``&``, about 80 ns per field at 12,000 columns. They
are as wide as the index's universe, which grows with the columns (never a fixed 65,536), so a
cached answer costs an eighth of a byte per column.

The cache is bounded in bytes (an estimate of each entry's roaring containers) and evicts first
in, first out; strings over 1,024 characters are answered but never cached, so an untrusted
message stream cannot grow it. Any change to the field's tests empties it (the answers and the
buckets both move), and so does a new universe.

Per-lane slots (:class:`~bitsift.index.slots.FieldSlot`) stay the single source of truth for what a
value violates; this class only combines their answers (a union over lanes) and remembers them.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Iterable, Iterator
from typing import Any

from pyroaring import BitMap, FrozenBitMap

from bitsift.index.bits import to_bitmap, to_int
from bitsift.index.criteria import Equals, FieldTest, InRange, Kind, classify
from bitsift.index.ranges import _is_number
from bitsift.index.slots import FieldSlot
from bitsift.index.sweep import LaneSketch, Pending, WidePending, narrow_bitmap

__all__ = ["AnswerCache", "FieldIndex", "CACHE_BYTES", "CACHE_ANSWERS"]

CACHE_BYTES = 8 * 1024 * 1024
"""The least bytes of cached answers per field when the budget is automatic."""
CACHE_ANSWERS = 4096
"""Answers an automatic budget holds at least: 8 MiB, or 4,096 answers of the universe's width
(about 60 MiB per busy field at 115,000 columns). A stream's working set (distinct symbols, price
and quantity buckets) fits, so a warm index answers from the cache; pass an explicit budget to
trade speed for memory."""
_LONGEST_CACHED_STRING = 1024
_MAX_ENTRIES = 1 << 16
_ENTRY_OVERHEAD = 120
"""Bytes a cache entry costs beside its answer's bits: dict slot, key, int header."""
_SEEN_KEYS = 4096
"""Keys missed once that a field remembers, waiting for a second miss (bounded, FIFO)."""
_REPEATS_WORTH_CACHING = 4
"""A field builds answers for repeated misses while at least one miss in this many is one."""
_INSORT_EDITS = 32
"""Boundary edits applied in place between two queries before the sorted list is rebuilt instead."""
_MISSING_KEY = ("missing",)
_NAN_KEY = ("nan",)
_OTHER_KEY = ("other",)
_TRUE_KEY = ("b", True)
_FALSE_KEY = ("b", False)


def _boundaries(test: FieldTest) -> Iterator[Any]:
    """The numbers where ``test``'s answer can change (NaN bounds change nothing)."""
    criterion = test.criterion
    if isinstance(criterion, InRange):
        for bound in (criterion.low, criterion.high):
            if bound is not None and bound == bound:
                yield bound
    elif isinstance(criterion, Equals):
        for tag, value in criterion.keys:
            if tag == "n":
                yield value


def _fresh(bound: Any) -> Any:
    """An equal copy of an int or float boundary, made now. The sorted boundaries are copied in
    order so that neighbours sit next to each other in memory: the parsed originals are spread
    over the whole heap (300 MB at 100k subscriptions), and a bisection then misses the CPU's
    cache at nearly every step (0.4 µs a message at W3's 100k, in scratch timings). Other types
    (Decimal, Fraction) are kept as they are."""
    kind = type(bound)
    if kind is float:
        return bound * 1.0  # a new float; -0.0 and the infinities stay what they were
    if kind is int:
        return bound + 0  # a new int beyond CPython's cached small ints
    return bound


def _for_ranges(value: object) -> tuple[Kind, object, bool]:
    """A raw value classified for the sweep, and whether a range can hold it (a number, not
    NaN); a plain int or float without the call to ``classify``."""
    kind_of = type(value)
    if kind_of is int or (kind_of is float and value == value):
        return Kind.NUMBER, value, True
    kind, normalised = classify(value)
    return kind, normalised, kind is Kind.NUMBER and _is_number(normalised)


class AnswerCache(dict[object, int]):
    """Cached answers: integers of one width (the universe's), first in, first out.

    Every entry costs the same, so the byte budget is a number of entries: ``resize`` sets it for
    a width and empties the cache. The match loop reads it as the plain dict it is (``get``).

    >>> cache = AnswerCache()
    >>> cache.resize(width=8 * 1024 * 8, budget=3 * (8 * 1024 + 120))
    >>> for key in "abcd":
    ...     cache.put(key, 1)
    >>> list(cache), cache.capacity
    (['b', 'c', 'd'], 3)
    """

    __slots__ = ("capacity", "entry_bytes")

    def __init__(self) -> None:
        super().__init__()
        self.capacity = 0
        self.entry_bytes = _ENTRY_OVERHEAD

    def resize(self, width: int, budget: int | None) -> None:
        """Hold answers ``width`` bits wide within ``budget`` bytes (None: the automatic budget,
        :data:`CACHE_ANSWERS` answers and at least :data:`CACHE_BYTES`); empties the cache."""
        self.entry_bytes = (width + 7) // 8 + _ENTRY_OVERHEAD
        if budget is None:
            budget = max(CACHE_BYTES, CACHE_ANSWERS * self.entry_bytes)
        self.capacity = min(_MAX_ENTRIES, budget // self.entry_bytes)
        self.clear()

    @property
    def budget(self) -> int:
        """The bytes the cache may hold (its capacity in answers, in bytes)."""
        return self.capacity * self.entry_bytes

    def put(self, key: object, answer: int) -> None:
        """Remember ``answer``, first evicting the oldest answers if the cache is full."""
        if self.capacity:
            while len(self) >= self.capacity:
                del self[next(iter(self))]
            self[key] = answer

    @property
    def held_bytes(self) -> int:
        """The estimated bytes of the answers held now."""
        return len(self) * self.entry_bytes


class FieldIndex:
    """Every lane of one field, with the numeric boundaries and the answer cache.

    ``lanes`` is shared with the subscription index (``SubscriptionIndex._slots[field]``), which
    other readers (the batch matcher) walk directly.

    >>> from bitsift.index.criteria import FieldTest, InRange
    >>> field = FieldIndex("price", [], FrozenBitMap(range(10)))
    >>> field.add(0, 7, FieldTest("price", InRange(10, True, 20, False)))
    >>> 7 in field.allowed(15), 7 in field.allowed(20), 7 in field.allowed(None)
    (True, False, False)
    >>> len(field.allowed(None))
    9
    >>> bin(field.answer(12.5))  # every one of the ten columns
    '0b1111111111'
    """

    __slots__ = (
        "field",
        "lanes",
        "_budget",
        "_universe",
        "_bounds",
        "_sorted",
        "_edits",
        "_cache",
        "_everything",
        "_seen",
        "_sightings",
        "_repeats",
        "_sketches",
    )

    def __init__(
        self,
        field: str,
        lanes: list[FieldSlot],
        universe: FrozenBitMap,
        budget: int | None = None,
    ) -> None:
        self.field = field
        self.lanes = lanes
        self._budget = budget
        """The explicit budget in bytes, or None for the automatic one (CACHE_ANSWERS)."""
        self._bounds: dict[Any, int] = {}
        """Each distinct boundary and how many tests mention it."""
        self._sorted: list[Any] | None = []
        """The distinct boundaries in order; None when it must be rebuilt."""
        self._edits = 0
        self._cache = AnswerCache()
        """Answers by key: a str, a numeric bucket (int), or a tagged tuple (see ``answer``). The
        subscription index reads it directly in its match loop."""
        self._seen: dict[object, None] = {}
        """Keys missed once recently (see ``remember``), oldest first."""
        self._sightings = 0
        self._repeats = 0
        """Misses seen by ``remember`` lately, and how many of them were second sightings."""
        self._sketches: list[LaneSketch | None] | None = None
        """Per lane, the sweep's masks (sweep.py) when the lane holds only ranges; None: not
        built since the last change."""
        self.set_universe(universe)

    # -- changes ---------------------------------------------------------------------------------

    def add(self, lane: int, column: int, test: FieldTest) -> None:
        lanes = self.lanes
        while len(lanes) <= lane:
            lanes.append(FieldSlot(self.field))
        lanes[lane].add(column, test)
        self._count_boundaries((test,))

    def add_many(self, lane: int, columns: list[int], tests: list[FieldTest]) -> None:
        """:meth:`add` for each column and its test in turn, all in one lane (a bulk load: the
        slot updates each bitmap once, :meth:`FieldSlot.add_many`)."""
        lanes = self.lanes
        while len(lanes) <= lane:
            lanes.append(FieldSlot(self.field))
        lanes[lane].add_many(columns, tests)
        self._count_boundaries(tests)

    def _count_boundaries(self, tests: Iterable[FieldTest]) -> None:
        """Count the boundaries of newly added tests (``_boundaries`` without a generator, and
        no ``_edit`` call once the sorted list is dropped: a bulk load adds every test), then
        forget what the old tests answered."""
        bounds = self._bounds
        for test in tests:
            criterion = test.criterion
            found: tuple[Any, ...] | list[Any]
            if isinstance(criterion, InRange):
                found = (criterion.low, criterion.high)
            elif isinstance(criterion, Equals):
                found = [value for tag, value in criterion.keys if tag == "n"]
            else:
                continue
            for bound in found:
                if bound is not None and bound == bound:  # NaN bounds change nothing
                    count = bounds.get(bound, 0)
                    bounds[bound] = count + 1
                    if not count and self._sorted is not None:
                        self._edit(bound, insert=True)
        if self._cache or self._seen or self._sketches:
            self.forget()

    def remove(self, lane: int, column: int, test: FieldTest) -> None:
        lanes = self.lanes
        lanes[lane].remove(column, test)
        while lanes and not lanes[-1]:
            lanes.pop()
        bounds = self._bounds
        for bound in _boundaries(test):
            count = bounds[bound] - 1
            if count:
                bounds[bound] = count
            else:
                del bounds[bound]
                self._edit(bound, insert=False)
        self.forget()

    def _edit(self, bound: Any, *, insert: bool) -> None:
        """Keep the sorted boundaries current in place, or drop them when a burst of changes
        (a bulk load) would make one sort at the next query cheaper."""
        ordered = self._sorted
        if ordered is None:
            return
        self._edits += 1
        if self._edits > _INSORT_EDITS:
            self._sorted = None
        elif insert:
            insort(ordered, bound)
        else:
            del ordered[bisect_right(ordered, bound) - 1]

    def forget(self) -> None:
        """Empty the answer cache and drop the sweep's masks (after any change to the field's
        tests)."""
        if self._cache or self._seen:
            self._cache.clear()
            self._seen.clear()
        self._sketches = None

    def set_universe(self, universe: FrozenBitMap) -> None:
        """Take complements against ``universe`` from now on (it must hold every column)."""
        self._universe = universe
        self._everything = to_int(universe)
        self._cache.resize(universe.max() + 1 if universe else 0, self._budget)
        self._seen.clear()
        self._sketches = None

    def __bool__(self) -> bool:
        return bool(self.lanes)

    # -- questions -------------------------------------------------------------------------------

    def bucket(self, value: Any) -> int:
        """The elementary interval of a number (not NaN) among the boundaries: ``2 * i`` for the
        open interval after the ``i``-th boundary (``0``: below them all), ``2 * i + 1`` for the
        ``i``-th boundary itself (counting from 1).

        >>> field = FieldIndex("x", [], FrozenBitMap(range(4)))
        >>> field.add(0, 0, FieldTest("x", InRange(1, True, 2.5, False)))
        >>> [field.bucket(v) for v in (0, 1, 1.5, 2.5, 99)]
        [0, 1, 2, 3, 4]
        """
        ordered = self._sorted
        if ordered is None:
            ordered = self._sorted = [_fresh(bound) for bound in sorted(self._bounds)]
        self._edits = 0
        place: int = bisect_right(ordered, value)
        if place and ordered[place - 1] == value:
            return 2 * place - 1
        return 2 * place

    def _key(self, kind: Kind, normalised: object) -> object:
        """The cache key of a classified value; None for a string too long to cache."""
        if kind is Kind.STRING:
            if len(normalised) > _LONGEST_CACHED_STRING:  # type: ignore[arg-type]
                return None
            return normalised
        if kind is Kind.NUMBER:
            return self.bucket(normalised) if normalised == normalised else _NAN_KEY
        if kind is Kind.BOOLEAN:
            return _TRUE_KEY if normalised else _FALSE_KEY
        if kind is Kind.MISSING:
            return _MISSING_KEY
        return _OTHER_KEY

    def remember(self, key: object, value: object) -> int | None:
        """Cache the answer for ``value`` (whose cache key is ``key``, or None when the caller
        did not compute it) if this is the second miss on it lately and this field's misses
        repeat often enough to pay; return the answer when it was built.

        For a message swept without the caches (``SubscriptionIndex`` sends one there when
        several fields miss): a stream that repeats its symbols and buckets (W3, cold) warms up
        from the second sighting of each, while a stream of fresh numbers (W2), where a bucket
        comes back once in many thousand events, builds no answer it would not reuse. The share
        of second sightings among the field's recent misses decides: at least one in
        :data:`_REPEATS_WORTH_CACHING`.
        """
        if key is None:
            key = self._key(*classify(value))
            if key is None:
                return None
        seen = self._seen
        self._sightings += 1
        if self._sightings > _SEEN_KEYS:  # a moving window: halve the history
            self._sightings >>= 1
            self._repeats >>= 1
        if key in seen:
            del seen[key]
            self._repeats += 1
            if self._repeats * _REPEATS_WORTH_CACHING >= self._sightings:
                return self.answer(value)
            return None
        seen[key] = None
        if len(seen) > _SEEN_KEYS:
            del seen[next(iter(seen))]
        return None

    def narrow(self, candidates: int, value: object, pending: Pending) -> int:
        """``candidates`` without the columns whose test the raw ``value`` violates, for the
        sweep (:mod:`~bitsift.index.sweep`): a lane of plain ranges narrows by its coarse masks
        and leaves the undecided groups in ``pending`` for ``sweep.settle``; any other lane, or
        a value no range holds, subtracts the lane's violated columns as they are."""
        kind, normalised, number = _for_ranges(value)
        sketches = self._sketches
        if sketches is None:
            sketches = self._sketches = [None] * len(self.lanes)
        for place, lane in enumerate(self.lanes):
            ranges = lane._ranges_only
            if number and ranges is not None:
                sketch = sketches[place]
                if sketch is None:
                    sketch = sketches[place] = LaneSketch(ranges, self._everything)
                candidates = sketch.narrow(candidates, normalised, pending)
            else:
                violated = lane.violated_now(kind, normalised)
                if violated:
                    candidates &= self._everything ^ to_int(violated)
            if not candidates:
                break
        return candidates

    def narrow_bitmap(self, candidates: BitMap, value: object, pending: WidePending) -> None:
        """:meth:`narrow` for a wide universe, on a roaring bitmap in place
        (:func:`~bitsift.index.sweep.narrow_bitmap`); no masks are built."""
        kind, normalised, number = _for_ranges(value)
        for lane in self.lanes:
            ranges = lane._ranges_only
            if number and ranges is not None:
                narrow_bitmap(candidates, ranges, normalised, pending)
            else:
                candidates -= lane.violated_now(kind, normalised)
            if not candidates:
                return

    def answer(self, value: object) -> int:
        """The columns of the universe whose test on this field (in every lane) the raw message
        value does not violate, as an integer (bit ``c``: column ``c``); cached by key."""
        kind, normalised = classify(value)
        key = self._key(kind, normalised)
        if key is None:
            return self._exact(kind, normalised)
        found = self._cache.get(key)
        if found is None:
            found = self._exact(kind, normalised)
            self._cache.put(key, found)
        return found

    def allowed(self, value: object) -> FrozenBitMap:
        """:meth:`answer` as a roaring bitmap (for readers that want one, and tests)."""
        return to_bitmap(self.answer(value))

    def _exact(self, kind: Kind, value: object) -> int:
        """The allowed columns, computed afresh: the universe minus what any lane's test rules
        out (each lane answers in roaring, from its postings and range checkpoints), as an
        integer. Every violated column is a constrained one, so inside the universe."""
        lanes = self.lanes
        if not lanes:
            return self._everything
        violated = lanes[0].violated_now(kind, value)
        if len(lanes) > 1:
            violated = BitMap.union(
                violated, *(lane.violated_now(kind, value) for lane in lanes[1:])
            )
        return self._everything ^ to_int(violated)

    @property
    def cached(self) -> int:
        """How many answers the cache holds now."""
        return len(self._cache)

    @property
    def cached_bytes(self) -> int:
        """The estimated bytes of the cached answers."""
        return self._cache.held_bytes

    @property
    def budget(self) -> int:
        """The bytes of answers this field may cache."""
        return self._cache.budget
