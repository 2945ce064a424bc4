"""The reference topic matcher: conformance data from brokers and the specifications, then
hypothesis against a recursive matcher written straight from the definitions.

The conformance cases live in tests/data/topics_*.json (see tests/topic_data.py for the format);
each group there cites the test suite or specification clause it comes from.
"""

from __future__ import annotations

import itertools
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from topic_data import (
    MatchCase,
    amqp_patterns,
    amqp_topics,
    cases_of,
    match_cases,
    mqtt_filters,
    mqtt_topics,
    short,
    text,
)

from bitsift.errors import BitsiftError, TopicNameError, TopicPatternError
from bitsift.selectors.topics import (
    TopicPattern,
    TopicSyntax,
    Wildcard,
    check_topic_name,
    is_topic_name,
    split_topic,
)

MATCH_CASES = match_cases()


def test_the_data_has_at_least_400_cases() -> None:
    kinds = ["invalid_patterns", "invalid_topics", "valid_patterns", "valid_topics", "words"]
    assert len(MATCH_CASES) + sum(len(cases_of(kind)) for kind in kinds) >= 400


@pytest.mark.parametrize("case", MATCH_CASES, ids=[case.id for case in MATCH_CASES])
def test_conformance(case: MatchCase) -> None:
    if case.expected == "pattern-error":
        with pytest.raises(TopicPatternError):
            TopicPattern(case.pattern, case.syntax)
        return
    pattern = TopicPattern(case.pattern, case.syntax)
    if case.expected == "topic-error":
        with pytest.raises(TopicNameError):
            pattern.matches(case.topic)
        return
    assert pattern.matches(case.topic) is case.expected


INVALID_PATTERNS = cases_of("invalid_patterns")


@pytest.mark.parametrize(
    ("syntax", "case", "source"),
    INVALID_PATTERNS,
    ids=[f"{syntax}:{short(text(case[0]))}" for syntax, case, _ in INVALID_PATTERNS],
)
def test_invalid_pattern(syntax: TopicSyntax, case: list[object], source: str) -> None:
    pattern, column = text(case[0]), case[1]
    with pytest.raises(TopicPatternError) as caught:
        TopicPattern(pattern, syntax)
    error = caught.value
    assert (error.line, error.column) == (1, column)
    assert isinstance(error, ValueError) and isinstance(error, BitsiftError)
    assert error.text == pattern
    assert str(error).rstrip().endswith("^")
    assert pickle.loads(pickle.dumps(error)).column == column


INVALID_TOPICS = cases_of("invalid_topics")


@pytest.mark.parametrize(
    ("syntax", "case", "source"),
    INVALID_TOPICS,
    ids=[f"{syntax}:{short(text(case[0]))}" for syntax, case, _ in INVALID_TOPICS],
)
def test_invalid_topic(syntax: TopicSyntax, case: list[object], source: str) -> None:
    topic, column = text(case[0]), case[1]
    with pytest.raises(TopicNameError) as caught:
        check_topic_name(topic, syntax)
    assert (caught.value.line, caught.value.column) == (1, column)
    assert isinstance(caught.value, ValueError)
    assert not is_topic_name(topic, syntax)
    with pytest.raises(TopicNameError):
        TopicPattern("#", syntax).matches(topic)


@pytest.mark.parametrize(("syntax", "pattern", "source"), cases_of("valid_patterns"))
def test_valid_pattern(syntax: TopicSyntax, pattern: str, source: str) -> None:
    assert TopicPattern(pattern, syntax).pattern == pattern


@pytest.mark.parametrize(("syntax", "topic", "source"), cases_of("valid_topics"))
def test_valid_topic(syntax: TopicSyntax, topic: str, source: str) -> None:
    check_topic_name(topic, syntax)
    assert is_topic_name(topic, syntax)


@pytest.mark.parametrize(("syntax", "case", "source"), cases_of("words"))
def test_words(syntax: TopicSyntax, case: list[object], source: str) -> None:
    assert split_topic(text(case[0]), syntax) == case[1]


@pytest.mark.parametrize(("syntax", "pair", "source"), cases_of("equivalent"))
def test_equivalent_patterns(syntax: TopicSyntax, pair: list[str], source: str) -> None:
    first, second = (TopicPattern(pattern, syntax) for pattern in pair)
    for length in range(7):
        for words in itertools.product("xy", repeat=length):
            topic = ".".join(words)
            assert first.matches(topic) == second.matches(topic), topic


# --- the reference against matchers written straight from the definitions -------------------


def defined_match(pattern: list[str], words: list[str], one: str) -> bool:
    """Match by the definition: ``one`` is one word, '#' is zero or more. Small inputs only."""
    if not pattern:
        return not words
    head, rest = pattern[0], pattern[1:]
    if head == "#":
        return any(defined_match(rest, words[skip:], one) for skip in range(len(words) + 1))
    return bool(words) and head in (one, words[0]) and defined_match(rest, words[1:], one)


@given(amqp_patterns(), amqp_topics())
def test_amqp_reference_follows_the_definition(pattern: str, topic: str) -> None:
    expected = defined_match(
        pattern.split(".") if pattern else [], topic.split(".") if topic else [], "*"
    )
    assert TopicPattern(pattern, "amqp").matches(topic) is expected


@given(mqtt_filters(), mqtt_topics())
def test_mqtt_reference_follows_the_definition(pattern: str, topic: str) -> None:
    filter_text = pattern.split("/", 2)[2] if pattern.startswith("$share/") else pattern
    levels = filter_text.split("/")
    if topic.startswith("$") and levels[0] in ("+", "#"):
        expected = False
    else:
        expected = defined_match(levels, topic.split("/"), "+")
    assert TopicPattern(pattern, "mqtt").matches(topic) is expected


SYNTAXES = st.sampled_from(["amqp", "mqtt"])
TEXTS = st.text(st.sampled_from("ab./+#*$\x00é\ud800 "), max_size=12) | st.text(max_size=12)


@given(TEXTS, SYNTAXES)
def test_any_text_is_a_pattern_or_a_pattern_error(pattern: str, syntax: TopicSyntax) -> None:
    try:
        parsed = TopicPattern(pattern, syntax)
    except TopicPatternError as error:
        assert error.line == 1 and 1 <= error.column <= len(pattern) + 1
    else:
        assert parsed.pattern == pattern and parsed.syntax == syntax


@given(TEXTS, SYNTAXES)
def test_topic_checks_agree(topic: str, syntax: TopicSyntax) -> None:
    try:
        check_topic_name(topic, syntax)
    except TopicNameError as error:
        assert error.line == 1 and 1 <= error.column <= len(topic) + 1
        assert not is_topic_name(topic, syntax)
    else:
        assert is_topic_name(topic, syntax)


# --- the object itself -----------------------------------------------------------------------


def test_equality_hashing_pickling_and_repr() -> None:
    first = TopicPattern("a.*", "amqp")
    assert first == TopicPattern("a.*") and hash(first) == hash(TopicPattern("a.*"))
    assert first != TopicPattern("a.*", "mqtt") and first != "a.*"
    assert TopicPattern("a.#.#") != TopicPattern("a.#")  # equal in meaning, not in text
    shared = TopicPattern("$share/g/a/+", "mqtt")
    assert pickle.loads(pickle.dumps(shared)) == shared
    assert eval(repr(shared), {"TopicPattern": TopicPattern}) == shared
    assert str(shared) == "$share/g/a/+"
    assert (shared.share_name, shared.filter) == ("g", "a/+")
    assert shared.tokens == ("a", Wildcard.ONE)
    assert not shared.is_literal and TopicPattern("a/b", "mqtt").is_literal


def test_dollar_rule_is_mqtt_only() -> None:
    assert TopicPattern("+/b", "mqtt").skips_dollar_topics
    assert not TopicPattern("$share/g/a/#", "mqtt").skips_dollar_topics
    assert not TopicPattern("*.b", "amqp").skips_dollar_topics


def test_wrong_argument_types() -> None:
    with pytest.raises(TypeError):
        TopicPattern(b"a.b")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'amqp' or 'mqtt'"):
        TopicPattern("a.b", "stomp")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        TopicPattern("a.b").matches(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        check_topic_name("a", "jms")  # type: ignore[arg-type]


def test_error_message_shows_the_spot() -> None:
    with pytest.raises(TopicPatternError) as caught:
        TopicPattern("sport/tennis/#/ranking", "mqtt")
    assert str(caught.value).splitlines()[1:] == [
        "    sport/tennis/#/ranking",
        "                 ^",
    ]
