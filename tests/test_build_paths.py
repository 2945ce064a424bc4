"""The build's shortcuts give what the plain code gave.

Building an index was made cheaper by changing how things are stored, not what they mean:
columns keep a lone subscriber as its id and their tests without ``(lane, test)`` pairs, field
tests keep no hash, criteria set their own fields, ``RangeIndex.add`` vets the usual bounds by
exact type, and ``Subscription`` reads its parsed selector from pydantic's private dict. Each
test here checks one of those against a plain model (a set, the dataclass semantics, the
general bound check) or against the reference evaluator.
"""

from __future__ import annotations

import pickle
from dataclasses import fields, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import messages, selector_texts

from bitsift import Subscription, SubscriptionIndex
from bitsift.index.columns import Column, ColumnTable
from bitsift.index.criteria import (
    MISSING,
    Equals,
    FieldTest,
    HasPrefix,
    InRange,
    Kind,
    OfType,
    classify,
)
from bitsift.index.ranges import Interval, InvalidRangeError, RangeIndex
from bitsift.index.slots import FieldSlot

# -- column subscribers ----------------------------------------------------------------------


@given(st.lists(st.tuples(st.booleans(), st.sampled_from("abcd")), max_size=40))
def test_column_subscribers_behave_as_a_set(operations: list[tuple[bool, str]]) -> None:
    column = Column(0, (None, ()), (), None, ())
    model: set[str] = set()
    for adding, subscription_id in operations:
        if adding:
            model.add(subscription_id)
            assert column.subscribe(subscription_id) == len(model)
        else:
            model.discard(subscription_id)
            assert column.unsubscribe(subscription_id) == len(model)
        assert set(column.subscriber_ids()) == model
        assert len(column.subscriber_ids()) == len(model)
    # The set older callers read and change is the same membership, and stays the storage.
    subscribers = column.subscribers
    assert subscribers == model
    subscribers.add("z")
    assert set(column.subscriber_ids()) == model | {"z"}


def test_a_lone_subscriber_is_kept_as_its_id() -> None:
    column = Column(0, (None, ()), (), None, ())
    assert column.subscribe("only") == 1
    assert column.subscriber_ids() == ("only",)
    assert column.subscribe("second") == 2
    assert column.unsubscribe("only") == 1
    assert column.subscriber_ids() == ("second",)  # back to the id alone
    assert column.unsubscribe("second") == 0
    assert column.subscriber_ids() == ()
    assert not column.subscribers


def test_a_shared_conjunction_is_found_again_not_renumbered() -> None:
    table = ColumnTable()
    conjunction = (FieldTest("a", Equals(frozenset([("n", 1)]))), FieldTest("b", MISSING))
    first, new = table.acquire((None, conjunction))
    assert new and first.number == 0
    again, new = table.acquire((None, tuple(conjunction)))
    assert again is first and not new
    assert first.field_tests == [(0, conjunction[0]), (0, conjunction[1])]
    assert first.lanes is None and first.tests is conjunction
    other, new = table.acquire((None, conjunction[:1]))
    assert new and other.number == 1 and len(table) == 2


# -- criteria ---------------------------------------------------------------------------------

numbers = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=False, places=2, min_value=-5, max_value=5),
)


@given(numbers, st.booleans(), numbers, st.booleans(), st.text(max_size=3), st.booleans())
def test_criteria_keep_their_dataclass_semantics(
    low: Any, low_inclusive: bool, high: Any, high_inclusive: bool, name: str, negated: bool
) -> None:
    interval = InRange(low, low_inclusive, high, high_inclusive)
    assert [f.name for f in fields(interval)] == [
        "low",
        "low_inclusive",
        "high",
        "high_inclusive",
    ]
    assert (
        (interval.low, interval.low_inclusive, interval.high, interval.high_inclusive)
        == (
            low,
            low_inclusive,
            high,
            high_inclusive,
        )
        or low != low
        or high != high
    )
    test = FieldTest(name, interval, negated)
    twin = FieldTest(name, InRange(low, low_inclusive, high, high_inclusive), negated)
    if low == low and high == high:  # NaN is unequal to itself, so its tests are too
        assert test == twin and hash(test) == hash(twin)
    assert replace(test, negated=not negated).negated is not negated
    assert FieldTest(name, interval) == FieldTest(name, interval, False)
    restored = pickle.loads(pickle.dumps(test))
    assert restored.field == name and restored.negated == negated
    with pytest.raises(AttributeError):
        test.field = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        interval.low = 0  # type: ignore[misc]
    keys = Equals(frozenset([("s", name)]))
    assert keys == Equals(frozenset([("s", name)])) and keys.holds(Kind.STRING, name)
    assert FieldTest(name, keys) != FieldTest(name, OfType(Kind.STRING))


# -- bulk slot loads ---------------------------------------------------------------------------

slot_criteria = st.sampled_from(
    [
        MISSING,
        Equals(frozenset([("s", "eu"), ("n", 1)])),
        Equals(frozenset([("s", "us")])),
        Equals(frozenset()),
        OfType(Kind.NUMBER),
        OfType(Kind.STRING),
        HasPrefix("e"),
        InRange(0, True, 2, False),
        InRange(None, False, 1, True),
        InRange(1.5, False, None, False),
        InRange(3, True, 1, True),
    ]
)
slot_values = [None, "eu", "us", "e", "x", 0, 1, 1.5, 2, 5, -1, float("nan"), True, b"raw"]


@given(st.lists(st.tuples(st.integers(0, 20), slot_criteria, st.booleans()), max_size=30))
def test_a_bulk_slot_load_equals_one_add_per_test(
    entries: list[tuple[int, Any, bool]],
) -> None:
    one_by_one, bulk = FieldSlot("f"), FieldSlot("f")
    # A column holds one test per slot (the index's rule): the last of each column is kept.
    kept = {column: FieldTest("f", criterion, negated) for column, criterion, negated in entries}
    columns, tests = list(kept), list(kept.values())
    for column, test in zip(columns, tests, strict=True):
        one_by_one.add(column, test)
    bulk.add_many(columns, tests)
    assert (one_by_one._ranges_only is None) == (bulk._ranges_only is None)
    for value in slot_values:
        kind, normalised = classify(value)
        assert bulk.violated_now(kind, normalised) == one_by_one.violated_now(kind, normalised)
        assert bulk.violated(kind, normalised) == one_by_one.violated(kind, normalised)
    for column, test in zip(columns, tests, strict=True):
        bulk.remove(column, test)
    assert not bulk


# -- range bounds -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [True, "1", b"1", [1], 1j])
def test_range_bounds_of_no_number_type_are_refused(bad: object) -> None:
    index = RangeIndex()
    with pytest.raises(InvalidRangeError):
        index.add(0, bad, True, None, True)  # type: ignore[arg-type]
    with pytest.raises(InvalidRangeError):
        index.add(0, None, True, bad, True)  # type: ignore[arg-type]
    assert index.holds_nothing()


@given(
    st.lists(
        st.tuples(
            st.integers(0, 12),
            st.one_of(st.none(), st.integers(-3, 3), st.floats(-3, 3), st.just(float("nan"))),
            st.booleans(),
            st.one_of(st.none(), st.integers(-3, 3), st.floats(-3, 3), st.just(float("nan"))),
            st.booleans(),
        ),
        max_size=25,
    ),
    st.one_of(
        st.integers(-4, 4), st.floats(-4, 4), st.sampled_from([Decimal("0.5"), Fraction(1, 3)])
    ),
)
def test_range_adds_match_plain_comparisons(
    intervals: list[tuple[int, Any, bool, Any, bool]], value: Any
) -> None:
    index = RangeIndex()
    held: dict[int, tuple[Any, bool, Any, bool]] = {}
    for column, low, low_inclusive, high, high_inclusive in intervals:
        index.add(column, low, low_inclusive, high, high_inclusive)  # replaces a held one
        held[column] = (low, low_inclusive, high, high_inclusive)
    inside = set()
    for column, bounds in held.items():
        assert index.interval(column).low is bounds[0]
        if Interval(*bounds).contains(value):  # plain comparisons, NaN bounds contain nothing
            inside.add(column)
    assert set(index.containing(value)) == inside
    assert set(index.violating(value)) == set(held) - inside
    for column in held:
        index.remove(column)
    assert index.holds_nothing()


# -- subscriptions ------------------------------------------------------------------------------


def test_parsed_selector_and_topic_are_read_fast_and_still_fail_plainly_when_absent() -> None:
    subscription = Subscription(id="s", selector="a = 1", topic="x.*")
    assert subscription.parsed_selector.text == "a = 1"
    assert subscription.parsed_topic is not None and subscription.parsed_topic.matches("x.y")
    unvalidated = Subscription.model_construct(id="raw")
    with pytest.raises(AttributeError):
        _ = unvalidated.parsed_selector
    assert unvalidated.parsed_topic is None
    copied = pickle.loads(pickle.dumps(subscription))
    assert copied.parsed_selector.text == "a = 1" and copied == subscription


@given(
    st.lists(selector_texts(max_depth=2), min_size=1, max_size=8), st.lists(messages(), max_size=5)
)
def test_an_index_built_shares_and_unshares_columns_like_the_reference(
    texts: list[str], batch: list[dict[str, Any]]
) -> None:
    # Duplicated selectors share columns (a lone id becomes a set and back on removal).
    subscriptions = [Subscription(id=f"s{n}", selector=text) for n, text in enumerate(texts)]
    subscriptions += [Subscription(id=f"d{n}", selector=text) for n, text in enumerate(texts)]
    index = SubscriptionIndex(subscriptions)
    for removed in subscriptions[::3]:
        index.remove(removed.id)
    kept = [sub for sub in subscriptions if sub.id in index]
    for message in batch:
        assert set(index.match(message)) == {
            sub.id for sub in kept if sub.parsed_selector.matches(message)
        }
    for sub in kept:
        index.remove(sub.id)
    assert index.column_count == 0 and len(index) == 0
