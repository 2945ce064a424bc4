"""The batch matcher gives, for every row, exactly what ``SubscriptionIndex.match`` gives.

Random subscription sets from the whole grammar meet batches of random messages: Python mappings
with missing, NULL, wrongly typed and nested values (the object path), and typed Arrow tables with
nulls, NaN, infinities, extreme integers, structs for dotted names and dictionary-encoded strings
(the columnar paths). A matcher is reused while the index changes between batches, so stale
classifications would show.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import pyarrow
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import LONG_MAX, LONG_MIN, messages, selector_texts

from bitsift import MessageError, Subscription, SubscriptionIndex
from bitsift.index.batch import BatchMatcher
from bitsift.samples import w3_arrow_schema, w3_messages, w3_subscriptions

AMQP_PATTERNS = ["a.*", "a.#", "#", "*.b", "a.b", "#.b", "a"]
MQTT_PATTERNS = ["a/+", "a/#", "#", "+/b", "a/b"]
TOPICS = [None, "a", "a.b", "b", "a.b.c", "x.b", "a/b", "a/c", ""]
W3_PROPERTIES = w3_arrow_schema(with_id_and_topic=False)


@st.composite
def subscription_sets(draw: st.DrawFn) -> list[Subscription]:
    result = []
    for number in range(draw(st.integers(0, 10))):
        syntax: Literal["amqp", "mqtt"] = draw(st.sampled_from(["amqp", "mqtt"]))
        patterns = AMQP_PATTERNS if syntax == "amqp" else MQTT_PATTERNS
        result.append(
            Subscription(
                id=f"s{number}",
                selector=draw(st.none() | selector_texts()),
                topic=draw(st.none() | st.sampled_from(patterns)),
                topic_syntax=syntax,
                client=draw(st.none() | st.sampled_from(["c1", "c2"])),
            )
        )
    return result


def expected(index: SubscriptionIndex, rows: list[Any], topics: list[str | None]) -> list[Any]:
    return [index.match(row, topic) for row, topic in zip(rows, topics, strict=True)]


@given(
    subscription_sets(),
    st.lists(st.tuples(messages(), st.sampled_from(TOPICS)), max_size=12),
)
def test_rows_match_like_the_index(subs: list[Subscription], batch: list[Any]) -> None:
    index = SubscriptionIndex(subs)
    rows = [message for message, _ in batch]
    topics = [topic for _, topic in batch]
    assert BatchMatcher(index).match(rows, topics) == expected(index, rows, topics)


_INTEGERS = (
    st.none() | st.sampled_from([0, 1, -1, 5, LONG_MIN, LONG_MAX, 2**53 + 1]) | st.integers()
)
_FLOATS = st.none() | st.sampled_from([0.0, -0.0, 0.5, 1.0, 5.0, math.nan, math.inf, -math.inf])
_FLOATS = _FLOATS | st.floats()
_STRINGS = (
    st.none() | st.sampled_from(["", "a", "ab", "a%", "b_", "é"]) | st.text("ab%_", max_size=3)
)


@st.composite
def arrow_tables(draw: st.DrawFn) -> pyarrow.Table:
    """A typed batch over the strategies' property names, each column of one Arrow type."""
    size = draw(st.integers(0, 12))

    def column(values: st.SearchStrategy[Any]) -> list[Any]:
        return draw(st.lists(values, min_size=size, max_size=size))

    integers = [v if v is None or LONG_MIN <= v <= LONG_MAX else None for v in column(_INTEGERS)]
    arrays: dict[str, Any] = {}
    layout = draw(st.sampled_from(["int", "float", "string", "bool", "int32", "decimal"]))
    if layout == "int":
        arrays["a"] = pyarrow.array(integers, pyarrow.int64())
    elif layout == "int32":
        arrays["a"] = pyarrow.array(
            [v if v is None or -(2**31) <= v < 2**31 else 7 for v in integers], pyarrow.int32()
        )
    elif layout == "float":
        arrays["a"] = pyarrow.array(column(_FLOATS), pyarrow.float64())
    elif layout == "string":
        arrays["a"] = pyarrow.array(column(_STRINGS), pyarrow.string())
    elif layout == "bool":
        arrays["a"] = pyarrow.array(column(st.none() | st.booleans()), pyarrow.bool_())
    else:
        from decimal import Decimal

        arrays["a"] = pyarrow.array(
            [None if v is None else Decimal(v % 1000) / 8 for v in integers],
            pyarrow.decimal128(20, 4),
        )
    arrays["b"] = pyarrow.array(column(_FLOATS), pyarrow.float64())
    arrays["price"] = pyarrow.array(integers, pyarrow.int64())
    arrays["flag"] = pyarrow.array(column(st.none() | st.booleans()), pyarrow.bool_())
    states = pyarrow.array(column(_STRINGS), pyarrow.string())
    if draw(st.booleans()):
        states = states.dictionary_encode()
    parents = column(st.booleans())
    arrays["detail"] = pyarrow.StructArray.from_arrays(
        [states],
        names=["state"],
        mask=pyarrow.array([not present for present in parents], pyarrow.bool_()),
    )
    if draw(st.booleans()):
        arrays["x-request-id"] = pyarrow.array(column(_STRINGS), pyarrow.string())
    return pyarrow.table(arrays)


@given(subscription_sets(), arrow_tables(), st.data())
def test_arrow_tables_match_like_the_index(
    subs: list[Subscription], table: pyarrow.Table, data: st.DataObject
) -> None:
    index = SubscriptionIndex(subs)
    topics = data.draw(st.lists(st.sampled_from(TOPICS), min_size=len(table), max_size=len(table)))
    rows = table.to_pylist()
    matcher = BatchMatcher(index)
    assert matcher.match(table, topics) == expected(index, rows, topics)
    # The same table as a record batch, and a second pass through the warmed caches.
    batches = table.to_batches()
    if len(batches) == 1:
        assert matcher.match(batches[0], topics) == expected(index, rows, topics)


@settings(max_examples=25)
@given(subscription_sets(), subscription_sets(), arrow_tables())
def test_a_matcher_follows_changes_to_its_index(
    first: list[Subscription], second: list[Subscription], table: pyarrow.Table
) -> None:
    index = SubscriptionIndex(first)
    matcher = BatchMatcher(index)
    rows = table.to_pylist()
    topics: list[str | None] = ["a.b"] * len(rows)
    assert matcher.match(table, topics) == expected(index, rows, topics)
    for subscription in first[::2]:
        index.remove(subscription.id)
    for subscription in second:
        index.add(subscription.model_copy(update={"id": "new-" + subscription.id}))
    assert matcher.match(table, topics) == expected(index, rows, topics)
    assert matcher.match(rows, topics) == expected(index, rows, topics)


def test_w3_batches_match_like_the_index() -> None:
    """Realistic data: many subscriptions, several lanes per field, residuals and topics."""
    index = SubscriptionIndex(w3_subscriptions(300, seed=11))
    pairs = list(w3_messages(3_000, seed=12))
    rows = [properties for _, properties in pairs]
    topics: list[str | None] = [topic for topic, _ in pairs]
    table = pyarrow.Table.from_pylist(rows, schema=W3_PROPERTIES)
    want = expected(index, rows, topics)
    matcher = BatchMatcher(index)
    assert matcher.match(table, topics) == want
    assert matcher.match(rows, topics) == want
    assert sum(map(len, want)) > 0


def test_pairs_are_sorted_by_row_and_unique() -> None:
    index = SubscriptionIndex(
        [
            Subscription(id="either", selector="a = 1 OR b = 2"),
            Subscription(id="a", selector="a = 1"),
        ]
    )
    pairs = BatchMatcher(index).match_pairs([{"a": 1, "b": 2}, {}, {"b": 2}])
    found = [
        (row, pairs.ids[number])
        for row, number in zip(pairs.rows.tolist(), pairs.subscriptions.tolist(), strict=True)
    ]
    assert sorted(found) == [(0, "a"), (0, "either"), (2, "either")]
    assert list(pairs.rows) == sorted(pairs.rows)


def test_bad_batches_are_bitsift_errors() -> None:
    matcher = BatchMatcher(SubscriptionIndex([Subscription(id="s", selector="a = 1")]))
    with pytest.raises(MessageError, match="row 1"):
        matcher.match([{"a": 1}, 5])
    with pytest.raises(MessageError, match="topics for a batch"):
        matcher.match([{"a": 1}], ["x", "y"])
    with pytest.raises(MessageError, match="topic must be a str"):
        matcher.match([{"a": 1}], [5])  # type: ignore[list-item]
    duplicated = pyarrow.table([pyarrow.array([1]), pyarrow.array([2])], names=["a", "a"])
    with pytest.raises(MessageError, match="more than one column named a"):
        matcher.match(duplicated)
    with pytest.raises(MessageError, match="not int"):
        matcher.match(3)


def test_large_indexes_match_in_bounded_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a tiny class-memory budget, a batch is matched in slices of 256 rows, and the
    per-field memory is dropped between them; the answers must not change."""
    import bitsift.index.batch as batch_module

    monkeypatch.setattr(batch_module, "_CLASS_BYTES", 1)
    index = SubscriptionIndex(w3_subscriptions(100, seed=13))
    pairs = list(w3_messages(700, seed=14))
    rows = [properties for _, properties in pairs]
    topics: list[str | None] = [topic for topic, _ in pairs]
    want = expected(index, rows, topics)
    matcher = BatchMatcher(index)
    assert matcher.match(rows, topics) == want
    assert matcher.match(pyarrow.Table.from_pylist(rows, schema=W3_PROPERTIES), topics) == want


def test_huge_values_are_matched_but_not_remembered() -> None:
    index = SubscriptionIndex(
        [
            Subscription(id="prefix", selector="a LIKE 'xy%'"),
            Subscription(id="topic", topic="#.end"),
        ]
    )
    matcher = BatchMatcher(index)
    huge = "xy" + "z" * 5_000
    topic = "w." * 2_000 + "end"
    rows = [{"a": huge}, {"a": huge[1:]}]
    assert matcher.match(rows, [topic, None]) == expected(index, rows, [topic, None])
    remembered = [key for state in matcher._fields.values() for key in state.seen]
    remembered += list(matcher._topic_classes.seen)
    assert all(not isinstance(key, str) or len(key) <= 1024 for key in remembered)
