"""The sweep (bitsift/index/sweep.py) against its references.

* one lane's coarse masks plus ``settle``, and the wide universe's ``narrow_bitmap`` plus
  ``settle_wide``, equal the candidates minus the columns whose interval the value violates (each
  interval's own ``contains``), for every stride and every kind of bound;
* a whole index whose messages miss the caches (so they are swept) equals the reference
  evaluator, with blocks and strides small enough that every branch runs, across adds and
  removes between matches (the masks must be dropped with any change);
* ``FieldIndex.remember`` caches a stream's repeating keys and not a stream of fresh ones.
"""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bitsift.index.ranges as ranges_module
import bitsift.index.subscriptions as subscriptions_module
import bitsift.index.sweep as sweep
from bitsift import Subscription, SubscriptionIndex
from bitsift.index.bits import bitmap_of, from_positions, positions
from bitsift.index.ranges import RangeIndex
from bitsift.index.sweep import (
    LaneSketch,
    Pending,
    WidePending,
    narrow_bitmap,
    settle,
    settle_wide,
)

numbers = st.one_of(
    st.integers(-20, 20),
    st.floats(-20, 20, allow_nan=False),
    st.integers(-20, 20).map(Decimal),
    st.fractions(-20, 20, max_denominator=4),
)
bounds = st.one_of(st.none(), numbers)
intervals = st.tuples(bounds, st.booleans(), bounds, st.booleans())


@pytest.fixture(params=["masks", "wide"])
def small_blocks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of a few bounds and few masks per side, so strides, groups and block edges all
    come up with the handful of intervals a test can afford; once with the integer masks and
    once with the wide universe's roaring sweep (any universe counts as wide)."""
    monkeypatch.setattr(ranges_module, "_MIN_LOAD", 2)
    monkeypatch.setattr(sweep, "SKETCH_BYTES", 1)
    monkeypatch.setattr(sweep, "MIN_MASKS", 3)
    if request.param == "wide":
        monkeypatch.setattr(subscriptions_module, "WIDE", 0)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(intervals, min_size=1, max_size=40),
    st.lists(numbers, min_size=1, max_size=8),
    st.integers(1, 8),
    st.integers(2, 6),
    st.data(),
)
def test_lane_masks_and_settle_equal_the_intervals(
    given_intervals: list[tuple[Any, bool, Any, bool]],
    values: list[Any],
    load: int,
    masks: int,
    data: st.DataObject,
) -> None:
    index = RangeIndex(load=load)
    for column, (low, low_in, high, high_in) in enumerate(given_intervals):
        index.add(column, low, low_in, high, high_in)
    width = len(given_intervals) + 3  # columns past the lane's own: left alone
    everything = (1 << width) - 1
    saved = sweep.SKETCH_BYTES, sweep.MIN_MASKS
    sweep.SKETCH_BYTES, sweep.MIN_MASKS = 1, masks
    try:
        sketch = LaneSketch(index, everything)
        for value in values:
            start = from_positions(
                data.draw(st.sets(st.integers(0, width - 1)), label="candidates")
            )
            pending: Pending = []
            found = settle(sketch.narrow(start, value, pending), pending)
            want = {
                column
                for column in positions(start)
                if column >= len(given_intervals) or index.interval(column).contains(value)
            }
            assert set(positions(found)) == want, value
            # The wide universe's way: exact checkpoints on a roaring bitmap, then the block.
            survivors = bitmap_of(start)
            wide: WidePending = []
            narrow_bitmap(survivors, index, value, wide)
            settle_wide(survivors, wide)
            assert set(survivors) == want, value
    finally:
        sweep.SKETCH_BYTES, sweep.MIN_MASKS = saved


def test_masks_are_budgeted_by_bytes() -> None:
    index = RangeIndex(load=2)
    for column in range(400):
        index.add(column, column, True, None, True)
    everything = (1 << 400) - 1
    roomy = LaneSketch(index, everything)
    assert roomy.sides[0].stride == 1  # 50 bytes a mask: every block edge fits the budget
    saved = sweep.SKETCH_BYTES
    sweep.SKETCH_BYTES = 50 * 20  # twenty masks' worth
    try:
        tight = LaneSketch(index, everything)
    finally:
        sweep.SKETCH_BYTES = saved
    assert tight.sides[0].stride > 1 and len(tight.sides[0].masks) <= 21


def _index_of(shapes: list[list[tuple[int, str]]]) -> list[Subscription]:
    return [
        Subscription(id=f"s{n}", selector=" AND ".join(terms for _, terms in shape))
        for n, shape in enumerate(shapes)
        if shape
    ]


term = st.one_of(
    st.tuples(st.integers(0, 5), st.integers(-5, 25), st.integers(0, 15)).map(
        lambda t: (t[0], f"a{t[0]} BETWEEN {t[1]} AND {t[1] + t[2]}")
    ),
    st.tuples(st.integers(0, 5), st.sampled_from(["<", "<=", ">", ">="]), numbers).map(
        lambda t: (t[0], f"a{t[0]} {t[1]} {t[2]}")
    ),
    st.tuples(st.integers(0, 5), st.integers(-5, 25)).map(
        lambda t: (t[0], f"a{t[0]} NOT BETWEEN {t[1]} AND {t[1] + 4}")
    ),
    st.tuples(st.integers(0, 5), st.integers(-2, 2)).map(
        lambda t: (t[0], f"(a{t[0]} = {t[1]} OR a{t[0]} IS NULL)")
    ),
    st.integers(0, 5).map(lambda f: (f, f"a{f} IS NOT NULL")),
)
values = st.one_of(
    st.integers(-8, 30),
    st.floats(-8, 30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.text("ab", max_size=2),
    st.booleans(),
    st.integers(-8, 30).map(Decimal),
    st.fractions(-8, 30, max_denominator=3),
)
message_batches = st.lists(
    st.dictionaries(st.sampled_from([f"a{n}" for n in range(6)]), values, min_size=3, max_size=6),
    min_size=1,
    max_size=6,
)


@pytest.mark.usefixtures("small_blocks")
@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(term, min_size=1, max_size=5), min_size=1, max_size=30), message_batches)
def test_swept_messages_equal_the_evaluator(
    shapes: list[list[tuple[int, str]]], batch: list[dict[str, Any]]
) -> None:
    subscriptions = _index_of(shapes)
    index = SubscriptionIndex(subscriptions)
    for message in batch:
        for field in index._fields.values():
            field.forget()  # every value new to the caches: three or more fields miss
        found = index.match(message)
        want = {sub.id for sub in subscriptions if sub.parsed_selector.matches(message)}
        assert set(found) == want, message


@pytest.mark.usefixtures("small_blocks")
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(term, min_size=1, max_size=5), min_size=2, max_size=20),
    st.lists(st.lists(term, min_size=1, max_size=5), min_size=1, max_size=8),
    message_batches,
)
def test_changes_between_sweeps_drop_the_masks(
    shapes: list[list[tuple[int, str]]],
    more: list[list[tuple[int, str]]],
    batch: list[dict[str, Any]],
) -> None:
    subscriptions = _index_of(shapes)
    index = SubscriptionIndex(subscriptions)
    live = {sub.id: sub for sub in subscriptions}
    extra = [
        Subscription(id=f"x{n}", selector=" AND ".join(t for _, t in shape))
        for n, shape in enumerate(more)
    ]
    for step, message in enumerate(batch * 2):
        for field in index._fields.values():
            field.forget()
        found = index.match(message)
        want = {sid for sid, sub in live.items() if sub.parsed_selector.matches(message)}
        assert set(found) == want, message
        # Change the index after each sweep: add one, remove one (the masks now stale).
        if step < len(extra):
            index.add(extra[step])
            live[extra[step].id] = extra[step]
        elif live:
            gone = sorted(live)[0]
            index.remove(gone)
            del live[gone]


def test_remember_caches_repeating_keys_but_not_fresh_numbers() -> None:
    generator = random.Random(7)
    lows = [[generator.randrange(1_000_000) for _ in range(4)] for _ in range(1000)]
    subscriptions = [
        Subscription(
            id=f"s{n}",
            selector=" AND ".join(
                f"a{f} BETWEEN {low} AND {low + 500_000}" for f, low in enumerate(lows[n])
            )
            + f" AND sym = 'k{n % 5}'",
        )
        for n in range(len(lows))
    ]
    index = SubscriptionIndex(subscriptions)
    # 8,000 buckets per field and 200 events: a bucket rarely comes back.
    stream = [
        {f"a{f}": generator.randrange(1_000_000) for f in range(4)} | {"sym": f"k{n % 5}"}
        for n in range(200)
    ]
    for message in stream[:20]:
        want = {sub.id for sub in subscriptions if sub.parsed_selector.matches(message)}
        assert set(index.match(message)) == want
    for message in stream[20:]:
        index.match(message)
    fields = index._fields
    # The symbols repeat: cached from their second sighting. The numbers: at most the odd early
    # second sighting, while a field's history is too short to tell.
    assert fields["sym"].cached == 5
    assert all(fields[f"a{f}"].cached <= 2 for f in range(4))
    # The same events again: now every bucket repeats, and the caches warm up.
    for message in stream * 2:
        index.match(message)
    assert all(fields[f"a{f}"].cached >= 100 for f in range(4))


def test_bitmap_of_any_width() -> None:
    for columns in ([], [0], [61_439, 61_440], [3, 70_000, 200_000], list(range(0, 300_000, 997))):
        bits = from_positions(columns)
        assert list(bitmap_of(bits)) == columns
