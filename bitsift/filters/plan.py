"""The compiled filter: columns in blocks, each block answering "does any of my columns match?".

The seeds' filtering section: AND the criteria bitmaps column block by column block, left to
right, and stop at the first block with a bit still set. Here a block is a run of columns in
ranking order (most likely first) and its bitmaps are Python ints, whose ``&`` runs over machine
words in C. The first block is one machine word (64 columns); later blocks are larger.

Inside a block the columns' field tests are grouped into *stages*, one per field. A stage answers,
for the message's value of its field, which of the block's columns that value satisfies (columns
that do not test the field are always satisfied). The block ANDs stage after stage into its
candidates and stops as soon as either

* no candidate is left (no column of this block can match: go to the next block), or
* a candidate has no test left in the later stages and no residual: that column matches, the
  message is accepted.

Stages are ordered so that both exits come early: in the first block, by the ranking (the fields
of the most likely column first, so it is complete soonest); in later blocks, by how many columns
test the field (the ones that rule out the most columns first). Columns with residual tests are
decided by the reference evaluator after the last stage, most likely first.

A stage caches its answer per value (bounded), because streams repeat values; numbers on a field
with intervals are not cached (prices rarely repeat) but answered by two bisections into
precomputed prefix masks.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

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

__all__ = ["Block", "build_blocks", "FIRST_BLOCK", "BLOCK"]

FIRST_BLOCK = 64
"""Columns in the first block: one machine word."""
BLOCK = 1024
"""Columns in each later block. Interval tables cost about ``BLOCK**2 / 4`` bytes per field with
intervals in a full block (256 KiB), which bounds memory at about 256 bytes per column and field."""
_CACHE_LIMIT = 1024
_LONGEST_CACHED_TOPIC = 1024
_RANGE_COST = 2.5
"""Relative cost of a stage with intervals (a few bisections, no cache) to a cached lookup."""
_TOPIC_COST = 6.0
"""Relative cost of matching a new topic against a block's patterns."""

_ABSENT = object()
_MISSING_KEY = ("m",)
_NAN_KEY = ("nan",)
_OTHER_KEY = ("o",)


class _Ranges:
    """Which intervals contain a number: a few bisections into prefix and suffix masks.

    Bounds are kept in four sorted lists of plain numbers (inclusive and exclusive, low and high)
    so that each bisection compares numbers only, in C: a low bound ``L`` is met by ``v`` when
    ``L <= v`` (inclusive) or ``L < v`` (exclusive); a high bound when ``v <= H`` or ``v < H``.
    """

    __slots__ = ("open_low", "open_high", "lows", "highs")

    def __init__(self, entries: list[tuple[int, InRange]]) -> None:
        low_inclusive: list[tuple[object, int]] = []
        low_exclusive: list[tuple[object, int]] = []
        high_inclusive: list[tuple[object, int]] = []
        high_exclusive: list[tuple[object, int]] = []
        self.open_low = self.open_high = 0
        for bit, interval in entries:
            if interval.low is None:
                self.open_low |= bit
            else:
                side = low_inclusive if interval.low_inclusive else low_exclusive
                side.append((exact_number(interval.low), bit))
            if interval.high is None:
                self.open_high |= bit
            else:
                side = high_inclusive if interval.high_inclusive else high_exclusive
                side.append((exact_number(interval.high), bit))
        # (bounds, float bounds, masks, bisect): for a low side, masks[i] holds the columns of the
        # first i bounds; for a high side, of the bounds from i on.
        self.lows = [
            _side(bounds, bisect_right if inclusive else bisect_left, low=True)
            for bounds, inclusive in ((low_inclusive, True), (low_exclusive, False))
            if bounds
        ]
        self.highs = [
            _side(bounds, bisect_left if inclusive else bisect_right, low=False)
            for bounds, inclusive in ((high_inclusive, True), (high_exclusive, False))
            if bounds
        ]

    def containing(self, number: object) -> int:
        # Compare like with like: a float against float bounds is several times quicker in
        # bisect than a float against int bounds, and exact when the bounds convert exactly.
        floats = type(number) is float
        low = self.open_low
        for bounds, float_bounds, masks, search in self.lows:
            low |= masks[search(float_bounds if floats and float_bounds else bounds, number)]
        if not low:
            return 0
        high = self.open_high
        for bounds, float_bounds, masks, search in self.highs:
            high |= masks[search(float_bounds if floats and float_bounds else bounds, number)]
        return low & high


_Side = tuple[list[object], list[float] | None, list[int], Any]


def _side(entries: list[tuple[object, int]], search: Any, low: bool) -> _Side:
    entries.sort(key=lambda entry: entry[0])  # type: ignore[arg-type,return-value]
    bounds = [bound for bound, _ in entries]
    masks = [0]
    if low:
        for _, bit in entries:
            masks.append(masks[-1] | bit)
    else:
        for _, bit in reversed(entries):
            masks.append(masks[-1] | bit)
        masks.reverse()
    # The same bounds as floats, when every one converts exactly (else None).
    float_bounds: list[float] | None
    try:
        float_bounds = [float(bound) for bound in bounds]  # type: ignore[arg-type]
    except OverflowError:  # an integer or fraction beyond the float range
        float_bounds = None
    if float_bounds is not None and any(
        exact != bound for exact, bound in zip(float_bounds, bounds, strict=True)
    ):
        float_bounds = None
    return (bounds, float_bounds, masks, search)


class _Tables:
    """Masks for the criteria of one polarity of one lane, found by lookups, never by scans."""

    __slots__ = ("keys", "kinds", "ranges", "prefixes", "prefix_lengths", "_intervals")

    def __init__(self) -> None:
        self.keys: dict[object, int] = {}
        self.kinds: dict[Kind, int] = {}
        self.prefixes: dict[str, int] = {}
        self.prefix_lengths: list[int] = []
        self.ranges: _Ranges | None = None
        self._intervals: list[tuple[int, InRange]] = []

    def add(self, bit: int, criterion: Criterion) -> None:
        if isinstance(criterion, Equals):
            for key in criterion.keys:
                self.keys[key] = self.keys.get(key, 0) | bit
        elif isinstance(criterion, OfType):
            self.kinds[criterion.kind] = self.kinds.get(criterion.kind, 0) | bit
        elif isinstance(criterion, InRange):
            self._intervals.append((bit, criterion))
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
            found |= self.ranges.containing(exact_number(value))
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
        self.free = 0  # set once all tests are in: the block's columns without a test here
        self.missing = 0
        self.negated = 0
        self.plain = _Tables()
        self.vetoes = _Tables()

    def add(self, bit: int, test: FieldTest) -> None:
        if isinstance(test.criterion, Missing):
            if test.negated:
                self.negated |= bit  # "present": nothing vetoes it
            else:
                self.missing |= bit
        elif test.negated:
            self.negated |= bit
            self.vetoes.add(bit, test.criterion)
        else:
            self.plain.add(bit, test.criterion)

    def satisfied(self, kind: Kind, value: Any) -> int:
        if kind is Kind.MISSING:
            return self.free | self.missing
        found = self.free | self.plain.hits(kind, value)
        if self.negated:
            found |= self.negated & ~self.vetoes.hits(kind, value)
        return found


class Stage:
    """All of one block's tests on one field."""

    __slots__ = (
        "field",
        "lanes",
        "complete",
        "has_ranges",
        "cache",
        "cost",
        "dotted",
        "number_base",
        "number_ranges",
    )

    def __init__(self, field: str, lanes: list[_Lane], has_ranges: bool) -> None:
        self.field = field
        self.lanes = lanes
        self.complete = 0
        """Columns whose last test is in this stage and that have no residual."""
        self.has_ranges = has_ranges
        self.cache: dict[object, int] = {}
        self.cost = _RANGE_COST if has_ranges else 1.0
        self.dotted = "." in field
        # The common numeric stage (one lane of plain intervals, perhaps type tests): a number's
        # answer is one interval query, with no call through the lane and tables.
        self.number_base = 0
        self.number_ranges: _Ranges | None = None
        if len(lanes) == 1:
            lane = lanes[0]
            plain = lane.plain
            if (
                plain.ranges is not None
                and not lane.negated
                and not any(key[0] == "n" for key in plain.keys)  # type: ignore[index]
            ):
                self.number_base = lane.free | plain.kinds.get(Kind.NUMBER, 0)
                self.number_ranges = plain.ranges

    def satisfied(self, message: Mapping[str, Any], topic: str | None) -> int:
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
        elif value_type is float or value_type is int:
            if value != value:
                cache_key = _NAN_KEY
                kind = Kind.NUMBER
            elif self.number_ranges is not None:
                return self.number_base | self.number_ranges.containing(value)
            elif self.has_ranges:
                return self._compute(Kind.NUMBER, value)
            else:
                cache_key = ("n", value)
                kind = Kind.NUMBER
        else:
            kind, value = classify(value)
            if kind is Kind.STRING:
                cache_key = value
            elif kind is Kind.NUMBER:
                if value != value:
                    cache_key = _NAN_KEY
                elif self.has_ranges:
                    return self._compute(kind, value)
                else:
                    cache_key = ("n", value)
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
            if len(cache) >= _CACHE_LIMIT:
                del cache[next(iter(cache))]
            cache[cache_key] = found
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
    """The block's topic patterns, as one more stage: columns without a pattern always pass.

    A stage like the others, so that its place in the order is chosen by cost: topics are often
    all different (``exchange.region.symbol``), so matching them is the dearest test, and a block
    whose candidates are gone or complete before it never pays for it.
    """

    __slots__ = ("field", "free", "index", "cache", "complete", "cost")

    def __init__(self, patterns: list[tuple[int, TopicPattern]], everything: int) -> None:
        self.field = "<topic>"
        self.index = TopicIndex(cache_size=0)
        taken = 0
        for position, pattern in patterns:
            self.index.add(position, pattern)
            taken |= 1 << position
        self.free = everything & ~taken
        self.cache: dict[str, int] = {}
        self.complete = 0
        self.cost = _TOPIC_COST

    def satisfied(self, message: Mapping[str, Any], topic: str | None) -> int:
        if topic is None:
            return self.free
        cache = self.cache
        found = cache.get(topic)
        if found is None:
            found = self.free
            for position in self.index.match(topic):
                found |= 1 << position
            if len(topic) <= _LONGEST_CACHED_TOPIC:
                if len(cache) >= _CACHE_LIMIT:
                    del cache[next(iter(cache))]
                cache[topic] = found
        return found


class Block:
    """A run of columns in ranking order, with the masks and stages that decide them."""

    __slots__ = ("start", "size", "everything", "stages", "residuals", "ready")

    def __init__(self, start: int, size: int) -> None:
        self.start = start
        self.size = size
        self.everything = (1 << size) - 1
        self.stages: list[Stage | TopicStage] = []
        self.residuals: dict[int, tuple[Residual, ...]] = {}
        self.ready = 0
        """Columns with no test at all (the filter answers those before any block)."""

    def first_hit(self, message: Mapping[str, Any], topic: str | None) -> int:
        """The block position of a column that matches the message, or -1."""
        candidates = self.everything
        if self.ready:
            return _lowest(self.ready)
        for stage in self.stages:
            candidates &= stage.satisfied(message, topic)
            if not candidates:
                return -1
            done = candidates & stage.complete
            if done:
                return _lowest(done)
        residuals = self.residuals
        while candidates:
            position = _lowest(candidates)
            candidates &= candidates - 1
            if all(
                evaluate(residual.node, message) is residual.want
                for residual in residuals[position]
            ):
                return position
        return -1


def _lowest(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def build_blocks(
    columns: Sequence[Column],
    likelihoods: Sequence[float],
    first_block: int = FIRST_BLOCK,
    block: int = BLOCK,
) -> list[Block]:
    """Blocks over ``columns`` in the order given (most likely first, ``likelihoods`` aligned).

    A last block smaller than a quarter of ``block`` joins the one before it.
    """
    sizes: list[int] = []
    remaining = len(columns)
    while remaining:
        size = min(first_block if not sizes else block, remaining)
        sizes.append(size)
        remaining -= size
    if len(sizes) > 2 and sizes[-1] < block // 4:
        last = sizes.pop()
        sizes[-1] += last
    blocks = []
    start = 0
    for number, size in enumerate(sizes):
        blocks.append(_build_block(columns, likelihoods, start, size, first=number == 0))
        start += size
    return blocks


_TOPIC = "<topic>"


def _build_block(
    columns: Sequence[Column], likelihoods: Sequence[float], start: int, size: int, first: bool
) -> Block:
    result = Block(start, size)
    lanes: dict[str, list[_Lane]] = {}
    constrained: dict[str, list[int]] = {}  # per field, per lane: columns with a test there
    testing: dict[str, int] = {}  # per field (and the topic): columns with a test on it
    patterns: list[tuple[int, TopicPattern]] = []
    fields_of: list[set[str]] = []
    for position in range(size):
        topic, conjunction = columns[start + position]
        bit = 1 << position
        used: dict[str, int] = {}
        if topic is not None:
            patterns.append((position, topic))
            testing[_TOPIC] = testing.get(_TOPIC, 0) | bit
        residuals = tuple(atom for atom in conjunction if isinstance(atom, Residual))
        if residuals:
            result.residuals[position] = residuals
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
            field_lanes[lane_number].add(bit, atom)
            masks[lane_number] |= bit
            testing[atom.field] = testing.get(atom.field, 0) | bit
        fields = set(used)
        if topic is not None:
            fields.add(_TOPIC)
        fields_of.append(fields)
        if not fields and not residuals:
            result.ready |= bit
    stages: dict[str, Stage | TopicStage] = {}
    if patterns:
        stages[_TOPIC] = TopicStage(patterns, result.everything)
    for field, field_lanes in lanes.items():
        has_ranges = False
        for lane, mask in zip(field_lanes, constrained[field], strict=True):
            lane.free = result.everything & ~mask
            lane.plain.freeze()
            lane.vetoes.freeze()
            has_ranges = has_ranges or lane.plain.ranges is not None
            has_ranges = has_ranges or lane.vetoes.ranges is not None
        stages[field] = Stage(field, field_lanes, has_ranges)
    if first:
        order = _completion_order(fields_of, likelihoods[start : start + size], stages)
    else:
        order = _elimination_order(testing, stages)
    result.stages = [stages[field] for field in order]
    stage_of = {field: index for index, field in enumerate(order)}
    for position, fields in enumerate(fields_of):
        if fields and position not in result.residuals:
            last = max(stage_of[field] for field in fields)
            result.stages[last].complete |= 1 << position
    return result


def _completion_order(
    fields_of: list[set[str]],
    likelihoods: Sequence[float],
    stages: Mapping[str, Stage | TopicStage],
) -> list[str]:
    """Stages in the order that completes likely columns at the least cost (greedy).

    Repeatedly take the column with the best likelihood per unit of cost still to pay for its
    fields, and schedule those fields, cheapest first: a matching message then usually meets a
    complete column after a few cheap stages.
    """
    order: list[str] = []
    scheduled: set[str] = set()
    pending = [position for position, fields in enumerate(fields_of) if fields]
    while pending:
        best, best_score = -1, -1.0
        for position in pending:
            missing = fields_of[position] - scheduled
            cost = sum(stages[field].cost for field in missing)
            score = likelihoods[position] / cost if cost else float("inf")
            if score > best_score:
                best, best_score = position, score
        for field in sorted(fields_of[best] - scheduled, key=lambda f: (stages[f].cost, f)):
            order.append(field)
            scheduled.add(field)
        pending = [position for position in pending if fields_of[position] - scheduled]
    return order


def _elimination_order(
    testing: Mapping[str, int], stages: Mapping[str, Stage | TopicStage]
) -> list[str]:
    """Stages that can rule out the most columns per unit of cost first."""
    return sorted(
        testing, key=lambda field: (-testing[field].bit_count() / stages[field].cost, field)
    )
