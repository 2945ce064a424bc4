"""The receiver filter against the reference: it accepts exactly when some subscription matches.

Every claim the filter's speed rests on is checked here with hypothesis against the reference
evaluator (:meth:`bitsift.Subscription.matches`): the blocks and early exits, the re-ranking from
hit rates (forced to happen after every message), and subsumption (on and off must agree, and
every "covers" it claims must hold for every message).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import message_values, messages, selectors
from topic_data import any_topics, reference_matches, topic_patterns

from bitsift.errors import MessageError
from bitsift.filters import Message, ReceiverFilter
from bitsift.filters.receiver_filter import reference_accepts
from bitsift.filters.subsumption import (
    column_covers,
    drop_covered,
    field_test_implies,
    topic_covers,
)
from bitsift.index.criteria import FieldTest, classify
from bitsift.index.normalize import to_dnf
from bitsift.models import Subscription
from bitsift.selectors.parser import parse
from bitsift.selectors.topics import TopicPattern
from bitsift.selectors.values import lookup

# -- strategies ----------------------------------------------------------------------------------


@st.composite
def random_subscriptions(draw: st.DrawFn, max_size: int = 8) -> list[Subscription]:
    """Subscriptions from the whole selector grammar, with and without topic patterns."""
    count = draw(st.integers(0, max_size))
    result = []
    for number in range(count):
        selector = draw(st.one_of(st.none(), selectors(max_depth=2).map(str)))
        pattern = draw(st.one_of(st.none(), topic_patterns()))
        result.append(
            Subscription(
                id=f"s{number}",
                selector=selector,
                topic=None if pattern is None else pattern.pattern,
                topic_syntax="amqp" if pattern is None else pattern.syntax,
            )
        )
    return result


# Selectors built from a few related conditions, so that one often covers another.
_RELATED = [
    "price > 10",
    "price >= 10",
    "price > 20",
    "price < 5",
    "price <= 5.0",
    "price BETWEEN 5 AND 20",
    "price BETWEEN 10 AND 10",
    "price NOT BETWEEN 5 AND 20",
    "price IN (5, 10, 20.0)",
    "price = 10",
    "price <> 10",
    "NOT (price < 3)",
    "price IS NULL",
    "price IS NOT NULL",
    "price / 0.0 > 1",
    "price / -0.0 > 1",
    "region = 'eu'",
    "region IN ('eu', 'us')",
    "region LIKE 'e%'",
    "region LIKE 'eu%'",
    "region NOT LIKE 'e%'",
    "region <> 'eu'",
    "region NOT IN ('eu')",
    "region IS NOT NULL",
    "b",
    "NOT b",
    "b = FALSE",
]
_RELATED_TOPICS = [None, "forex.*", "forex.eur", "forex.#", "#", "*.eur", "forex.*.#", "bonds"]


@st.composite
def related_subscriptions(draw: st.DrawFn) -> list[Subscription]:
    count = draw(st.integers(1, 8))
    result = []
    for number in range(count):
        terms = draw(st.lists(st.sampled_from(_RELATED), min_size=0, max_size=3))
        joiner = draw(st.sampled_from([" AND ", " OR "]))
        selector = joiner.join(f"({term})" for term in terms) or None
        topic = draw(st.sampled_from(_RELATED_TOPICS))
        result.append(Subscription(id=f"r{number}", selector=selector, topic=topic))
    return result


def related_messages() -> st.SearchStrategy[dict[str, Any]]:
    numbers = st.sampled_from([3, 4.5, 5, 5.0, 10, 10.0, 15, 20, 21, float("nan"), -0.0])
    values = st.one_of(numbers, message_values(), st.sampled_from(["eu", "e", "us", "euro", ""]))
    return st.fixed_dictionaries(
        {}, optional={"price": values, "region": values, "b": st.one_of(st.booleans(), values)}
    )


related_topics = st.one_of(
    st.none(), st.sampled_from(["forex.eur", "forex", "forex.usd", "forex.eur.x", "bonds", ""])
)


def check_against_reference(
    subscriptions: Sequence[Subscription],
    stream: Sequence[tuple[dict[str, Any], str | None]],
    **options: Any,
) -> None:
    receiver = ReceiverFilter(subscriptions, **options)
    for properties, topic in stream:
        expected = reference_accepts(subscriptions, properties, topic)
        assert expected == any(s.matches(properties, topic) for s in subscriptions)
        assert receiver.accepts(properties, topic) == expected, (properties, topic, receiver)
    counters = receiver.counters
    assert counters.seen == len(stream) == counters.accepted + counters.dropped


# -- the filter against the reference ------------------------------------------------------------


@given(
    random_subscriptions(),
    st.lists(st.tuples(messages(), st.one_of(st.none(), any_topics())), max_size=12),
)
def test_accepts_equals_reference(
    subscriptions: list[Subscription], stream: list[tuple[dict[str, Any], str | None]]
) -> None:
    check_against_reference(subscriptions, stream)


@given(
    random_subscriptions(max_size=12),
    st.lists(st.tuples(messages(), st.one_of(st.none(), any_topics())), max_size=12),
)
def test_tiny_blocks_and_reranking_after_every_message(
    subscriptions: list[Subscription], stream: list[tuple[dict[str, Any], str | None]]
) -> None:
    # Blocks of one and two columns, re-ranked after each message: every early exit and every
    # order the ranking can produce is exercised.
    check_against_reference(subscriptions, stream, first_block=1, block=2, refine_after=1)


@given(
    related_subscriptions(),
    st.lists(st.tuples(related_messages(), related_topics), max_size=15),
    st.booleans(),
)
def test_related_subscriptions_with_and_without_subsumption(
    subscriptions: list[Subscription],
    stream: list[tuple[dict[str, Any], str | None]],
    subsume: bool,
) -> None:
    check_against_reference(subscriptions, stream, subsume=subsume, first_block=2, block=3)


# -- subsumption: every claim is true ------------------------------------------------------------


def _columns(subscription: Subscription) -> list[tuple[TopicPattern | None, Any]]:
    return [
        (subscription.parsed_topic, conjunction)
        for conjunction in to_dnf(subscription.parsed_selector.ast)
    ]


def _column_holds(column: tuple[TopicPattern | None, Any], properties: Any, topic: Any) -> bool:
    pattern, conjunction = column
    if pattern is not None and (topic is None or not reference_matches(pattern, topic)):
        return False
    from bitsift.selectors.evaluate import evaluate

    for atom in conjunction:
        if isinstance(atom, FieldTest):
            if not atom.holds(*classify(lookup(properties, atom.field))):
                return False
        elif evaluate(atom.node, properties) is not atom.want:
            return False
    return True


@settings(max_examples=300)
@given(
    st.sampled_from(_RELATED),
    st.sampled_from(_RELATED),
    st.sampled_from(_RELATED_TOPICS),
    st.sampled_from(_RELATED_TOPICS),
    st.lists(st.tuples(related_messages(), related_topics), min_size=1, max_size=20),
)
def test_every_claimed_cover_holds(
    general_text: str,
    specific_text: str,
    general_topic: str | None,
    specific_topic: str | None,
    stream: list[tuple[dict[str, Any], str | None]],
) -> None:
    general = Subscription(id="g", selector=general_text, topic=general_topic)
    specific = Subscription(id="s", selector=specific_text, topic=specific_topic)
    for wide in _columns(general):
        for narrow in _columns(specific):
            if column_covers(wide, narrow):
                for properties, topic in stream:
                    if _column_holds(narrow, properties, topic):
                        assert _column_holds(wide, properties, topic), (wide, narrow, properties)
                        # ... and the subscriptions themselves agree, by the reference.
                        assert general.matches(properties, topic)


@given(selectors(max_depth=1), selectors(max_depth=1), st.lists(messages(), max_size=10))
def test_claimed_covers_between_random_selectors_hold(
    first: Any, second: Any, stream: list[dict[str, Any]]
) -> None:
    for wide in to_dnf(first):
        for narrow in to_dnf(second):
            if column_covers((None, wide), (None, narrow)):
                for properties in stream:
                    if _column_holds((None, narrow), properties, None):
                        assert _column_holds((None, wide), properties, None)


@given(st.data())
def test_field_test_implication_is_set_inclusion(data: st.DataObject) -> None:
    conjunctions = [c for c in to_dnf(data.draw(selectors(max_depth=1))) if c]
    tests = [
        atom for conjunction in conjunctions for atom in conjunction if isinstance(atom, FieldTest)
    ]
    if len(tests) < 1:
        return
    narrow = data.draw(st.sampled_from(tests))
    wide = data.draw(st.sampled_from(tests))
    if field_test_implies(narrow, wide):
        for value in data.draw(st.lists(message_values(), max_size=10)):
            kind, normalised = classify(value)
            if narrow.holds(kind, normalised):
                assert wide.holds(kind, normalised)


@given(topic_patterns(), topic_patterns(), st.lists(any_topics(), max_size=20))
def test_topic_covers_is_sound(
    general: TopicPattern, specific: TopicPattern, topics: list[str]
) -> None:
    if topic_covers(general, specific):
        for topic in topics:
            if reference_matches(specific, topic):
                assert reference_matches(general, topic)


@pytest.mark.parametrize(
    ("general", "specific", "covers"),
    [
        ("forex.*", "forex.eur", True),
        ("forex.#", "forex.eur.x", True),
        ("forex.#", "forex", True),
        ("forex.*", "forex", False),
        ("forex.*", "forex.#", False),
        ("#", "a.#.b", True),
        ("*.#", "a.*", True),
        ("a.*.c", "a.#", False),
    ],
)
def test_topic_cover_examples(general: str, specific: str, covers: bool) -> None:
    assert topic_covers(TopicPattern(general), TopicPattern(specific)) is covers


def test_mqtt_wildcard_never_covers_a_dollar_topic() -> None:
    assert not topic_covers(TopicPattern("#", "mqtt"), TopicPattern("$SYS/x", "mqtt"))
    assert topic_covers(TopicPattern("#", "mqtt"), TopicPattern("sys/x", "mqtt"))
    assert not topic_covers(TopicPattern("#", "mqtt"), TopicPattern("#", "amqp"))


@pytest.mark.parametrize(
    ("general", "specific", "covers"),
    [
        ("price > 10", "price > 20", True),
        ("price > 20", "price > 10", False),
        ("price >= 10", "price > 10", True),
        ("price > 10", "price >= 10", False),
        ("region = 'eu'", "region = 'eu' AND price < 5", True),
        ("region LIKE 'e%'", "region IN ('eu', 'es')", True),
        ("region LIKE 'e%'", "region IN ('eu', 'us')", False),
        ("price IS NOT NULL", "price < 5", True),
        ("price <> 10", "price > 10", True),  # '<>' TRUE needs a number unequal to 10
        ("NOT (price < 3)", "price >= 3", True),
        ("price >= 3", "NOT (price < 3)", False),  # a string price: NOT (FALSE) is TRUE
        ("price / 0.0 > 1", "price / -0.0 > 1", False),  # equal trees, different answers
        ("price < 5", "price IS NULL", False),
    ],
)
def test_selector_cover_examples(general: str, specific: str, covers: bool) -> None:
    [wide] = to_dnf(parse(general).ast)
    narrow_columns = to_dnf(parse(specific).ast)
    assert all(column_covers((None, wide), (None, narrow)) for narrow in narrow_columns) is covers


def test_drop_covered_keeps_one_of_equivalent_columns() -> None:
    columns = [
        (None, conjunction)
        for text in ("price >= 3", "3 <= price", "price >= 3.0 AND NOT (price < 3)")
        for conjunction in to_dnf(parse(text).ast)
    ]
    assert len(drop_covered(columns)) == 1


# -- shape of the API ----------------------------------------------------------------------------


def test_filter_accepts_messages_pairs_and_mappings_and_counts_junk() -> None:
    receiver = ReceiverFilter([Subscription(id="fx", topic="forex.*", selector="price > 1")])
    items: list[Any] = [
        Message({"price": 2}, "forex.eur", b"body"),
        ({"price": 2}, "forex.eur"),
        ({"price": 0}, "forex.eur"),
        {"price": 2},
        42,
        ({"price": 2}, 7),
    ]
    assert list(receiver.filter(items)) == items[:2]
    assert (receiver.seen, receiver.accepted, receiver.dropped, receiver.malformed) == (6, 2, 2, 2)
    assert receiver.malformed_reasons == {"wrong shape": 2}


def test_bad_arguments_are_bitsift_errors() -> None:
    receiver = ReceiverFilter([])
    with pytest.raises(MessageError):
        receiver.accepts(["not", "a", "mapping"])  # type: ignore[arg-type]
    with pytest.raises(MessageError):
        receiver.accepts({}, topic=b"bytes")  # type: ignore[arg-type]
    assert receiver.accepts({}) is False


def test_topic_only_and_everything() -> None:
    topic_only = ReceiverFilter(
        [Subscription(id="a", topic="a.*"), Subscription(id="b", topic="b")]
    )
    assert topic_only.ranking() == []  # answered by the topic table alone
    assert topic_only.accepts({}, "a.x") and topic_only.accepts({}, "b")
    assert not topic_only.accepts({}, "c") and not topic_only.accepts({})
    everything = ReceiverFilter([Subscription(id="a", selector="x > 1"), Subscription(id="all")])
    assert everything.accepts_everything and everything.accepts({})
    assert everything.topic_prefixes() is None


def test_ranking_follows_observed_hits_without_changing_answers() -> None:
    subscriptions = [
        Subscription(id="rare", selector="region = 'eu'"),
        Subscription(id="common", selector="region = 'us' AND price > 1"),
    ]
    receiver = ReceiverFilter(subscriptions, refine_after=8)
    assert str(receiver.ranking()[0][1][0]).startswith("region in {'eu'}")
    for _ in range(64):
        assert receiver.accepts({"region": "us", "price": 5})
    assert str(receiver.ranking()[0][1][0]).startswith("price")
    assert receiver.accepts({"region": "eu"}) and not receiver.accepts({"region": "fr"})


def test_signed_zero_literals_are_not_merged() -> None:
    # to_dnf merges these two (their trees compare equal, 0.0 == -0.0); the filter must not.
    subscriptions = [Subscription(id="z", selector="price / 0.0 > 1 OR price / -0.0 > 1")]
    receiver = ReceiverFilter(subscriptions)
    for price in (-5.0, 5.0, 0.0):
        expected = subscriptions[0].matches({"price": price})
        assert receiver.accepts({"price": price}) is expected
    assert receiver.accepts({"price": -5.0})  # -5 / -0.0 = +inf > 1


def test_huge_decimal_values_cost_no_time() -> None:
    from decimal import Decimal

    receiver = ReceiverFilter([Subscription(id="p", selector="price > 10 AND price < 1e308")])
    assert receiver.accepts({"price": Decimal("1e999999999")}) is False
    assert receiver.accepts({"price": Decimal("1e-999999999")}) is False
    assert receiver.accepts({"price": Decimal("11.5")}) is True


def test_fused_stages_answer_like_their_members() -> None:
    subscriptions = [
        Subscription(id="a", selector="side = 'buy' AND region IN ('eu', 'us') AND price > 5"),
        Subscription(id="b", selector="side = 'sell' AND urgent AND price < 50"),
        Subscription(id="c", selector="region = 'jp' AND NOT urgent"),
    ]
    receiver = ReceiverFilter(subscriptions, refine_after=4)
    messages = [
        {"side": side, "region": region, "urgent": urgent, "price": price}
        for side in ("buy", "sell")
        for region in ("eu", "us", "jp")
        for urgent in (True, False, None)
        for price in (1, 10.5, 60)
    ]
    for properties in messages * 2:
        expected = any(subscription.matches(properties) for subscription in subscriptions)
        assert receiver.accepts(properties) is expected
    assert receiver._plan.group_of  # the small-domain fields were fused along the way


def test_many_intervals_use_checkpointed_masks() -> None:
    # 1,100 intervals on one field: the interval tables keep checkpoints, not every prefix.
    import random

    subscriptions = [
        Subscription(id=f"p{number}", selector=f"price BETWEEN {number * 4} AND {number * 4 + 1}")
        for number in range(1_100)
    ]
    subscriptions.append(Subscription(id="q", selector="price > 4399.5 AND price < 4401"))
    receiver = ReceiverFilter(subscriptions, refine=False)
    rng = random.Random(5)
    prices = [rng.uniform(-5, 4_410) for _ in range(60)] + [0, 1, 2, 4, 4397, 4399.5, 4_400]
    prices += [rng.randrange(-5, 4_410) for _ in range(60)]
    for price in prices:
        expected = any(subscription.matches({"price": price}) for subscription in subscriptions)
        assert receiver.accepts({"price": price}) is expected, price
