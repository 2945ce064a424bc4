"""The topic index never disagrees with the reference matcher.

The conformance data runs through the index (one pattern at a time, all patterns of both syntaxes
at once, and RabbitMQ's add-then-remove routing scenario); hypothesis then compares the index with
a loop of ``TopicPattern.matches`` over random patterns and topics, through random add / replace /
remove churn, with the result cache on (and small, so it evicts) and off.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from pyroaring import FrozenBitMap
from topic_data import (
    MatchCase,
    amqp_topics,
    any_topics,
    binding_groups,
    cases_of,
    match_cases,
    reference_matches,
    topic_patterns,
)

from bitsift.errors import BitsiftError, UnknownSubscriptionError
from bitsift.index import topic_tables
from bitsift.index.topic_tables import normal_form
from bitsift.index.topics import TopicIndex
from bitsift.selectors.topics import TopicPattern, TopicSyntax

MATCH_CASES = [case for case in match_cases() if case.expected != "pattern-error"]


@pytest.mark.parametrize("cache_size", [0, 16])
@pytest.mark.parametrize("case", MATCH_CASES, ids=[case.id for case in MATCH_CASES])
def test_each_case_alone(case: MatchCase, cache_size: int) -> None:
    index = TopicIndex(cache_size=cache_size)
    index.add(7, TopicPattern(case.pattern, case.syntax))
    expected = [7] if case.expected is True else []  # an invalid topic matches nothing
    assert list(index.match(case.topic)) == expected
    assert list(index.match(case.topic)) == expected


@pytest.mark.parametrize("cache_size", [0, 4096])
def test_all_cases_in_one_index(cache_size: int) -> None:
    """Every pattern of the data, both syntaxes in one index, against every short topic."""
    patterns = sorted({TopicPattern(case.pattern, case.syntax) for case in MATCH_CASES}, key=repr)
    topics = sorted({case.topic for case in MATCH_CASES if len(case.topic) <= 300})
    index = TopicIndex(cache_size=cache_size)
    for column, pattern in enumerate(patterns):
        index.add(column, pattern)
    for topic in topics:
        expected = [
            column for column, pattern in enumerate(patterns) if reference_matches(pattern, topic)
        ]
        assert list(index.match(topic)) == expected, topic


@pytest.mark.parametrize("group", binding_groups(), ids=lambda group: group.file)
def test_broker_scenario(group: object) -> None:
    """RabbitMQ's routing test: bind, route, unbind some, route again."""
    body = group.body  # type: ignore[attr-defined]
    syntax: TopicSyntax = group.syntax  # type: ignore[attr-defined]
    names = [name for name, _ in body["bindings"]]
    index = TopicIndex()
    for column, (_, pattern) in enumerate(body["bindings"]):
        index.add(column, TopicPattern(pattern, syntax))
    for round_ in body["rounds"]:
        for name in round_["remove"]:
            index.remove(names.index(name))
        for topic, expected in round_["expect"].items():
            assert sorted(names[column] for column in index.match(topic)) == sorted(expected), topic


@pytest.mark.parametrize(("syntax", "pair", "source"), cases_of("equivalent"))
def test_normal_form_rewrites_wildcard_runs_as_qpid_does(
    syntax: TopicSyntax, pair: list[str], source: str
) -> None:
    first, second = (TopicPattern(pattern, syntax) for pattern in pair)
    assert normal_form(first.tokens) == normal_form(second.tokens)


# --- hypothesis: the index equals the reference loop ------------------------------------------


@given(
    st.lists(topic_patterns(), max_size=40),
    st.lists(any_topics(), max_size=20),
    st.sampled_from([0, topic_tables.SPARSE_RESULT]),
    st.sampled_from([1, 3]),
)
def test_many_patterns_at_once(
    patterns: list[TopicPattern], topics: list[str], sparse: int, stride: int
) -> None:
    """Also with every result of two or more columns made in one step (``sparse=0``).

    With ``stride`` 1 the columns the tables see are nearly dense (literal patterns take some),
    so slots stay equal to columns and large results are deserialized; with 3 they are spread
    out, slots are renumbered and large results come from the roaring rows.
    """
    index = TopicIndex(cache_size=8)
    for column, pattern in enumerate(patterns):
        index.add(column * stride, pattern)
    default, topic_tables.SPARSE_RESULT = topic_tables.SPARSE_RESULT, sparse
    default_loop, topic_tables.LOOP_RESULT = topic_tables.LOOP_RESULT, sparse
    try:
        for topic in topics + topics:
            expected = [
                column * stride
                for column, pattern in enumerate(patterns)
                if reference_matches(pattern, topic)
            ]
            assert list(index.match(topic)) == expected
    finally:
        topic_tables.SPARSE_RESULT, topic_tables.LOOP_RESULT = default, default_loop


def check_mirror(tables: topic_tables.PositionTables) -> None:
    """White box: every uncompressed row holds exactly the columns of its compressed twin."""
    if not tables.keeps_bitsets:
        return
    column_of = tables._column_of
    assert tables._renumbered == sum(
        1 for slot, column in enumerate(column_of) if column not in (-1, slot)
    )

    def columns(bits: int) -> set[int]:
        found = {column_of[slot] for slot in range(bits.bit_length()) if bits >> slot & 1}
        assert -1 not in found, "a free slot is still set"
        return found

    assert columns(tables._bit_with_hash) == set(tables._with_hash)
    assert columns(tables._bit_without_hash) == set(tables._without_hash)
    for position in tables._positions:
        assert position.rows.keys() == position.bit_rows.keys()
        for word, row in position.rows.items():
            assert columns(position.bit_rows[word]) == set(row), word
        assert columns(position.bit_rows.other) == set(position.other)
        assert columns(position.bit_null) == set(position.null)


COLUMNS = st.integers(min_value=0, max_value=11)


class TopicIndexMachine(RuleBasedStateMachine):
    """Add, replace, remove and match, checked after every step against a dict of patterns."""

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[int, TopicPattern] = {}
        self.indexes = [
            TopicIndex(cache_size=3),
            TopicIndex(cache_size=0, bitset_budget=0),  # compressed rows only
            TopicIndex(cache_size=0, bitset_budget=400),  # drops its bitsets and takes them back
        ]

    @rule(column=COLUMNS, pattern=topic_patterns())
    def add(self, column: int, pattern: TopicPattern) -> None:
        self.model[column] = pattern
        for index in self.indexes:
            index.add(column, pattern)

    @rule(column=COLUMNS)
    def remove(self, column: int) -> None:
        expected = self.model.pop(column, None)
        for index in self.indexes:
            if expected is None:
                with pytest.raises(UnknownSubscriptionError):
                    index.remove(column)
            else:
                assert index.remove(column) == expected

    @rule(topic=any_topics())
    def match(self, topic: str) -> None:
        expected = sorted(
            column for column, pattern in self.model.items() if reference_matches(pattern, topic)
        )
        for index in self.indexes:
            assert list(index.match(topic)) == expected
            assert list(index.match(topic)) == expected  # from the cache, when there is one

    @invariant()
    def bitsets_mirror_the_bitmaps(self) -> None:
        for index in self.indexes:
            for side in (index._amqp, index._mqtt):
                check_mirror(side.tables)

    @invariant()
    def same_size(self) -> None:
        for index in self.indexes:
            assert len(index) == len(self.model)
            assert index.cached <= index.cache_size
            assert all(index.get(column) == pattern for column, pattern in self.model.items())


TestTopicIndexMachine = TopicIndexMachine.TestCase
# Each run is a whole add/remove/match history, so fewer, shorter runs than the profile's
# example count keep this at a few seconds while every run still checks three indexes per step.
TestTopicIndexMachine.settings = settings(
    max_examples=max(50, settings().max_examples // 2), stateful_step_count=40
)


# --- behaviour ---------------------------------------------------------------------------------


def amqp(pattern: str) -> TopicPattern:
    return TopicPattern(pattern, "amqp")


def mqtt(pattern: str) -> TopicPattern:
    return TopicPattern(pattern, "mqtt")


def test_each_syntax_reads_the_topic_its_own_way() -> None:
    index = TopicIndex()
    index.add(0, amqp("#"))
    index.add(1, mqtt("#"))
    index.add(2, amqp("a/b"))
    index.add(3, mqtt("a/+"))
    index.add(4, amqp("*.b"))
    index.add(5, mqtt("+/b"))
    assert list(index.match("a/b")) == [0, 1, 2, 3, 5]
    assert list(index.match("a.b")) == [0, 1, 4]
    assert list(index.match("stock.#")) == [0]  # not an MQTT topic name: MQTT patterns skip it
    assert list(index.match("")) == [0]  # the empty AMQP key; no MQTT topic is empty
    assert list(index.match("$SYS/b")) == [0]  # MQTT '#' and '+/b' skip '$' topics; AMQP does not
    assert list(index.match("x" * 300)) == [1]  # too long for AMQP, fine for MQTT


def test_results_are_frozen_and_shared_with_the_cache() -> None:
    index = TopicIndex(cache_size=10)
    index.add(0, amqp("a.*"))
    result = index.match("a.b")
    assert isinstance(result, FrozenBitMap)
    assert index.match("a.b") is result
    assert isinstance(TopicIndex(cache_size=0).match("a"), FrozenBitMap)


def test_cache_is_bounded_and_first_in_first_out() -> None:
    index = TopicIndex(cache_size=3)
    index.add(0, amqp("#"))
    index.add(1, mqtt("#"))
    first = {topic: index.match(topic) for topic in ["t1", "t2", "t3"]}
    assert index.match("t1") is first["t1"]  # a hit changes nothing
    index.match("t4")  # evicts t1, the oldest
    assert index.cached == 3
    assert index.match("t2") is first["t2"] and index.match("t3") is first["t3"]
    assert index.match("t1") is not first["t1"] and index.match("t1") == first["t1"]
    for number in range(100):
        index.match(f"x{number}")
    assert index.cached == 3
    index.match("y" * 2000)  # long topics are matched but not cached
    assert list(index.match("y" * 2000)) == [1] and index.cached == 3
    assert "y" * 2000 not in index._cache  # type: ignore[operator]
    index.clear_cache()
    assert index.cached == 0


def test_literal_changes_evict_one_topic_and_wildcards_empty_the_cache() -> None:
    index = TopicIndex(cache_size=100)
    index.add(0, amqp("a.*"))
    a_b, a_c = index.match("a.b"), index.match("a.c")
    index.add(1, amqp("a.b"))
    assert index.match("a.c") is a_c and list(index.match("a.b")) == [0, 1]
    index.remove(1)
    assert index.match("a.c") is a_c and list(index.match("a.b")) == [0]
    index.add(2, mqtt("$share/g/a.c"))
    assert index.match("a.c") is not a_c and list(index.match("a.c")) == [0, 2]
    a_c = index.match("a.c")
    index.add(3, amqp("#.c"))
    assert index.cached == 0 and list(index.match("a.c")) == [0, 2, 3]
    assert a_b == index.match("a.b")


def test_no_cache() -> None:
    index = TopicIndex(cache_size=0)
    index.add(0, amqp("a"))
    assert list(index.match("a")) == [0] and index.cached == 0 and index.cache_size == 0


def test_adding_to_a_taken_column_replaces_its_pattern() -> None:
    index = TopicIndex()
    index.add(5, amqp("a.b.c.d.e.f"))
    index.add(6, amqp("a.*"))
    assert list(index.match("a.b.c.d.e.f")) == [5]
    index.add(5, mqtt("a/#"))
    assert len(index) == 2 and 5 in index and index.get(5) == mqtt("a/#")
    assert list(index.match("a.b.c.d.e.f")) == []
    assert list(index.match("a.x")) == [6]
    assert list(index.match("a/x/y")) == [5]


def test_removing_an_unknown_column() -> None:
    index = TopicIndex()
    with pytest.raises(UnknownSubscriptionError) as caught:
        index.remove(3)
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, BitsiftError)
    assert index.get(3) is None and 3 not in index


def test_wrong_arguments() -> None:
    with pytest.raises(ValueError):
        TopicIndex(cache_size=-1)
    with pytest.raises(ValueError):
        TopicIndex(bitset_budget=-1)
    index = TopicIndex()
    with pytest.raises(TypeError):
        index.add("1", amqp("a"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        index.add(True, amqp("a"))
    with pytest.raises(ValueError):
        index.add(2**32, amqp("a"))
    with pytest.raises(TypeError):
        index.add(1, "a.b")  # type: ignore[arg-type]
    index.add(1, amqp("a"))
    with pytest.raises(TypeError):
        index.match(b"a")  # type: ignore[arg-type]


def test_pickles_as_its_patterns() -> None:
    index = TopicIndex(cache_size=7, bitset_budget=3)
    for column, pattern in enumerate([amqp("a.#.b"), mqtt("+/b"), amqp(""), mqtt("$share/g/#")]):
        index.add(column * 2, pattern)
    copy = pickle.loads(pickle.dumps(index))
    assert copy.cache_size == 7 and len(copy) == 4
    for topic in ["a.b", "a/b", "", "a.x.y.b", "$x/b"]:
        assert copy.match(topic) == index.match(topic)


def test_many_hashes_before_words_stay_polynomial() -> None:
    """A recursive trie walk would take about 2**40 steps here; the state-set walk takes ~10**4."""
    index = TopicIndex(cache_size=0)
    pattern = amqp(".".join(["#", "a"] * 40) + ".#.b")
    index.add(0, pattern)
    assert list(index.match(".".join(["a"] * 120))) == []
    assert list(index.match(".".join(["a"] * 60 + ["b"]))) == [0]


def test_long_topics_and_long_patterns() -> None:
    index = TopicIndex(cache_size=0)
    index.add(0, mqtt("/".join(["+"] * 1000)))
    index.add(1, mqtt("a/#"))
    index.add(2, amqp(".".join(["*"] * 128)))
    assert list(index.match("/".join(["a"] * 1000))) == [0, 1]
    assert list(index.match("/".join(["a"] * 1001))) == [1]
    assert list(index.match(".".join(["a"] * 128))) == [2]
    index.remove(0)
    assert list(index.match("/".join(["a"] * 1000))) == [1]


def test_a_removed_pattern_leaves_no_bit_behind() -> None:
    for bitset_budget in (0, 100_000):
        index = TopicIndex(cache_size=0, bitset_budget=bitset_budget)
        assert index._amqp.tables.keeps_bitsets is bool(bitset_budget)
        index.add(0, amqp("a.b.#"))
        index.add(1, amqp("a.*"))
        index.add(2, amqp("*.b"))
        assert list(index.match("a.b")) == [0, 1, 2]
        index.remove(0)
        assert list(index.match("a.b")) == [1, 2]
        index.add(0, amqp("c.*"))  # reuses the freed column number
        assert list(index.match("a.b")) == [1, 2] and list(index.match("c.b")) == [0, 2]
        assert index._amqp.tables.keeps_bitsets is bool(bitset_budget)


def test_bitsets_stay_within_their_budget_and_come_back_when_empty() -> None:
    index = TopicIndex(cache_size=0, bitset_budget=2_000)
    tables = index._amqp.tables
    for column in range(10):
        index.add(column, amqp(f"w{column}.*"))
    assert tables.keeps_bitsets
    for column in range(10, 60):  # each distinct word is one more row: past 2,000 bytes
        index.add(column, amqp(f"w{column}.*"))
    assert not tables.keeps_bitsets
    assert list(index.match("w42.x")) == [42] and list(index.match("w42")) == []
    for column in range(60):
        index.remove(column)
    index.add(0, amqp("a.*"))
    assert tables.keeps_bitsets and list(index.match("a.b")) == [0]


def test_large_results_and_large_columns() -> None:
    index = TopicIndex(cache_size=0)
    tables = index._mqtt.tables
    for column in range(5000):  # a result over 4,096 columns is a bitset container in roaring
        index.add(column, mqtt("+/b" if column % 2 else "a/+"))
    assert tables.keeps_bitsets
    assert list(index.match("a/b")) == list(range(5000))
    assert list(index.match("a/x")) == list(range(0, 5000, 2))

    def renumbered() -> int:  # read afresh each time (mypy would narrow a plain read)
        return tables._renumbered

    assert renumbered() == 0  # columns came in order: large results take one step
    index.add(topic_tables.BITSET_COLUMNS, mqtt("a/+"))  # slot 5000: now renumbered
    assert tables.keeps_bitsets and renumbered() == 1
    assert list(index.match("a/x")) == [*range(0, 5000, 2), topic_tables.BITSET_COLUMNS]
    for column in range(100, 200):
        index.remove(column)
    assert list(index.match("a/b")) == [*range(100), *range(200, 5000), 61440]
    index.add(150, mqtt("+/+"))  # its own number is a free slot again
    assert renumbered() == 1 and tables._slot_of[150] == 150


def test_slots_follow_columns_across_small_gaps() -> None:
    index = TopicIndex(cache_size=0)
    tables = index._amqp.tables
    for column in range(0, 200, 2):  # the odd numbers went elsewhere (literals, other syntax)
        index.add(column, amqp("*.x"))
    assert tables._renumbered == 0 and len(tables._column_of) == 199
    assert list(index.match("a.x")) == list(range(0, 200, 2))  # 100 matches, in one step
    index.add(1_000, amqp("*.x"))  # too far past the end: takes a free slot instead
    assert tables._slot_of[1_000] != 1_000
    assert list(index.match("a.x")) == [*range(0, 200, 2), 1_000]


@st.composite
def table_patterns(draw: st.DrawFn) -> TopicPattern:
    """AMQP patterns the tables hold: fixed words and '*', then perhaps '#', never literal."""
    fixed = draw(st.lists(st.sampled_from(["a", "b", "", "*", "a*"]), max_size=5))
    if "*" not in fixed or draw(st.booleans()):
        fixed.append("#")
    return TopicPattern(".".join(fixed))


@given(st.lists(table_patterns(), min_size=1, max_size=60), st.lists(amqp_topics(), max_size=20))
def test_large_results_in_one_step(patterns: list[TopicPattern], topics: list[str]) -> None:
    """Every pattern in the tables, numbered densely: any result of two or more columns is
    deserialized from the bits, and must still equal the reference."""
    index = TopicIndex(cache_size=0)
    for column, pattern in enumerate(patterns):
        index.add(column, pattern)
    assert index._amqp.tables._renumbered == 0
    default, topic_tables.SPARSE_RESULT = topic_tables.SPARSE_RESULT, 1
    try:
        for topic in topics:
            expected = [column for column, pattern in enumerate(patterns) if pattern.matches(topic)]
            assert list(index.match(topic)) == expected
    finally:
        topic_tables.SPARSE_RESULT = default
