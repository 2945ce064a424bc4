"""The range index's fast paths (bitsift/index/ranges.py, bitsift/index/slots.py) against plain
comparisons.

Every answer of :class:`RangeIndex` (``containing``, ``violating`` and the in-place
``discard_violating``) is checked against :meth:`Interval.contains` applied to each interval, after
any sequence of additions (one by one, or in bursts that leave bounds pending until the next
query), removals, replacements and column reuse. Tiny fixed block loads force block splits, merges
and checkpoint updates; bounds and values mix ``int``, ``float``, ``Decimal`` and ``Fraction``
around the same points, with infinities, NaNs, equal bounds and inclusive and exclusive ends, so an
off-by-one cut or a bound compared in the wrong type cannot hide. The slot's shortcuts for a field
that holds only ranges are checked against ``FieldTest.holds``.
"""

from __future__ import annotations

import math
import pickle
import random
import threading
from dataclasses import astuple
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from pyroaring import BitMap

from bitsift.index.criteria import MISSING, Equals, FieldTest, InRange, Kind, OfType, classify
from bitsift.index.ranges import Interval, RangeIndex
from bitsift.index.slots import FieldSlot

COLUMNS = 48
POINTS: list[Any] = [
    -math.inf,
    -1,
    0,
    -0.0,
    Fraction(1, 3),
    0.5,
    Fraction(1, 2),
    Decimal("0.5"),
    1,
    1.0,
    Decimal(1),
    2**53,
    float(2**53),
    2**53 + 1,
    math.inf,
]


def bounds() -> st.SearchStrategy[Any]:
    return st.none() | st.sampled_from(POINTS) | st.just(math.nan) | st.just(Decimal("NaN"))


def intervals() -> st.SearchStrategy[Interval]:
    return st.builds(Interval, bounds(), st.booleans(), bounds(), st.booleans())


def values() -> st.SearchStrategy[Any]:
    near = st.sampled_from([point for point in POINTS if isinstance(point, float)]).map(
        lambda point: math.nextafter(point, math.inf)
    )
    others = st.sampled_from([math.nan, Decimal("NaN"), Decimal("sNaN"), True, "1", None])
    return (
        st.sampled_from(POINTS)
        | near
        | st.integers(-2, 3)
        | st.fractions(-2, 3, max_denominator=4)
        | others
    )


def contained(model: dict[int, Interval], value: Any) -> set[int]:
    return {column for column, interval in model.items() if interval.contains(value)}


class RangeIndexMachine(RuleBasedStateMachine):
    """Adds, replaces, removes and queries against a dict of intervals."""

    def __init__(self) -> None:
        super().__init__()
        self.index = RangeIndex()
        self.model: dict[int, Interval] = {}

    @initialize(load=st.sampled_from([None, 1, 2, 3, 5]))
    def start(self, load: int | None) -> None:
        self.index = RangeIndex(load)

    @rule(column=st.integers(0, COLUMNS - 1), interval=intervals())
    def add(self, column: int, interval: Interval) -> None:
        self.index.add(column, *astuple(interval))
        self.model[column] = interval

    @rule(
        placed=st.lists(
            st.tuples(st.integers(0, COLUMNS - 1), intervals()), min_size=10, max_size=40
        )
    )
    def add_burst(self, placed: list[tuple[int, Interval]]) -> None:
        for column, interval in placed:
            self.index.add(column, *astuple(interval))
            self.model[column] = interval

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        column = data.draw(st.sampled_from(sorted(self.model)))
        self.index.remove(column)
        del self.model[column]

    @rule(column=st.integers(0, COLUMNS - 1))
    def discard(self, column: int) -> None:
        assert self.index.discard(column) == (column in self.model)
        self.model.pop(column, None)

    @rule()
    def prepare(self) -> None:
        self.index.prepare()

    @rule(value=values())
    def query(self, value: Any) -> None:
        inside = contained(self.model, value)
        assert set(self.index.containing(value)) == inside
        assert set(self.index.violating(value)) == set(self.model) - inside
        candidates = BitMap(range(0, COLUMNS + 8, 2))
        self.index.discard_violating(candidates, value)
        assert set(candidates) == set(range(0, COLUMNS + 8, 2)) - (set(self.model) - inside)

    @invariant()
    def members(self) -> None:
        assert len(self.index) == len(self.model)
        assert set(self.index.members) == set(self.model)

    def teardown(self) -> None:
        for column in list(self.model):
            self.index.remove(column)
        assert self.index.holds_nothing()


TestRangeIndexMachine = RangeIndexMachine.TestCase


@given(
    st.lists(st.tuples(st.integers(0, 300), intervals()), max_size=300),
    st.lists(values(), max_size=20),
)
def test_bulk_loads_sort_once_and_answer_like_the_intervals(
    placed: list[tuple[int, Interval]], queried: list[Any]
) -> None:
    """A large burst (more than the adaptive block load) is merged by one sort at the first query;
    a pickled copy is rebuilt the same way."""
    index = RangeIndex()
    model: dict[int, Interval] = {}
    for column, interval in placed:
        index.add(column, *astuple(interval))
        model[column] = interval
    copy = pickle.loads(pickle.dumps(index))
    for value in queried:
        assert set(index.containing(value)) == contained(model, value)
        assert set(copy.violating(value)) == set(model) - contained(model, value)


@given(st.lists(intervals(), min_size=200, max_size=260), st.data())
def test_few_additions_to_a_large_side_are_inserted_one_by_one(
    added: list[Interval], data: st.DataObject
) -> None:
    index = RangeIndex(load=8)
    model = dict(enumerate(added))
    for column, interval in model.items():
        index.add(column, *astuple(interval))
    index.prepare()
    for column in data.draw(st.lists(st.integers(0, 400), max_size=6)):
        interval = data.draw(intervals())
        index.add(column, *astuple(interval))
        model[column] = interval
        if data.draw(st.booleans()):
            value = data.draw(values())
            assert set(index.containing(value)) == contained(model, value)
    for value in data.draw(st.lists(values(), min_size=1, max_size=8)):
        assert set(index.containing(value)) == contained(model, value)


def test_concurrent_first_queries_merge_the_pending_bounds_once() -> None:
    index = RangeIndex()
    model = {column: Interval(column % 97, True, column % 97 + 40, False) for column in range(3000)}
    for column, interval in model.items():
        index.add(column, *astuple(interval))
    answers: list[set[int]] = []
    threads = [
        threading.Thread(target=lambda: answers.append(set(index.containing(50)))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert answers == [contained(model, 50)] * 4
    assert set(index.containing(50)) == contained(model, 50)


def test_answers_are_never_run_containers() -> None:
    """Run containers intersect slowly with the index's bitset containers."""
    index = RangeIndex(load=16)
    for column in range(5000):
        index.add(column, column, True, None, True)
    for value in (0, 2500.5, 4999, 10**6):
        for answer in (index.containing(value), index.violating(value)):
            assert answer.get_statistics()["n_run_containers"] == 0


# -- the slot's shortcuts ---------------------------------------------------------------------


def slot_tests() -> st.SearchStrategy[FieldTest]:
    # No NaN bounds here: the selector language cannot write one, and InRange.holds (unlike
    # Interval.contains) does not define them.
    bound = st.none() | st.sampled_from(POINTS)
    ranged = st.builds(InRange, bound, st.booleans(), bound, st.booleans()).map(
        lambda criterion: FieldTest("x", criterion)
    )
    keys = st.frozensets(st.sampled_from([0, 1, 0.5]).map(lambda number: ("n", number)))
    other = st.builds(
        FieldTest,
        st.just("x"),
        st.builds(Equals, keys) | st.just(OfType(Kind.NUMBER)) | st.just(MISSING),
        st.booleans(),
    )
    return ranged | other


def slot_values() -> st.SearchStrategy[Any]:
    return values() | st.just("text")


@given(
    st.lists(slot_tests(), max_size=12),
    st.booleans(),
    st.lists(slot_values(), max_size=10),
    st.data(),
)
def test_slot_answers_equal_the_tests(
    added: list[FieldTest], only_ranges: bool, queried: list[Any], data: st.DataObject
) -> None:
    if only_ranges:
        added = [test for test in added if isinstance(test.criterion, InRange) and not test.negated]
    slot = FieldSlot("x")
    tested = dict(enumerate(added))
    for column, test in tested.items():
        slot.add(column, test)
    slot.prepare()
    for column in data.draw(st.lists(st.sampled_from(sorted(tested) or [0]), unique=True)):
        if column in tested:
            slot.remove(column, tested.pop(column))
    for value in queried:
        kind, normalised = classify(value)
        holding = {column for column, test in tested.items() if test.holds(kind, normalised)}
        assert set(slot.satisfied_now(kind, normalised)) == holding
        assert set(slot.violated_now(kind, normalised)) == set(tested) - holding
        candidates = BitMap(range(0, 20))
        slot.discard_violated(candidates, kind, normalised)
        assert set(candidates) == set(range(0, 20)) - (set(tested) - holding)


@pytest.mark.parametrize("load", [1, 2, 3, 5])
def test_each_candidate_tested_alone_at_every_bound(load: int) -> None:
    """A lone candidate takes the one-by-one path: check every column against every value on and
    between the bounds, for all four kinds of end. Most bounds are inserted one by one after a
    first query, so that equal bounds share blocks with others and the cut falls inside them."""
    intervals = [
        Interval(low, low_inclusive, high, high_inclusive)
        for low in (None, 0, 1, 2)
        for high in (None, 1, 2, 3)
        for low_inclusive in (True, False)
        for high_inclusive in (True, False)
    ]
    order = random.Random(load).sample(range(len(intervals)), len(intervals))
    index = RangeIndex(load=load)
    model: dict[int, Interval] = {}
    for count, column in enumerate(order):
        model[column] = intervals[column]
        index.add(column, *astuple(intervals[column]))
        if count == 5:
            index.prepare()
    for value in (-1, 0, 0.5, 1, Fraction(3, 2), 2, Decimal("2.5"), 3, 4):
        inside = contained(model, value)
        for candidate in range(len(intervals) + 2):
            candidates = BitMap([candidate])
            index.discard_violating(candidates, value)
            assert (candidate in candidates) == (candidate not in model or candidate in inside)


def test_a_test_that_posts_nothing_keeps_the_slot_off_the_ranges_shortcut() -> None:
    """``IN ()`` (an Equals with no keys) posts nothing, yet constrains its column: removing
    another test must not make the slot look like one of plain ranges."""
    slot = FieldSlot("x")
    tests = {
        0: FieldTest("x", OfType(Kind.NUMBER)),
        1: FieldTest("x", Equals(frozenset())),
        2: FieldTest("x", InRange(None, False, None, False)),
    }
    for column, test in tests.items():
        slot.add(column, test)
    slot.remove(0, tests[0])
    assert set(slot.violated_now(Kind.NUMBER, 1.0)) == {1}
    assert set(slot.satisfied_now(Kind.NUMBER, 1.0)) == {2}
    candidates = BitMap([1, 2, 3])
    slot.discard_violated(candidates, Kind.NUMBER, 1.0)
    assert set(candidates) == {2, 3}
