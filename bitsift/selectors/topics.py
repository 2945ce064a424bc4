"""AMQP 0-9-1 binding patterns and MQTT topic filters: what is valid, and what matches what.

Most brokers route on a hierarchical topic before they look at any property, so bitsift must agree
with them exactly. This module is the one place that says what the two syntaxes mean; the fast
topic index (:mod:`bitsift.index.topics`) is tested against it and may never disagree.

The two syntaxes share one model: a pattern is a list of tokens, each a literal word, a single-word
wildcard (AMQP ``*``, MQTT ``+``) or a multi-word wildcard (``#``). They differ in the details:

* AMQP (RabbitMQ is the reference): words are split on ``.``; the empty routing key has zero words;
  empty words are real words; ``#`` matches zero or more words anywhere, any number of times; ``*``
  and ``#`` are wildcards only as whole words. Keys and patterns are at most 255 bytes of UTF-8 and
  are otherwise opaque, as in RabbitMQ: a routing key may contain ``*`` or ``#`` as ordinary text.
* MQTT 3.1.1 / 5.0 (section 4.7): levels are split on ``/``; ``#`` must be the whole last level and
  also matches the parent level; a filter whose first level is a wildcard does not match topics
  starting with ``$``; ``$share/{ShareName}/{filter}`` matches like its filter. Names and filters
  are 1 to 65,535 bytes of UTF-8 without U+0000, and a topic name has no wildcards.

The matcher is a bit-parallel NFA over the topic's words (one Python int holds the set of pattern
positions reached so far), so a topic of 60,000 levels costs time, never stack.
"""

from __future__ import annotations

import enum
from typing import Final, Literal

from bitsift.errors import TopicNameError, TopicPatternError

__all__ = [
    "AMQP_MAX_BYTES",
    "MQTT_MAX_BYTES",
    "Token",
    "TopicPattern",
    "TopicSyntax",
    "Wildcard",
    "check_topic_name",
    "is_topic_name",
    "split_topic",
]

TopicSyntax = Literal["amqp", "mqtt"]
AMQP_MAX_BYTES: Final = 255
"""AMQP 0-9-1 carries routing keys and binding keys as ``shortstr``: at most 255 bytes."""
MQTT_MAX_BYTES: Final = 65_535
"""MQTT encodes topic names and filters as UTF-8 strings with a two-byte length."""
_SHARE_PREFIX: Final = "$share/"


class Wildcard(enum.Enum):
    """A wildcard token: ``ONE`` is AMQP ``*`` / MQTT ``+``; ``MANY`` is ``#`` in both."""

    ONE = "one"
    MANY = "many"

    def __repr__(self) -> str:
        return f"Wildcard.{self.name}"


Token = str | Wildcard
"""A literal word, or a wildcard."""


def split_topic(topic: str, syntax: TopicSyntax) -> list[str]:
    """The words (AMQP) or levels (MQTT) of a topic; the empty AMQP routing key has none.

    >>> split_topic("a..b", "amqp"), split_topic("", "amqp"), split_topic("/finance", "mqtt")
    (['a', '', 'b'], [], ['', 'finance'])
    """
    if syntax == "amqp":
        return topic.split(".") if topic else []
    return topic.split("/")


def _encoding_problem(text: str, limit: int) -> tuple[str, int] | None:
    """Why ``text`` is not at most ``limit`` bytes of UTF-8, and the 1-based column to blame."""
    if text.isascii():
        if len(text) <= limit:
            return None
        return f"is {len(text):,} bytes long; the limit is {limit:,}", limit + 1
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        return f"contains the unpaired surrogate U+{code:04X}, which UTF-8 cannot encode", (
            error.start + 1
        )
    if size <= limit:
        return None
    total = 0
    for index, character in enumerate(text):
        total += len(character.encode("utf-8"))
        if total > limit:
            return f"is {size:,} bytes of UTF-8; the limit is {limit:,}", index + 1
    raise AssertionError("unreachable: the text was longer than the limit")  # pragma: no cover


def _first_of(text: str, characters: str) -> int:
    """The index of the first of ``characters`` in ``text``, or -1 (each search runs in C)."""
    found = [index for index in map(text.find, characters) if index >= 0]
    return min(found) if found else -1


def _check_syntax(syntax: object) -> None:
    if syntax != "amqp" and syntax != "mqtt":
        raise ValueError(f"topic syntax must be 'amqp' or 'mqtt', not {syntax!r}")


def check_topic_name(topic: str, syntax: TopicSyntax) -> None:
    """Raise :class:`~bitsift.TopicNameError` unless ``topic`` is a valid topic in ``syntax``.

    AMQP routing keys are checked only for their length (255 bytes of UTF-8), as RabbitMQ does.
    MQTT topic names must be 1 to 65,535 bytes, without U+0000 and without ``+`` or ``#``.

    >>> try:
    ...     check_topic_name("sport/+", "mqtt")
    ... except TopicNameError as error:
    ...     print(error.reason, "at column", error.column)
    an MQTT topic name must not contain the wildcard '+' at column 7
    """
    if not isinstance(topic, str):
        raise TypeError(f"a topic must be a str, not {type(topic).__name__}")
    _check_syntax(syntax)
    if syntax == "amqp":
        problem = _encoding_problem(topic, AMQP_MAX_BYTES)
        if problem is not None:
            raise TopicNameError(f"the AMQP routing key {problem[0]}", topic, 1, problem[1])
        return
    if not topic:
        raise TopicNameError("an MQTT topic name must not be empty", topic, 1, 1)
    index = _first_of(topic, "\x00+#")
    if index >= 0:
        what = "U+0000" if topic[index] == "\x00" else f"the wildcard {topic[index]!r}"
        raise TopicNameError(f"an MQTT topic name must not contain {what}", topic, 1, index + 1)
    problem = _encoding_problem(topic, MQTT_MAX_BYTES)
    if problem is not None:
        raise TopicNameError(f"the MQTT topic name {problem[0]}", topic, 1, problem[1])


def is_topic_name(topic: str, syntax: TopicSyntax) -> bool:
    """Whether ``topic`` is a valid topic in ``syntax``: :func:`check_topic_name` without raising.

    >>> is_topic_name("", "amqp"), is_topic_name("", "mqtt"), is_topic_name("a/#", "mqtt")
    (True, False, False)
    """
    if syntax == "amqp":
        if topic.isascii():
            return len(topic) <= AMQP_MAX_BYTES
        return _encoding_problem(topic, AMQP_MAX_BYTES) is None
    if not topic or "+" in topic or "#" in topic or "\x00" in topic:
        return False
    if topic.isascii():
        return len(topic) <= MQTT_MAX_BYTES
    return _encoding_problem(topic, MQTT_MAX_BYTES) is None


def _amqp_tokens(pattern: str) -> tuple[Token, ...]:
    problem = _encoding_problem(pattern, AMQP_MAX_BYTES)
    if problem is not None:
        raise TopicPatternError(f"the AMQP binding pattern {problem[0]}", pattern, 1, problem[1])
    words = pattern.split(".") if pattern else []
    return tuple(_WILDCARD_WORDS["amqp"].get(word, word) for word in words)


_WILDCARD_WORDS: Final[dict[str, dict[str, Token]]] = {
    "amqp": {"*": Wildcard.ONE, "#": Wildcard.MANY},
    "mqtt": {"+": Wildcard.ONE, "#": Wildcard.MANY},
}


def _mqtt_tokens(pattern: str) -> tuple[tuple[Token, ...], str, str | None]:
    """The tokens of an MQTT filter, the filter text they come from, and the share name if any."""

    def fail(reason: str, column: int) -> TopicPatternError:
        return TopicPatternError(reason, pattern, 1, column)

    if not pattern:
        raise fail("an MQTT topic filter must not be empty", 1)
    problem = _encoding_problem(pattern, MQTT_MAX_BYTES)
    if problem is not None:
        raise fail(f"the MQTT topic filter {problem[0]}", problem[1])
    if "\x00" in pattern:
        raise fail("an MQTT topic filter must not contain U+0000", pattern.index("\x00") + 1)
    share_name: str | None = None
    offset = 0  # characters of ``pattern`` before the filter proper
    if pattern.startswith(_SHARE_PREFIX):
        slash = pattern.find("/", len(_SHARE_PREFIX))
        share_name = pattern[len(_SHARE_PREFIX) : slash if slash >= 0 else len(pattern)]
        if not share_name:
            raise fail("the share name of a shared subscription must not be empty", 8)
        wildcard = _first_of(share_name, "+#")
        if wildcard >= 0:
            reason = f"the share name must not contain {share_name[wildcard]!r}"
            raise fail(reason, len(_SHARE_PREFIX) + wildcard + 1)
        if slash < 0 or slash == len(pattern) - 1:
            reason = "a shared subscription needs a topic filter after the share name"
            raise fail(reason, len(pattern) + 1)
        offset = slash + 1
    filter_text = pattern[offset:]
    levels = filter_text.split("/")
    tokens: list[Token] = []
    for number, level in enumerate(levels):
        if "#" in level:
            if level != "#":
                reason = "'#' must be a whole level of an MQTT topic filter"
                raise fail(reason, offset + level.index("#") + 1)
            if number != len(levels) - 1:
                raise fail("'#' must be the last level of an MQTT topic filter", offset + 1)
        if "+" in level and level != "+":
            reason = "'+' must be a whole level of an MQTT topic filter"
            raise fail(reason, offset + level.index("+") + 1)
        tokens.append(_WILDCARD_WORDS["mqtt"].get(level, level))
        offset += len(level) + 1
    return tuple(tokens), filter_text, share_name


class TopicPattern:
    """An AMQP binding pattern or MQTT topic filter, checked once and matched against topics.

    ``matches`` is the reference meaning of the pattern; every fast path is tested against it. It
    raises :class:`~bitsift.TopicNameError` for a topic that is not valid in the pattern's syntax.
    Two patterns are equal when their text and syntax are; a pattern pickles as its text.

    >>> TopicPattern("stock.*.nyse").matches("stock.ibm.nyse")
    True
    >>> TopicPattern("forex.*").matches("forex"), TopicPattern("forex.#").matches("forex")
    (False, True)
    >>> sport = TopicPattern("sport/#", syntax="mqtt")
    >>> sport.matches("sport"), sport.matches("sport/tennis/player1")
    (True, True)
    >>> TopicPattern("+/monitor/Clients", syntax="mqtt").matches("$SYS/monitor/Clients")
    False
    >>> TopicPattern("sport/tennis#", syntax="mqtt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bitsift.errors.TopicPatternError: '#' must be a whole level of an MQTT topic filter (...)
        sport/tennis#
                    ^
    """

    __slots__ = (
        "_pattern",
        "_syntax",
        "_tokens",
        "_filter",
        "_share_name",
        "_literal_masks",
        "_one_mask",
        "_many_mask",
    )

    def __init__(self, pattern: str, syntax: TopicSyntax = "amqp") -> None:
        if not isinstance(pattern, str):
            raise TypeError(f"a topic pattern must be a str, not {type(pattern).__name__}")
        _check_syntax(syntax)
        self._pattern = pattern
        self._syntax: TopicSyntax = syntax
        if syntax == "amqp":
            self._tokens = _amqp_tokens(pattern)
            self._filter = pattern
            self._share_name: str | None = None
        else:
            self._tokens, self._filter, self._share_name = _mqtt_tokens(pattern)
        # The matcher is an NFA whose states are the positions 0..n in the tokens: bit i of the
        # state set means "the first i tokens match the words read so far". These masks say
        # which positions a word can advance from.
        literal_masks: dict[str, int] = {}
        self._one_mask = self._many_mask = 0
        for position, token in enumerate(self._tokens):
            bit = 1 << position
            if token is Wildcard.ONE:
                self._one_mask |= bit
            elif token is Wildcard.MANY:
                self._many_mask |= bit
            else:
                literal_masks[token] = literal_masks.get(token, 0) | bit
        self._literal_masks = literal_masks

    @property
    def pattern(self) -> str:
        """The pattern exactly as written, including any MQTT ``$share/{name}/`` prefix."""
        return self._pattern

    @property
    def syntax(self) -> TopicSyntax:
        """``"amqp"`` or ``"mqtt"``."""
        return self._syntax

    @property
    def filter(self) -> str:
        """The part that is matched against topics: the pattern without a ``$share/{name}/``."""
        return self._filter

    @property
    def share_name(self) -> str | None:
        """The ShareName of an MQTT shared subscription, else ``None``."""
        return self._share_name

    @property
    def tokens(self) -> tuple[Token, ...]:
        """The filter split into literal words and :class:`Wildcard` tokens.

        >>> TopicPattern("a.*.#").tokens
        ('a', Wildcard.ONE, Wildcard.MANY)
        """
        return self._tokens

    @property
    def is_literal(self) -> bool:
        """True when the pattern has no wildcard, so it matches exactly one topic: its filter."""
        return not (self._one_mask or self._many_mask)

    @property
    def skips_dollar_topics(self) -> bool:
        """True for an MQTT filter starting with a wildcard, which never matches ``$`` topics."""
        return self._syntax == "mqtt" and isinstance(self._tokens[0], Wildcard)

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` (a routing key or MQTT topic name) matches this pattern."""
        check_topic_name(topic, self._syntax)
        if topic.startswith("$") and self.skips_dollar_topics:
            return False
        literal_masks, one_mask, many_mask = self._literal_masks, self._one_mask, self._many_mask
        state = self._reach_past_hashes(1)
        for word in split_topic(topic, self._syntax):
            # A word moves every position whose token accepts it one step on; a '#' may also
            # swallow the word and stay where it is.
            moved = state & (one_mask | literal_masks.get(word, 0))
            state = self._reach_past_hashes((moved << 1) | (state & many_mask))
            if not state:
                return False
        return bool(state >> len(self._tokens) & 1)

    def _reach_past_hashes(self, state: int) -> int:
        """Add the positions reachable by letting each reached '#' match zero words."""
        while True:
            grown = state | ((state & self._many_mask) << 1)
            if grown == state:
                return state
            state = grown

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicPattern):
            return NotImplemented
        return self._pattern == other._pattern and self._syntax == other._syntax

    def __hash__(self) -> int:
        return hash((self._pattern, self._syntax))

    def __repr__(self) -> str:
        return f"TopicPattern({self._pattern!r}, syntax={self._syntax!r})"

    def __str__(self) -> str:
        return self._pattern

    def __reduce__(self) -> tuple[object, ...]:
        # Pickle as text so that loading re-validates instead of trusting the bytes.
        return (TopicPattern, (self._pattern, self._syntax))
