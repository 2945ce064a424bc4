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

from bitsift.errors import TopicNameError
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
_FEW_PATTERNS = 4
"""Up to this many candidate patterns are tested one by one instead of through the topic index."""
_SMALL_DOMAIN = 40
"""A stage that has seen at most this many distinct values may join a fused stage."""
_FUSED_CACHE = 4096
"""Most value combinations a fused stage caches (and the most its members' domains may
multiply to when it is formed)."""
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

    def value_key(self, message: Mapping[str, Any]) -> object:
        """What this stage's answer for the message depends on (None: not to be cached).

        Two messages with equal keys get equal answers: the key is the value itself for a
        string, a tagged value for a boolean, the bucket for a number, a marker for the rest."""
        value: Any
        try:
            value = message.get(self.field, _ABSENT)
        except Exception:
            value = None
        if value is _ABSENT:
            value = lookup(message, self.field) if self.dotted else None
        value_type = type(value)
        if value_type is str:
            return value if len(value) <= _LONGEST_CACHED else None
        if value_type is float or value_type is int:
            return self._bucket(value)
        kind, classified = classify(value)
        if kind is Kind.NUMBER:
            return self._bucket(classified)
        if kind is Kind.STRING:
            text = cast(str, classified)
            return text if len(text) <= _LONGEST_CACHED else None
        if kind is Kind.BOOLEAN:
            return ("b", classified)
        return _MISSING_KEY if kind is Kind.MISSING else _OTHER_KEY

    @property
    def distinct(self) -> int:
        """How many different answers classes the stage has cached so far."""
        return len(self.cache) + len(self.numbers)

    def _bucket(self, value: Any) -> int:
        """The elementary interval of a number among the boundaries (-1 for NaN)."""
        if value != value:
            return -1
        if type(value) is float and self.float_bounds is not None:
            bounds: list[Any] = self.float_bounds
        else:
            bounds = self.bounds
        if type(value) is Decimal:
            # Compared as it is, never converted: Fraction(Decimal("1e999999999")) would build a
            # billion-digit integer. Comparisons are exact whatever the context's precision;
            # only a trapped FloatOperation could make one raise.
            with localcontext(_COMPARING):
                position = bisect_left(bounds, value)
                on_bound = position < len(bounds) and bounds[position] == value
        else:
            position = bisect_left(bounds, value)
            on_bound = position < len(bounds) and bounds[position] == value
        return 2 * position + on_bound  # odd: exactly on a boundary

    def _number(self, value: Any) -> int:
        bucket = self._bucket(value)
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

    __slots__ = ("field", "free", "taken", "index", "cache", "cost", "limit", "patterns")

    def __init__(self, patterns: list[tuple[int, TopicPattern]], everything: int) -> None:
        self.field = "<topic>"
        self.index = TopicIndex(cache_size=0)
        self.patterns = dict(patterns)
        taken = 0
        for column, pattern in patterns:
            self.index.add(column, pattern)
            taken |= 1 << column
        self.taken = taken
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

    def satisfied_among(self, topic: str | None, candidates: int) -> int:
        """Like :meth:`satisfied` but exact only for ``candidates``: when few candidates have a
        pattern, testing those patterns one by one beats matching a new topic against all."""
        if topic is None:
            return self.free
        found = self.cache.get(topic)
        if found is not None:
            return found
        pending = candidates & self.taken
        if pending.bit_count() > _FEW_PATTERNS:
            return self.satisfied({}, topic)
        found = self.free
        while pending:
            column = _lowest(pending)
            pending &= pending - 1
            try:
                if self.patterns[column].matches(topic):
                    found |= 1 << column
            except TopicNameError:  # not a valid topic in that syntax: matches nothing there
                pass
        return found


class FusedStage:
    """Several stages whose values take few distinct values, answered by one cached lookup.

    A message's answer for the group is the AND of its members' answers, and depends only on
    the tuple of their value keys (:meth:`Stage.value_key`), so it is cached per tuple. Fields
    like exchange, side, region and a flag (1,200 combinations in W3) then cost one dictionary
    lookup instead of four."""

    __slots__ = ("field", "members", "cache", "cost", "limit")

    def __init__(self, members: list[Stage]) -> None:
        self.field = "<" + "+".join(member.field for member in members) + ">"
        self.members = members
        self.cache: dict[tuple[object, ...], int] = {}
        self.cost = 1.0 + 0.25 * (len(members) - 1)
        self.limit = _FUSED_CACHE

    def satisfied(self, message: Mapping[str, Any], topic: str | None) -> int:
        key = tuple([member.value_key(message) for member in self.members])
        found = self.cache.get(key)
        if found is None:
            members = self.members
            found = members[0].satisfied(message, topic)
            for member in members[1:]:
                found &= member.satisfied(message, topic)
            if None not in key:
                cache = self.cache
                if len(cache) >= self.limit:
                    del cache[next(iter(cache))]
                cache[key] = found
        return found


class Block:
    """A set of columns tried together: its mask, its stage order, and when each is complete."""

    __slots__ = ("mask", "steps", "residual_order")

    def __init__(self, mask: int) -> None:
        self.mask = mask
        self.steps: list[tuple[int, int]] = []
        """(stage number, columns of this block whose last test is that stage, no residual)."""
        self.residual_order: dict[int, int] = {}
        """Rank of each column of this block that has residual tests (tried best first)."""


class Plan:
    """Stages over all columns (numbered as given), and blocks that try them left to right.

    The stages and their caches are built once; :meth:`arrange` re-cuts the blocks for a new
    ranking, which costs little, so the filter can re-rank often while keeping its caches."""

    __slots__ = (
        "stages",
        "blocks",
        "ready",
        "size",
        "fields_of",
        "residuals_of",
        "number_of",
        "topic_stage",
        "group_of",
    )

    def __init__(self, columns: Sequence[Column]) -> None:
        self.size = len(columns)
        everything = (1 << len(columns)) - 1
        lanes: dict[str, list[_Lane]] = {}
        constrained: dict[str, list[int]] = {}
        patterns: list[tuple[int, TopicPattern]] = []
        self.fields_of: list[set[str]] = []
        self.residuals_of: dict[int, tuple[Residual, ...]] = {}
        self.ready = 0
        """Columns with no test at all (the filter answers those before any plan)."""
        for column, (topic, conjunction) in enumerate(columns):
            used: dict[str, int] = {}
            if topic is not None:
                patterns.append((column, topic))
            residuals = tuple(atom for atom in conjunction if isinstance(atom, Residual))
            if residuals:
                self.residuals_of[column] = residuals
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
            self.fields_of.append(fields)
            if not fields and not residuals:
                self.ready |= 1 << column
        self.stages: list[Stage | TopicStage | FusedStage] = []
        self.number_of: dict[str, int] = {}
        self.topic_stage = -1
        if patterns:
            self.topic_stage = self.number_of[_TOPIC] = len(self.stages)
            self.stages.append(TopicStage(patterns, everything))
        for field, field_lanes in lanes.items():
            for lane, mask in zip(field_lanes, constrained[field], strict=True):
                lane.free = everything & ~mask
                lane.plain.freeze()
                lane.vetoes.freeze()
            self.number_of[field] = len(self.stages)
            self.stages.append(Stage(field, field_lanes, len(columns)))
        self.blocks: list[Block] = []
        self.group_of: dict[str, str] = {}
        """Field -> the name of the fused stage that answers for it."""

    def fuse(self) -> None:
        """Fuse the stages that have seen few distinct values so far (once; call :meth:`arrange`
        after it). Only the speed depends on the choice: a fused stage answers the same."""
        if self.group_of:
            return
        small = sorted(
            (stage for stage in self.stages if isinstance(stage, Stage) and 0 < stage.distinct),
            key=lambda stage: stage.distinct,
        )
        members: list[Stage] = []
        product = 1
        for stage in small:
            if stage.distinct > _SMALL_DOMAIN or product * stage.distinct > _FUSED_CACHE:
                break
            members.append(stage)
            product *= stage.distinct
        if len(members) < 2:
            return
        fused = FusedStage(members)
        self.number_of[fused.field] = len(self.stages)
        self.stages.append(fused)
        for member in members:
            self.group_of[member.field] = fused.field

    def arrange(
        self,
        order: Sequence[int],
        likelihoods: Sequence[float],
        first_block: int = FIRST_BLOCK,
        block: int = BLOCK,
    ) -> None:
        """Cut the columns, ranked by ``order`` (best first), into blocks; ``likelihoods`` are
        per column (not per rank)."""
        costs = {field: self.stages[number].cost for field, number in self.number_of.items()}
        group_of = self.group_of
        grouped = [{group_of.get(field, field) for field in fields} for fields in self.fields_of]
        blocks = []
        for start, size in _block_sizes(len(order), first_block, block):
            members = order[start : start + size]
            mask = 0
            for column in members:
                mask |= 1 << column
            result = Block(mask)
            fields_of = [grouped[column] for column in members]
            if start == 0:
                chances = [likelihoods[column] for column in members]
                fields = _completion_order(fields_of, chances, costs)
            else:
                fields = _elimination_order(fields_of, costs)
            place = {field: index for index, field in enumerate(fields)}
            complete = [0] * len(fields)
            for rank, column in enumerate(members, start=start):
                if column in self.residuals_of:
                    result.residual_order[column] = rank
                elif grouped[column]:
                    complete[max(place[field] for field in grouped[column])] |= 1 << column
            result.steps = [
                (self.number_of[field], done) for field, done in zip(fields, complete, strict=True)
            ]
            blocks.append(result)
        self.blocks = blocks

    def first_hit(self, message: Mapping[str, Any], topic: str | None) -> int:
        """A column that matches the message, or -1."""
        if self.ready:
            return _lowest(self.ready)
        stages = self.stages
        topic_stage = self.topic_stage
        answers: list[int | None] = [None] * len(stages)
        for block in self.blocks:
            candidates = block.mask
            for number, complete in block.steps:
                answer = answers[number]
                if answer is None:
                    if number == topic_stage:  # exact for these candidates only: not shared
                        answer = stages[number].satisfied_among(topic, candidates)  # type: ignore[union-attr]
                    else:
                        answer = answers[number] = stages[number].satisfied(message, topic)
                candidates &= answer
                if not candidates:
                    break
                if candidates & complete:
                    return _lowest(candidates & complete)
            else:
                if candidates:
                    column = self._first_residual_hit(block, candidates, message)
                    if column >= 0:
                        return column
        return -1

    def _first_residual_hit(self, block: Block, candidates: int, message: Mapping[str, Any]) -> int:
        """The best-ranked candidate whose residual tests the reference evaluator finds wanted."""
        columns = []
        while candidates:
            columns.append(_lowest(candidates))
            candidates &= candidates - 1
        columns.sort(key=block.residual_order.__getitem__)
        for column in columns:
            if all(
                evaluate(residual.node, message) is residual.want
                for residual in self.residuals_of[column]
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
