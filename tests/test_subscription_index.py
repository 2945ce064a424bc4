"""The subscription index never disagrees with the reference evaluator.

Random subscription sets drawn from the whole grammar, with and without topic patterns, against
random messages with missing, NULL and wrongly typed values; then a stateful test that interleaves
add, replace, remove, remove_client, match, pickling and save/load.
"""

from __future__ import annotations

import pickle
import tempfile
import threading
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from strategies import messages, selector_texts

from bitsift import (
    IndexFileError,
    MessageError,
    Subscription,
    SubscriptionIndex,
    UnknownSubscriptionError,
)

AMQP_PATTERNS = ["a.*", "a.#", "#", "*.b", "a.b", "#.b", "a", "*"]
MQTT_PATTERNS = ["a/+", "a/#", "#", "+/b", "a/b", "+"]
TOPICS = [None, "a", "a.b", "b", "a.b.c", "x.b", "a/b", "a/c", "b/b", "$sys/b", ""]


@st.composite
def subscriptions(draw: st.DrawFn, identifier: str) -> Subscription:
    syntax: Literal["amqp", "mqtt"] = draw(st.sampled_from(["amqp", "mqtt"]))
    topic = draw(st.none() | st.sampled_from(AMQP_PATTERNS if syntax == "amqp" else MQTT_PATTERNS))
    selector = draw(st.none() | selector_texts())
    client = draw(st.none() | st.sampled_from(["c1", "c2", "c3"]))
    return Subscription(
        id=identifier, selector=selector, topic=topic, topic_syntax=syntax, client=client
    )


def expected_ids(
    subs: dict[str, Subscription], message: dict[str, Any], topic: str | None
) -> set[str]:
    return {sub.id for sub in subs.values() if reference_matches(sub, message, topic)}


def reference_matches(sub: Subscription, message: dict[str, Any], topic: str | None) -> bool:
    pattern = sub.parsed_topic
    if pattern is not None:
        if topic is None or not safe_topic_match(pattern, topic):
            return False
    return sub.parsed_selector.matches(message)


def safe_topic_match(pattern: Any, topic: str) -> bool:
    from bitsift import TopicNameError

    try:
        return bool(pattern.matches(topic))
    except TopicNameError:
        return False


@st.composite
def subscription_sets(draw: st.DrawFn) -> list[Subscription]:
    count = draw(st.integers(min_value=0, max_value=12))
    return [draw(subscriptions(f"s{number}")) for number in range(count)]


@given(subscription_sets(), st.lists(st.tuples(messages(), st.sampled_from(TOPICS)), max_size=6))
def test_match_equals_the_reference(
    subs: list[Subscription], batch: list[tuple[dict[str, Any], str | None]]
) -> None:
    index = SubscriptionIndex(subs)
    by_id = {sub.id: sub for sub in subs}
    for message, topic in batch:
        assert set(index.match(message, topic)) == expected_ids(by_id, message, topic)


def test_identical_selectors_share_one_column() -> None:
    index = SubscriptionIndex(
        Subscription(id=f"s{number}", selector="region = 'eu' AND price > 5")
        for number in range(100)
    )
    assert index.column_count == 1
    assert len(index.match({"region": "eu", "price": 6})) == 100


def test_removing_everything_leaves_nothing_behind() -> None:
    index = SubscriptionIndex()
    for number in range(50):
        index.add(
            Subscription(
                id=f"s{number}",
                selector=f"a = {number} OR b BETWEEN {number} AND 99 OR a * b > {number}",
                topic="x.*",
                client="c",
            )
        )
    assert index.remove_client("c") == 50
    assert len(index) == 0 and index.column_count == 0
    assert not index._slots and not index._live and not index._with_topic
    assert not index._fields and not index._sole and not index._shared
    assert not index._table._residuals
    assert len(index._topics) == 0


def test_unknown_id_is_a_bitsift_key_error() -> None:
    with pytest.raises(UnknownSubscriptionError) as caught:
        SubscriptionIndex().remove("nope")
    assert isinstance(caught.value, KeyError)
    assert "nope" in str(caught.value)


def test_properties_must_be_a_mapping() -> None:
    with pytest.raises(MessageError, match="mapping"):
        SubscriptionIndex().match(["not", "a", "mapping"])  # type: ignore[arg-type]


def test_save_and_load_round_trip_and_damage_is_detected(tmp_path: Path) -> None:
    index = SubscriptionIndex(
        [
            Subscription(id="a", selector="x > 1", topic="t.#", client="c"),
            Subscription(id="b", selector="y LIKE 'q%'", topic="t/+", topic_syntax="mqtt"),
        ]
    )
    path = tmp_path / "index.bitsift"
    index.save(str(path))
    loaded = SubscriptionIndex.load(str(path))
    assert {sub.id for sub in loaded} == {"a", "b"}
    assert loaded.match({"x": 2}, topic="t.u") == {"a"}
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    with pytest.raises(IndexFileError, match="checksum"):
        SubscriptionIndex.load(str(path))
    path.write_bytes(b"something else\n")
    with pytest.raises(IndexFileError, match="not a bitsift index"):
        SubscriptionIndex.load(str(path))
    with pytest.raises(IndexFileError, match="cannot read"):
        SubscriptionIndex.load(str(tmp_path / "missing"))


def test_concurrent_matches_see_consistent_states() -> None:
    """While one thread swaps a subscription between two selectors, every match sees one of them."""
    index = SubscriptionIndex([Subscription(id="s", selector="a = 1")])
    stop = threading.Event()
    seen: list[AbstractSet[str]] = []  # results, read after the churn: match-time snapshots

    def churn() -> None:
        flip = False
        while not stop.is_set():
            index.add(Subscription(id="s", selector="a = 1" if flip else "a = 1 AND b = 2"))
            index.add(Subscription(id="t", selector="b = 2"))
            index.remove("t")
            flip = not flip

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        for _ in range(2000):
            seen.append(index.match({"a": 1, "b": 2}))
    finally:
        stop.set()
        worker.join()
    # s matches under both selectors; t is added and removed whole, never half-indexed.
    assert all(result in ({"s"}, {"s", "t"}) for result in seen)


class IndexMachine(RuleBasedStateMachine):
    """add / replace / remove / remove_client / match / pickle / save+load against a plain dict."""

    def __init__(self) -> None:
        super().__init__()
        self.index = SubscriptionIndex(topic_cache_size=8)
        self.model: dict[str, Subscription] = {}
        self.directory = tempfile.TemporaryDirectory()

    def teardown(self) -> None:
        self.directory.cleanup()

    @rule(data=st.data(), number=st.integers(0, 7))
    def add(self, data: st.DataObject, number: int) -> None:
        sub = data.draw(subscriptions(f"s{number}"))
        self.index.add(sub)
        self.model[sub.id] = sub

    @rule(number=st.integers(0, 7))
    def remove(self, number: int) -> None:
        identifier = f"s{number}"
        if identifier in self.model:
            self.index.remove(identifier)
            del self.model[identifier]
        else:
            with pytest.raises(UnknownSubscriptionError):
                self.index.remove(identifier)

    @rule(client=st.sampled_from(["c1", "c2", "c3"]))
    def remove_client(self, client: str) -> None:
        gone = [key for key, sub in self.model.items() if sub.client == client]
        assert self.index.remove_client(client) == len(gone)
        for key in gone:
            del self.model[key]

    @rule(message=messages(), topic=st.sampled_from(TOPICS))
    def match(self, message: dict[str, Any], topic: str | None) -> None:
        expected = expected_ids(self.model, message, topic)
        assert set(self.index.match(message, topic)) == expected
        clients = {self.model[key].client for key in expected} - {None}
        assert set(self.index.match_clients(message, topic)) == clients

    @rule()
    def pickle_round_trip(self) -> None:
        self.index = pickle.loads(pickle.dumps(self.index))

    @rule()
    def save_and_load(self) -> None:
        path = str(Path(self.directory.name) / "index.bitsift")
        self.index.save(path)
        self.index = SubscriptionIndex.load(path)

    @invariant()
    def sizes_agree(self) -> None:
        assert len(self.index) == len(self.model)
        assert all(key in self.index for key in self.model)


TestIndexMachine = IndexMachine.TestCase
TestIndexMachine.settings = settings(max_examples=60, stateful_step_count=25)


def test_answers_stay_exact_when_the_column_universe_grows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cached per-field answers are complements against a universe of column numbers; growing it
    (by at least 4,096 columns, here 4) must drop them. Values repeat so that caches are used."""
    import bitsift.index.subscriptions as module

    monkeypatch.setattr(module, "_STEP", 4)
    index = SubscriptionIndex()
    subs: dict[str, Subscription] = {}
    probes: list[dict[str, Any]] = [{"a": 1, "b": 5}, {"a": 2, "b": 5}, {"b": 1.5}, {"a": 1}]
    for number in range(14):
        sub = Subscription(
            id=f"s{number}", selector=f"a = {number % 3} OR b > {number / 4}", topic=None
        )
        index.add(sub)
        subs[sub.id] = sub
        if number % 5 == 4:
            index.remove("s0")
            index.add(subs["s0"])
        for message in probes:
            assert set(index.match(message)) == expected_ids(subs, message, None)
    assert len(index._universe) >= 16  # it grew several times


RESIDUAL_OPERANDS = ["price * qty", "qty * price", "price", "price + 0", "qty - price"]
RESIDUAL_RIGHTS = ["100", "100.0", "0.5", "qty * price", "-price"]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(RESIDUAL_OPERANDS),
            st.sampled_from(["=", "<>", ">", "<=", ">="]),
            st.sampled_from(RESIDUAL_RIGHTS),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    ),
    st.lists(messages(), max_size=4),
)
def test_residuals_sharing_operands_match_the_reference(
    comparisons: list[tuple[str, str, str, bool]], batch: list[dict[str, Any]]
) -> None:
    """Residual comparisons whose operands repeat (each operand is evaluated once per message)
    answer exactly as the evaluator, whatever the operands' values, types or absence; also with
    no indexed field at all (only residuals), where the residual check must still run."""
    subs = [
        Subscription(
            id=f"r{number}",
            selector=f"{'NOT ' if negated else ''}({left} {operator} {right})",
        )
        for number, (left, operator, right, negated) in enumerate(comparisons)
    ]
    index = SubscriptionIndex(subs)
    by_id = {sub.id: sub for sub in subs}
    fixed: list[dict[str, Any]] = [
        {"price": 20, "qty": 5},
        {"price": 20.0, "qty": 5},
        {"price": "20", "qty": 5},
        {"price": None},
        {"qty": 100},
    ]
    for message in [*batch, *fixed]:
        for extra in ({}, {"price": message.get("price"), "qty": message.get("qty")}):
            properties = {**message, **extra}
            assert set(index.match(properties)) == expected_ids(by_id, properties, None)
