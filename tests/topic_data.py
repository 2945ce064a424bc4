"""The topic conformance data (tests/data/topics_*.json) and the hypothesis strategies for topics.

Each data file holds groups; each group cites its source and has a ``kind``:

* ``matches``: ``[pattern, topic, expected]`` with expected ``true``, ``false``,
  ``"pattern-error"`` (the pattern is invalid) or ``"topic-error"`` (the topic is invalid);
* ``bindings``: named patterns and rounds of ``{"remove": [names], "expect": {topic: [names]}}``,
  a broker routing scenario (every binding not listed for a topic must not match it);
* ``invalid_patterns`` / ``invalid_topics``: ``[text, column]``, the 1-based column the error names;
* ``valid_patterns`` / ``valid_topics``: texts; ``words``: ``[routing key, [words]]``;
* ``equivalent``: pairs of patterns that match the same topics.

A group's ``syntax`` defaults to its file's. A text is a string, or a list of strings and
``{"repeat": s, "times": n}`` parts, so that 65,535-byte topics stay readable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hypothesis import strategies as st

from bitsift.errors import TopicNameError
from bitsift.selectors.topics import TopicPattern, TopicSyntax

DATA = Path(__file__).parent / "data"
Expected = bool | Literal["pattern-error", "topic-error"]


def text(value: Any) -> str:
    """A data file's text: a string, or parts to concatenate (see the module docstring)."""
    if isinstance(value, str):
        return value
    return "".join(
        part if isinstance(part, str) else part["repeat"] * part["times"] for part in value
    )


def short(value: str, limit: int = 40) -> str:
    """A test id for a text that may be 65 KB long."""
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[: limit - 12]}...<{len(value)} chars>"


@dataclass(frozen=True)
class Group:
    file: str
    syntax: TopicSyntax
    kind: str
    source: str
    body: dict[str, Any]


def groups() -> Iterator[Group]:
    for path in sorted(DATA.glob("topics_*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for group in document["groups"]:
            syntax = group.get("syntax", document.get("syntax"))
            yield Group(path.name, syntax, group["kind"], group["source"], group)


@dataclass(frozen=True)
class MatchCase:
    syntax: TopicSyntax
    pattern: str
    topic: str
    expected: Expected
    source: str

    @property
    def id(self) -> str:
        return f"{self.syntax}:{short(self.pattern)}~{short(self.topic)}"


def match_cases() -> list[MatchCase]:
    """Every (pattern, topic, expected) the data states, the binding scenarios included."""
    found: dict[tuple[str, str, str], MatchCase] = {}

    def put(case: MatchCase) -> None:
        key = (case.syntax, case.pattern, case.topic)
        earlier = found.setdefault(key, case)
        if earlier.expected != case.expected:
            raise AssertionError(f"the data disagrees with itself about {case.id}")

    for group in groups():
        if group.kind == "matches":
            for pattern, topic, expected in group.body["cases"]:
                put(MatchCase(group.syntax, text(pattern), text(topic), expected, group.source))
        elif group.kind == "bindings":
            live = dict(group.body["bindings"])
            for round_ in group.body["rounds"]:
                for name in round_["remove"]:
                    del live[name]
                for topic, names in round_["expect"].items():
                    for name, pattern in live.items():
                        put(MatchCase(group.syntax, pattern, topic, name in names, group.source))
    return list(found.values())


def cases_of(kind: str) -> list[tuple[TopicSyntax, Any, str]]:
    """``(syntax, case, source)`` for every case of the given kind."""
    return [
        (group.syntax, case, group.source)
        for group in groups()
        if group.kind == kind
        for case in group.body["cases"]
    ]


def binding_groups() -> list[Group]:
    return [group for group in groups() if group.kind == "bindings"]


def reference_matches(pattern: TopicPattern, topic: str) -> bool:
    """What an index must answer: the reference, with an invalid topic matching nothing."""
    try:
        return pattern.matches(topic)
    except TopicNameError:
        return False


# --- hypothesis strategies: small alphabets, so that patterns and topics meet often -------------

AMQP_WORDS = ["a", "b", ""]
MQTT_LEVELS = ["a", "b", "", "$x"]


@st.composite
def amqp_patterns(draw: st.DrawFn) -> str:
    tokens = draw(st.lists(st.sampled_from([*AMQP_WORDS, "*", "#", "a*", "$x"]), max_size=6))
    return ".".join(tokens)


@st.composite
def amqp_topics(draw: st.DrawFn) -> str:
    return ".".join(draw(st.lists(st.sampled_from([*AMQP_WORDS, "$x", "*", "#"]), max_size=6)))


@st.composite
def mqtt_filters(draw: st.DrawFn) -> str:
    levels = draw(st.lists(st.sampled_from([*MQTT_LEVELS, "+", "*"]), min_size=1, max_size=5))
    if draw(st.booleans()):
        levels.append("#")
    if levels == [""]:
        levels = ["+"]
    filter_text = "/".join(levels)
    if draw(st.integers(0, 5)) == 0:
        return f"$share/{draw(st.sampled_from(['g', 'h']))}/{filter_text}"
    return filter_text


@st.composite
def mqtt_topics(draw: st.DrawFn) -> str:
    levels = draw(st.lists(st.sampled_from(MQTT_LEVELS), min_size=1, max_size=6))
    return "/".join(levels) or "/"


def topic_patterns() -> st.SearchStrategy[TopicPattern]:
    """Valid patterns of both syntaxes."""
    return st.one_of(
        amqp_patterns().map(lambda pattern: TopicPattern(pattern, "amqp")),
        mqtt_filters().map(lambda pattern: TopicPattern(pattern, "mqtt")),
    )


@st.composite
def any_topics(draw: st.DrawFn) -> str:
    """Topics for an index holding both syntaxes: AMQP keys, MQTT names, and strings one or both
    syntaxes reject (an MQTT name with '#', the empty string)."""
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return draw(amqp_topics())
    if kind == 1:
        return draw(mqtt_topics())
    parts = draw(
        st.lists(
            st.tuples(st.sampled_from([".", "/"]), st.sampled_from(["a", "b", "", "+", "#", "$x"])),
            max_size=5,
        )
    )
    return "".join(separator + word for separator, word in parts)[1:]
