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

from bisect import bisect_left
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
from bitsift.selectors.evaluate import evaluate
from bitsift.selectors.values import lookup

__all__ = ["Block", "build_blocks", "FIRST_BLOCK", "BLOCK"]

FIRST_BLOCK = 64
"""Columns in the first block: one machine word."""
BLOCK = 1024
"""Columns in each later block. Interval tables cost about ``BLOCK**2 / 4`` bytes per field with
intervals in a full block (256 KiB), which bounds memory at about 256 bytes per column and field."""
_CACHE_LIMIT = 1024

_MISSING_KEY = ("m",)
_NAN_KEY = ("nan",)
_OTHER_KEY = ("o",)


class _Ranges:
    """Which intervals contain a number: two bisections and a prefix and a suffix mask."""

    __slots__ = ("low_keys", "low_masks", "high_keys", "high_masks")

    def __init__(self, entries: list[tuple[int, InRange]]) -> None:
        lows: list[tuple[object, int, int]] = []
        highs: list[tuple[object, int, int]] = []
        open_low = open_high = 0
        for bit, interval in entries:
            if interval.low is None:
                open_low |= bit
            else:
                # A low bound L is met by v when (L, 0 if inclusive else 1) < (v, 1).
                lows.append((exact_number(interval.low), 0 if interval.low_inclusive else 1, bit))
            if interval.high is None:
                open_high |= bit
            else:
                # A high bound H is met by v when (v, 1) <= (H, 1 if inclusive else 0).
                highs.append(
                    (exact_number(interval.high), 1 if interval.high_inclusive else 0, bit)
                )
        lows.sort(key=lambda entry: (entry[0], entry[1]))
        highs.sort(key=lambda entry: (entry[0], entry[1]))
        self.low_keys = [(bound, flag) for bound, flag, _ in lows]
        self.low_masks = [open_low]
        for _, _, bit in lows:
            self.low_masks.append(self.low_masks[-1] | bit)
        self.high_keys = [(bound, flag) for bound, flag, _ in highs]
        suffix = [open_high]
        for _, _, bit in reversed(highs):
            suffix.append(suffix[-1] | bit)
        self.high_masks = suffix[::-1]

    def containing(self, number: object) -> int:
        probe = (number, 1)
        return (
            self.low_masks[bisect_left(self.low_keys, probe)]
            & self.high_masks[bisect_left(self.high_keys, probe)]
        )


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

    __slots__ = ("field", "lanes", "complete", "has_ranges", "cache")

    def __init__(self, field: str, lanes: list[_Lane], has_ranges: bool) -> None:
        self.field = field
        self.lanes = lanes
        self.complete = 0
        """Columns whose last test is in this stage and that have no residual."""
        self.has_ranges = has_ranges
        self.cache: dict[object, int] = {}

    def satisfied(self, message: Mapping[str, Any]) -> int:
        kind, value = classify(lookup(message, self.field))
        if kind is Kind.STRING or kind is Kind.BOOLEAN:
            cache_key: object = (kind, value)
        elif kind is Kind.NUMBER:
            if value != value:
                cache_key = _NAN_KEY
            elif self.has_ranges:
                return self._compute(kind, value)
            else:
                cache_key = key_of(kind, value)
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


class Block:
    """A run of columns in ranking order, with the masks and stages that decide them."""

    __slots__ = ("start", "size", "everything", "without_topic", "stages", "residuals", "ready")

    def __init__(self, start: int, size: int) -> None:
        self.start = start
        self.size = size
        self.everything = (1 << size) - 1
        self.without_topic = 0
        self.stages: list[Stage] = []
        self.residuals: dict[int, tuple[Residual, ...]] = {}
        self.ready = 0
        """Columns that match as soon as their topic does: no field test, no residual."""

    def first_hit(self, message: Mapping[str, Any], candidates: int) -> int:
        """The block position of a matching column among ``candidates``, or -1."""
        if candidates & self.ready:
            return _lowest(candidates & self.ready)
        for stage in self.stages:
            candidates &= stage.satisfied(message)
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
    columns: Sequence[Column], first_block: int = FIRST_BLOCK, block: int = BLOCK
) -> list[Block]:
    """Blocks over ``columns`` in the order given (most likely first)."""
    blocks: list[Block] = []
    start = 0
    while start < len(columns):
        size = min(first_block if not blocks else block, len(columns) - start)
        blocks.append(_build_block(columns, start, size, first=not blocks))
        start += size
    return blocks


def _build_block(columns: Sequence[Column], start: int, size: int, first: bool) -> Block:
    result = Block(start, size)
    lanes: dict[str, list[_Lane]] = {}
    constrained: dict[str, list[int]] = {}  # per field, per lane: columns with a test there
    testing: dict[str, int] = {}  # per field: columns with any test on it
    first_use: dict[str, int] = {}
    fields_of: list[set[str]] = []
    for position in range(size):
        topic, conjunction = columns[start + position]
        bit = 1 << position
        if topic is None:
            result.without_topic |= bit
        residuals = tuple(atom for atom in conjunction if isinstance(atom, Residual))
        if residuals:
            result.residuals[position] = residuals
        used: dict[str, int] = {}
        for atom in conjunction:
            if isinstance(atom, Residual):
                continue
            lane = used.get(atom.field, 0)
            used[atom.field] = lane + 1
            field_lanes = lanes.setdefault(atom.field, [])
            masks = constrained.setdefault(atom.field, [])
            while len(field_lanes) <= lane:
                field_lanes.append(_Lane())
                masks.append(0)
            field_lanes[lane].add(bit, atom)
            masks[lane] |= bit
            testing[atom.field] = testing.get(atom.field, 0) | bit
            first_use.setdefault(atom.field, position)
        fields_of.append(set(used))
        if not used and not residuals:
            result.ready |= bit
    if first:
        # The ranking order: the most likely column's fields first, so it completes soonest.
        order = sorted(testing, key=lambda field: (first_use[field], field))
    else:
        # The fields that rule out the most columns first.
        order = sorted(testing, key=lambda field: (-testing[field].bit_count(), field))
    stage_of = {field: index for index, field in enumerate(order)}
    for field in order:
        field_lanes = lanes[field]
        has_ranges = False
        for lane, mask in zip(field_lanes, constrained[field], strict=True):
            lane.free = result.everything & ~mask
            lane.plain.freeze()
            lane.vetoes.freeze()
            has_ranges = has_ranges or lane.plain.ranges is not None
            has_ranges = has_ranges or lane.vetoes.ranges is not None
        result.stages.append(Stage(field, field_lanes, has_ranges))
    for position, fields in enumerate(fields_of):
        if fields and position not in result.residuals:
            last = max(stage_of[field] for field in fields)
            result.stages[last].complete |= 1 << position
    return result
