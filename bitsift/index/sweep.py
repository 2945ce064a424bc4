"""Matching a message whose values the answer caches have not seen: coarse integer checkpoints,
then an exact look at the few candidates left.

The common path of :class:`~bitsift.index.subscriptions.SubscriptionIndex` intersects cached
per-field answers. A stream of fresh numbers (the academic W2 workload: twenty new values per
event, over fields with tens of thousands of range bounds) never repeats a bucket, so building
an answer per value and caching it is wasted work. Such a message is *swept* instead, in two
phases:

1. **Coarse.** For each range side (the lower or upper bounds of one lane, kept by
   :class:`~bitsift.index.ranges.RangeIndex` in sorted blocks with a checkpoint bitmap per block
   edge), one bisection over the blocks' largest keys finds the block the value falls in. Every
   block past it (lower bounds) or before it (upper bounds) is violated whole, so the candidates
   are ANDed with a precomputed *allowed mask*: the universe minus a checkpoint that lies on the
   safe side of the value. The masks are Python integers (bit ``c``: column ``c``), like the
   cached answers, and an AND of two costs a few hundred nanoseconds at 20,000 columns, where a
   roaring subtraction costs a microsecond or more from Python. To bound their memory, only
   every ``stride``-th checkpoint gets a mask (at most :data:`SKETCH_BYTES` of masks per side),
   so the columns of the blocks between the two masks around the value stay undecided.
2. **Exact.** What survives every field is few (a W2 event matches 0.1% of the subscriptions).
   For each side, the survivors among the undecided columns are tested against their own bound,
   with the range index's own comparison: the same Python comparison, exact across ``int``,
   ``float``, ``Decimal`` and ``Fraction`` (:func:`settle`).

From :data:`WIDE` columns on, an integer AND costs too much (it reads the whole width, where a
roaring subtraction costs in proportion to the candidates left), so a wide universe is swept in
roaring instead (:func:`narrow_bitmap`, :func:`settle_wide`): the range index's exact checkpoint
at the value's block edge per side, then the survivors in that block, one by one.

The result is exactly what subtracting each lane's violated columns gives (the tests in
``tests/test_sweep.py`` check it against the reference evaluator), without building, converting
or caching an answer for a value that will not come again.

**Lifetime.** A sketch (the masks of one lane) is built from the range index's checkpoints at
the first sweep that needs it and kept by the field (:class:`~bitsift.index.fields.FieldIndex`),
which drops it at any change to the field's tests or to the universe, as it drops its cached
answers. Building one costs about one answer per mask. Its memory is at most
:data:`SKETCH_BYTES` per side, two sides per range-tested lane. A wide sweep builds nothing: it
reads the range index's own checkpoints and blocks.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

from pyroaring import BitMap

from bitsift.index.bits import to_int
from bitsift.index.ranges import RangeIndex

__all__ = [
    "LaneSketch",
    "SideSketch",
    "SKETCH_BYTES",
    "MIN_MASKS",
    "WIDE",
    "settle",
    "narrow_bitmap",
    "settle_wide",
]

SKETCH_BYTES = 256 * 1024
"""Bytes of allowed masks a range side may keep (each is an integer as wide as the universe):
more masks leave fewer blocks undecided around a value, so fewer survivors to test one by one.
A side never needs more masks than its blocks plus one."""
MIN_MASKS = 8
"""Masks a side keeps however wide the universe."""

Pending = list[tuple["SideSketch", int, int, Any]]
"""The sides one message left undecided: ``(side, mask below, mask above, value)``."""


class SideSketch:
    """The allowed masks of one side of a range index.

    ``cut k`` below is the range side's checkpoint at block edge ``k``: for lower bounds, the
    columns of every block from ``k`` on; for upper bounds, of every block before ``k``. Mask
    ``m`` is the universe minus cut ``min(m * stride, blocks)``.
    """

    __slots__ = (
        "maxes",
        "right",
        "suffix",
        "stride",
        "masks",
        "bounds",
        "violates",
    )

    def __init__(self, side: Any, everything: int) -> None:
        cuts: list[BitMap] = side._cuts if side._cuts is not None else side._prepared_cuts()
        self.maxes: list[Any] = side._maxes
        blocks = len(self.maxes)
        self.right: bool = side.right
        self.suffix: bool = side.suffix
        self.bounds: list[Any] = side.bounds
        self.violates: Callable[[Any, Any], bool] = side.violates
        wanted = max(MIN_MASKS, SKETCH_BYTES // max(1, (everything.bit_length() + 7) // 8))
        self.stride = stride = max(1, -(-blocks // wanted))
        # Masks at every stride-th edge, and at the last edge (past every block) too.
        edges = [*range(0, blocks, stride), blocks]
        self.masks = [everything ^ to_int(cuts[edge]) for edge in edges]

    def narrow(self, candidates: int, value: Any, pending: Pending) -> int:
        """``candidates`` without the columns of every block ``value`` violates whole, but for
        those between the two masks around the value's block: those two are appended to
        ``pending`` for :func:`settle`."""
        maxes = self.maxes
        block = bisect_right(maxes, value) if self.right else bisect_left(maxes, value)
        if block == len(maxes):  # past every bound: the last mask is exact
            candidates &= self.masks[-1]
            return candidates
        stride = self.stride
        below = block // stride  # the mask at or before edge ``block``
        if self.suffix:
            # Bounds from block ``block + 1`` on lie past the value: violated. The nearest mask
            # at or after that edge (the last mask is the edge past every block).
            above = min(-(-(block + 1) // stride), len(self.masks) - 1)
            candidates &= self.masks[above]
        else:
            # Bounds in the blocks before ``block`` fall short of the value: violated.
            above = below + 1
            candidates &= self.masks[below]
        if candidates:
            pending.append((self, below, above, value))
        return candidates


class LaneSketch:
    """The sketches of every bounded side of one lane's range index, and the mask for the
    columns every number violates (empty intervals such as ``x BETWEEN 2 AND 1``)."""

    __slots__ = ("sides", "empty")

    def __init__(self, ranges: RangeIndex, everything: int) -> None:
        self.sides = [SideSketch(side, everything) for side in ranges._bounded]
        self.empty = everything ^ to_int(ranges._empty) if ranges._empty else None

    def narrow(self, candidates: int, value: Any, pending: Pending) -> int:
        """``candidates`` narrowed by a number (not NaN); see :meth:`SideSketch.narrow`."""
        if self.empty is not None:
            candidates &= self.empty
        for side in self.sides:
            if not candidates:
                break
            candidates = side.narrow(candidates, value, pending)
        return candidates


def settle(candidates: int, pending: Pending) -> int:
    """``candidates`` without the columns the coarse masks left undecided and whose bound is
    violated: per side, the survivors between the two masks around the value's block (the masks
    differ by exactly those blocks' columns), each peeled off the top and tested against its own
    bound. The survivors are few by now, and the universe narrower than :data:`WIDE` columns
    (wider ones are swept by :func:`narrow_bitmap` and :func:`settle_wide`)."""
    for side, below, above, value in pending:
        if not candidates:
            return 0
        masks = side.masks
        inside = candidates & (masks[below] ^ masks[above])
        if inside:
            bounds, violates = side.bounds, side.violates
            while inside:
                column = inside.bit_length() - 1
                bit = 1 << column
                inside ^= bit
                if violates(bounds[column], value):
                    candidates ^= bit
    return candidates


WIDE = 49152
"""Columns from which :func:`narrow_bitmap` and :func:`settle_wide` are used instead of the
masks: at 20,000 columns the
integer masks sweep a W2 event about twice as fast as roaring, at 100,000 roaring (whose
subtractions cost in proportion to the few candidates left, where an integer AND costs the whole
width) about twice as fast as the masks."""

WidePending = list[tuple[Any, int, Any]]
"""The sides one wide sweep left undecided: ``(range side, the value's block, value)``."""


def narrow_bitmap(candidates: BitMap, ranges: RangeIndex, value: Any, pending: WidePending) -> None:
    """Remove from ``candidates``, in place, the columns of every block of ``ranges`` that the
    number ``value`` (not NaN) violates whole, using the range index's exact checkpoints; the
    value's own block per side is appended to ``pending`` for :func:`settle_wide`."""
    if ranges._empty:
        candidates -= ranges._empty
    for side in ranges._bounded:
        if not candidates:
            return
        cuts = side._cuts if side._cuts is not None else side._prepared_cuts()
        maxes = side._maxes
        block = bisect_right(maxes, value) if side.right else bisect_left(maxes, value)
        if block == len(maxes):  # past every bound: the last checkpoint is exact
            candidates -= cuts[block]
            continue
        candidates -= cuts[block + 1] if side.suffix else cuts[block]
        pending.append((side, block, value))


def settle_wide(candidates: BitMap, pending: WidePending) -> None:
    """Remove from ``candidates``, in place, the columns inside each pending block whose bound
    the value violates (tested one by one: few candidates are left by now)."""
    for side, block, value in pending:
        if not candidates:
            return
        block_set = side._sets[block]
        if candidates.intersect(block_set):
            bounds, violates = side.bounds, side.violates
            for column in candidates & block_set:
                if violates(bounds[column], value):
                    candidates.discard(column)
