"""The compiled filter: per-field answers shared by blocks of columns evaluated left to right.

The seeds' filtering section: AND the criteria bitmaps column block by column block, left to
right, and stop at the first block with a bit still set. Here the columns are numbered in ranking
order (most likely to match first) and every bitmap is a Python int, whose ``&`` runs over machine
words in C. A *block* is a run of columns: the first is one machine word (64 columns), the next
spans up to a roaring container's 65,536 columns.

A *stage* holds all tests on one field (or the topic patterns) of every column and answers, for a
message, which columns the value satisfies (columns without a test there always pass). Its answer
is cached: per string, boolean or NULL, and per *bucket* for numbers: the numbers a field's tests
mention cut the number line into elementary intervals (each boundary, and the open gaps between),
and two numbers in one interval compare alike with every boundary, so they pass exactly the same
tests. One bisection finds the bucket (the dispatcher RFC's context-sensitive parser).

A block ANDs stage answers into its candidates, in its own order, and stops as soon as either

* no candidate is left: none of its columns can match, go to the next block; or
* a candidate has no test left in later stages and no residual: it matches, accept.

A stage's answer is computed at most once per message and shared by every block, so trying the
first block costs a non-matching message almost nothing. Orders: the first block completes its
likely columns soonest (greedy likelihood per unit of cost); the others rule out the most
columns per unit of cost first. Columns with residual tests are decided by the reference
evaluator after the last stage, most likely first.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from decimal import Context, Decimal, localcontext
from typing import Any, cast

from bitsift.filters.subsumption import Column, exact_number
from bitsift.index.criteria import (
    Criterion,
    Equals,
    FieldTest,
    HasPrefix,
    InRange,
    Kind,
    Missing,
    OfType,
    Residual,
    classify,
    key_of,
)
from bitsift.index.topics import TopicIndex
from bitsift.selectors.evaluate import evaluate
from bitsift.selectors.topics import TopicPattern
from bitsift.selectors.values import lookup

__all__ = ["Plan", "FIRST_BLOCK", "BLOCK"]

FIRST_BLOCK = 64
"""Columns in the first block: one machine word."""
BLOCK = 65_536
"""Columns in each later block: the span of one roaring container."""
_CACHE_BYTES = 8 * 1024 * 1024
"""Cached answers per stage, in bytes of int bitmaps (at least 64 and at most 4,096 answers)."""
_LONGEST_CACHED = 1024
_TOPIC_COST = 6.0
"""Relative cost of matching a new topic to a cached field lookup."""
_CHECKPOINTS = 1024
"""Interval sides with more bounds than this keep prefix masks only at this many checkpoints."""

_COMPARING = Context(traps=[])
"""Mixed Decimal and float comparisons are exact; this context only keeps them from trapping."""
_ABSENT = object()
_MISSING_KEY = ("m",)
_NAN_KEY = ("nan",)
_OTHER_KEY = ("o",)


class _PrefixMasks:
    """The OR of the first ``count`` bits of a sequence, for any count, in bounded memory.

    Up to :data:`_CHECKPOINTS` entries every prefix is stored; beyond, one in ``step`` is, and the
    rest is ORed in from the column numbers (at most ``step`` shifts)."""

    __slots__ = ("step", "checkpoints", "columns")

    def __init__(self, columns: list[int]) -> None:
        self.step = max(1, -(-len(columns) // _CHECKPOINTS))
        self.columns = columns
        self.checkpoints = [0]
        mask = 0
        for position, column in enumerate(columns, start=1):
            mask |= 1 << column
            if position % self.step == 0:
                self.checkpoints.append(mask)

    def __getitem__(self, count: int) -> int:
        step = self.step
        mask = self.checkpoints[count // step]
        if step > 1:
            for column in self.columns[count - count % step : count]:
                mask |= 1 << column
        return mask


class _Ranges:
    """Which intervals contain a number: one bisection per kind of bound, into prefix masks.

    A low bound ``L`` is met by ``v`` when ``L <= v`` (inclusive) or ``L < v`` (exclusive); a
    high bound when ``v <= H`` or ``v < H``. Bounds of each kind are sorted, so the met ones are a
    prefix (low) or a suffix (high) of the list.
    """

    __slots__ = ("open_low", "open_high", "lows", "highs")

    def __init__(self, entries: list[tuple[int, InRange]]) -> None:
        sides: dict[tuple[bool, bool], list[tuple[object, int]]] = {}
        self.open_low = self.open_high = 0
        for column, interval in entries:
            if interval.low is None:
                self.open_low |= 1 << column
            else:
                key = (True, interval.low_inclusive)
                sides.setdefault(key, []).append((exact_number(interval.low), column))
            if interval.high is None:
                self.open_high |= 1 << column
            else:
                key = (False, interval.high_inclusive)
                sides.setdefault(key, []).append((exact_number(interval.high), column))
        self.lows: list[tuple[list[object], Any, _PrefixMasks]] = []
        self.highs: list[tuple[list[object], Any, _PrefixMasks]] = []
        for (low, inclusive), bounds in sides.items():
            bounds.sort(key=lambda entry: entry[0])  # type: ignore[arg-type,return-value]
            values = [bound for bound, _ in bounds]
            columns = [column for _, column in bounds]
            if low:
                search = bisect_right if inclusive else bisect_left
                self.lows.append((values, search, _PrefixMasks(columns)))
            else:
                # Met high bounds are a suffix: keep the masks of the reversed list.
                search = bisect_left if inclusive else bisect_right
                self.highs.append((values, search, _PrefixMasks(columns[::-1])))

    def containing(self, number: object) -> int:
        low = self.open_low
        for bounds, search, masks in self.lows:
            low |= masks[search(bounds, number)]
        if not low:
            return 0
        high = self.open_high
        for bounds, search, masks in self.highs:
            high |= masks[len(bounds) - search(bounds, number)]
        return low & high


class _Tables:
    """Masks for the criteria of one polarity of one lane, found by lookups, never by scans."""

    __slots__ = (
        "keys",
        "kinds",
        "ranges",
        "prefixes",
        "prefix_lengths",
        "_intervals",
        "boundaries",
    )

    def __init__(self) -> None:
        self.boundaries: set[object] = set()
        """Every number a test here mentions (interval bounds, numeric keys)."""
        self.keys: dict[object, int] = {}
        self.kinds: dict[Kind, int] = {}
        self.prefixes: dict[str, int] = {}
        self.prefix_lengths: list[int] = []
        self.ranges: _Ranges | None = None
        self._intervals: list[tuple[int, InRange]] = []

    def add(self, column: int, criterion: Criterion) -> None:
        bit = 1 << column
        if isinstance(criterion, Equals):
            for key in criterion.keys:
                self.keys[key] = self.keys.get(key, 0) | bit
                if key[0] == "n":
                    self.boundaries.add(exact_number(key[1]))
        elif isinstance(criterion, OfType):
            self.kinds[criterion.kind] = self.kinds.get(criterion.kind, 0) | bit
        elif isinstance(criterion, InRange):
            self._intervals.append((column, criterion))
            for bound in (criterion.low, criterion.high):
                if bound is not None:
                    self.boundaries.add(exact_number(bound))
        elif isinstance(criterion, HasPrefix):
            self.prefixes[criterion.prefix] = self.prefixes.get(criterion.prefix, 0) | bit
        else:  # pragma: no cover - Missing is handled by the lane
            raise AssertionError(f"unexpected criterion {criterion!r}")

    def freeze(self) -> None:
        if self._intervals:
            self.ranges = _Ranges(self._intervals)
        self._intervals = []
        self.prefix_lengths = sorted({len(prefix) for prefix in self.prefixes})

    def hits(self, kind: Kind, value: Any) -> int:
        found = 0
        if self.keys:
            key = key_of(kind, value)
            if key is not None:
                found = self.keys.get(key, 0)
        if self.kinds:
            found |= self.kinds.get(kind, 0)
        if kind is Kind.NUMBER and self.ranges is not None and value == value:
            found |= self.ranges.containing(value)
        if kind is Kind.STRING and self.prefix_lengths:
            prefixes = self.prefixes
            for length in self.prefix_lengths:
                if length > len(value):
                    break
                found |= prefixes.get(value[:length], 0)
        return found


class _Lane:
    """At most one test per column on one field; columns without a test here are satisfied."""

    __slots__ = ("free", "missing", "negated", "plain", "vetoes")

    def __init__(self) -> None:
        self.free = 0  # set once all tests are in: the columns without a test here
        self.missing = 0
        self.negated = 0
        self.plain = _Tables()
        self.vetoes = _Tables()

    def add(self, column: int, test: FieldTest) -> None:
        bit = 1 << column
        if isinstance(test.criterion, Missing):
            if test.negated:
                self.negated |= bit  # "present": nothing vetoes it
            else:
                self.missing |= bit
        elif test.negated:
            self.negated |= bit
            self.vetoes.add(column, test.criterion)
        else:
            self.plain.add(column, test.criterion)

    def satisfied(self, kind: Kind, value: Any) -> int:
        if kind is Kind.MISSING:
            return self.free | self.missing
        found = self.free | self.plain.hits(kind, value)
        if self.negated:
            found |= self.negated & ~self.vetoes.hits(kind, value)
        return found


def _cache_limit(columns: int) -> int:
    return max(64, min(4096, _CACHE_BYTES // max(1, columns // 8)))


class Stage:
    """Every column's tests on one field; answers are cached per value or number bucket."""

    __slots__ = (
        "field",
        "lanes",
        "cost",
        "dotted",
        "cache",
        "numbers",
        "bounds",
        "float_bounds",
        "limit",
    )

    def __init__(self, field: str, lanes: list[_Lane], columns: int) -> None:
        self.field = field
        self.lanes = lanes
        self.cost = 1.0
        self.dotted = "." in field
        self.cache: dict[object, int] = {}
        self.numbers: dict[int, int] = {}
        self.limit = _cache_limit(columns)
        boundaries: set[Any] = set()
        for lane in lanes:
            for tables in (lane.plain, lane.vetoes):
                boundaries.update(tables.boundaries)
        self.bounds: list[Any] = sorted(boundaries)
        # The same boundaries as floats when each converts exactly: a float probe then compares
        # float with float in bisect, several times quicker than float with int.
        self.float_bounds: list[float] | None = None
        try:
            floats = [float(bound) for bound in self.bounds]
        except OverflowError:
            floats = []
        if all(exact == bound for exact, bound in zip(floats, self.bounds, strict=False)):
            if len(floats) == len(self.bounds):
                self.float_bounds = floats

    def satisfied(self, message: Mapping[str, Any], topic: str | None) -> int:
        value: Any
        # lookup() and classify() inlined for the plain cases (same rules, fewer calls).
        try:
            value = message.get(self.field, _ABSENT)
        except Exception:  # a mapping that fails while being read: missing, as lookup() says
            value = None
        if value is _ABSENT:
            value = lookup(message, self.field) if self.dotted else None
        value_type = type(value)
        if value_type is str:
            cache_key: object = value  # a str never equals the tuple keys below
            kind = Kind.STRING
            if len(value) > _LONGEST_CACHED:
                return self._compute(kind, value)
        elif value_type is float or value_type is int:
            return self._number(value)
        else:
            kind, classified = classify(value)
            value = cast(Any, classified)
            if kind is Kind.NUMBER:
                return self._number(value)
            if kind is Kind.STRING:
                cache_key = value
                if len(value) > _LONGEST_CACHED:
                    return self._compute(kind, value)
            elif kind is Kind.BOOLEAN:
                cache_key = ("b", value)
            elif kind is Kind.MISSING:
                cache_key = _MISSING_KEY
            else:
                cache_key = _OTHER_KEY
        cache = self.cache
        found = cache.get(cache_key)
        if found is None:
            found = self._compute(kind, value)
            if len(cache) >= self.limit:
                del cache[next(iter(cache))]
            cache[cache_key] = found
        return found

    def _number(self, value: Any) -> int:
        if value != value:
            bucket = -1  # NaN: in no interval, equal to nothing
        else:
            if type(value) is float and self.float_bounds is not None:
                bounds: list[Any] = self.float_bounds
            else:
                bounds = self.bounds
            if type(value) is Decimal:
                # Compared as it is, never converted: Fraction(Decimal("1e999999999")) would
                # build a billion-digit integer. Comparisons are exact whatever the context's
                # precision; only a trapped FloatOperation could make one raise.
                with localcontext(_COMPARING):
                    position = bisect_left(bounds, value)
                    on_bound = position < len(bounds) and bounds[position] == value
            else:
                position = bisect_left(bounds, value)
                on_bound = position < len(bounds) and bounds[position] == value
            bucket = 2 * position + on_bound  # odd: exactly on a boundary
        numbers = self.numbers
        found = numbers.get(bucket)
        if found is None:
            if type(value) is Decimal:
                with localcontext(_COMPARING):
                    found = self._compute(Kind.NUMBER, value)
            else:
                found = self._compute(Kind.NUMBER, value)
            if len(numbers) >= self.limit:
                del numbers[next(iter(numbers))]
            numbers[bucket] = found
        return found

    def _compute(self, kind: Kind, value: Any) -> int:
        lanes = self.lanes
        found = lanes[0].satisfied(kind, value)
        for lane in lanes[1:]:
            if not found:
                break
            found &= lane.satisfied(kind, value)
        return found


class TopicStage:
    """Every column's topic pattern: columns without one always pass; answers cached per topic."""

    __slots__ = ("field", "free", "index", "cache", "cost", "limit")

    def __init__(self, patterns: list[tuple[int, TopicPattern]], everything: int) -> None:
        self.field = "<topic>"
        self.index = TopicIndex(cache_size=0)
        taken = 0
        for column, pattern in patterns:
            self.index.add(column, pattern)
            taken |= 1 << column
        self.free = everything & ~taken
        self.cache: dict[str, int] = {}
        self.cost = _TOPIC_COST
        self.limit = _cache_limit(everything.bit_length())

    def satisfied(self, message: Mapping[str, Any], topic: str | None) -> int:
        if topic is None:
            return self.free
        cache = self.cache
        found = cache.get(topic)
        if found is None:
            found = self.free
            for column in self.index.match(topic):
                found |= 1 << column
            if len(topic) <= _LONGEST_CACHED:
                if len(cache) >= self.limit:
                    del cache[next(iter(cache))]
                cache[topic] = found
        return found


class Block:
    """A run of columns: its mask, its stage order, and when each of its columns is complete."""

    __slots__ = ("start", "mask", "steps", "residuals", "residual_mask")

    def __init__(self, start: int, size: int) -> None:
        self.start = start
        self.mask = ((1 << size) - 1) << start
        self.steps: list[tuple[int, int]] = []
        """(stage number, columns of this block whose last test is that stage, no residual)."""
        self.residuals: dict[int, tuple[Residual, ...]] = {}
        self.residual_mask = 0


class Plan:
    """Stages over all columns, and the blocks that try them left to right."""

    __slots__ = ("stages", "blocks", "ready", "size")

    def __init__(
        self,
        columns: Sequence[Column],
        likelihoods: Sequence[float],
        first_block: int = FIRST_BLOCK,
        block: int = BLOCK,
    ) -> None:
        self.size = len(columns)
        everything = (1 << len(columns)) - 1
        lanes: dict[str, list[_Lane]] = {}
        constrained: dict[str, list[int]] = {}
        patterns: list[tuple[int, TopicPattern]] = []
        fields_of: list[set[str]] = []
        residuals_of: dict[int, tuple[Residual, ...]] = {}
        self.ready = 0
        """Columns with no test at all (the filter answers those before any plan)."""
        for column, (topic, conjunction) in enumerate(columns):
            used: dict[str, int] = {}
            if topic is not None:
                patterns.append((column, topic))
            residuals = tuple(atom for atom in conjunction if isinstance(atom, Residual))
            if residuals:
                residuals_of[column] = residuals
            for atom in conjunction:
                if isinstance(atom, Residual):
                    continue
                lane_number = used.get(atom.field, 0)
                used[atom.field] = lane_number + 1
                field_lanes = lanes.setdefault(atom.field, [])
                masks = constrained.setdefault(atom.field, [])
                while len(field_lanes) <= lane_number:
                    field_lanes.append(_Lane())
                    masks.append(0)
                field_lanes[lane_number].add(column, atom)
                masks[lane_number] |= 1 << column
            fields = set(used)
            if topic is not None:
                fields.add(_TOPIC)
            fields_of.append(fields)
            if not fields and not residuals:
                self.ready |= 1 << column
        self.stages: list[Stage | TopicStage] = []
        number_of: dict[str, int] = {}
        if patterns:
            number_of[_TOPIC] = len(self.stages)
            self.stages.append(TopicStage(patterns, everything))
        for field, field_lanes in lanes.items():
            for lane, mask in zip(field_lanes, constrained[field], strict=True):
                lane.free = everything & ~mask
                lane.plain.freeze()
                lane.vetoes.freeze()
            number_of[field] = len(self.stages)
            self.stages.append(Stage(field, field_lanes, len(columns)))
        self.blocks: list[Block] = []
        for start, size in _block_sizes(len(columns), first_block, block):
            self.blocks.append(
                self._block(start, size, fields_of, residuals_of, likelihoods, number_of)
            )

    def _block(
        self,
        start: int,
        size: int,
        fields_of: list[set[str]],
        residuals_of: dict[int, tuple[Residual, ...]],
        likelihoods: Sequence[float],
        number_of: dict[str, int],
    ) -> Block:
        result = Block(start, size)
        columns = range(start, start + size)
        for column in columns:
            if column in residuals_of:
                result.residuals[column] = residuals_of[column]
                result.residual_mask |= 1 << column
        costs = {field: self.stages[number].cost for field, number in number_of.items()}
        if start == 0:
            order = _completion_order([fields_of[c] for c in columns], likelihoods, costs)
        else:
            order = _elimination_order([fields_of[c] for c in columns], costs)
        place = {field: index for index, field in enumerate(order)}
        complete = [0] * len(order)
        for column in columns:
            fields = fields_of[column]
            if fields and column not in residuals_of:
                complete[max(place[field] for field in fields)] |= 1 << column
        result.steps = [
            (number_of[field], done) for field, done in zip(order, complete, strict=True)
        ]
        return result

    def first_hit(self, message: Mapping[str, Any], topic: str | None) -> int:
        """The rank of a column that matches the message, or -1."""
        if self.ready:
            return _lowest(self.ready)
        stages = self.stages
        answers: list[int | None] = [None] * len(stages)
        for block in self.blocks:
            candidates = block.mask
            for number, complete in block.steps:
                answer = answers[number]
                if answer is None:
                    answer = answers[number] = stages[number].satisfied(message, topic)
                candidates &= answer
                if not candidates:
                    break
                if candidates & complete:
                    return _lowest(candidates & complete)
            else:
                residuals = block.residuals
                while candidates:
                    column = _lowest(candidates)
                    candidates &= candidates - 1
                    if all(
                        evaluate(residual.node, message) is residual.want
                        for residual in residuals[column]
                    ):
                        return column
        return -1


_TOPIC = "<topic>"


def _lowest(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _block_sizes(count: int, first_block: int, block: int) -> list[tuple[int, int]]:
    sizes: list[int] = []
    remaining = count
    while remaining:
        size = min(first_block if not sizes else block, remaining)
        sizes.append(size)
        remaining -= size
    if len(sizes) > 2 and sizes[-1] < block // 4:
        last = sizes.pop()  # a small last block joins the one before it
        sizes[-1] += last
    spans = []
    start = 0
    for size in sizes:
        spans.append((start, size))
        start += size
    return spans


def _completion_order(
    fields_of: list[set[str]], likelihoods: Sequence[float], costs: Mapping[str, float]
) -> list[str]:
    """Stages in the order that completes likely columns at the least cost (greedy).

    Repeatedly take the column with the best likelihood per unit of cost still to pay for its
    fields, and schedule those fields, cheapest first: a matching message then usually meets a
    complete column after a few cheap stages."""
    order: list[str] = []
    scheduled: set[str] = set()
    pending = [position for position, fields in enumerate(fields_of) if fields]
    while pending:
        best, best_score = -1, -1.0
        for position in pending:
            cost = sum(costs[field] for field in fields_of[position] - scheduled)
            score = likelihoods[position] / cost
            if score > best_score:
                best, best_score = position, score
        for field in sorted(fields_of[best] - scheduled, key=lambda f: (costs[f], f)):
            order.append(field)
            scheduled.add(field)
        pending = [position for position in pending if fields_of[position] - scheduled]
    return order


def _elimination_order(fields_of: list[set[str]], costs: Mapping[str, float]) -> list[str]:
    """Stages that can rule out the most columns per unit of cost first."""
    testing: dict[str, int] = {}
    for fields in fields_of:
        for field in fields:
            testing[field] = testing.get(field, 0) + 1
    return sorted(testing, key=lambda field: (-testing[field] / costs[field], field))
