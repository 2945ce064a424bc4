"""The subscription model: what a consumer asks for, validated before it reaches an index.

A subscription is data that arrives from outside (a file, an API call, a broker's wire protocol),
so it is a pydantic model: every field is checked on the way in, a bad selector or topic pattern
is a ``ValidationError`` whose message carries the line, column and a caret under the spot, and
the JSON schema can be handed to whoever writes subscription files.

Validation parses: a valid ``Subscription`` always holds a parsed selector and topic pattern
(:attr:`Subscription.parsed_selector`, :attr:`Subscription.parsed_topic`), so the index never
parses again and never meets text it cannot handle. Parsing is cached by text, so ten thousand
subscriptions with the same selector cost one parse.

>>> from bitsift import Subscription
>>> sub = Subscription(id="eu-cheap", selector="region = 'eu' AND price < 50", client="desk-7")
>>> sub.parsed_selector.matches({"region": "eu", "price": 20})
True
>>> Subscription(id="bad", selector="price > 'cheap'")
Traceback (most recent call last):
  ...
pydantic_core._pydantic_core.ValidationError: 1 validation error for Subscription
selector
  Value error, each side of > must be a number or a property, not a string (line 1, column 9 of the selector)
    price > 'cheap'
            ^ ...
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from bitsift.errors import TopicNameError
from bitsift.selectors.parser import parse
from bitsift.selectors.selector import Selector
from bitsift.selectors.topics import TopicPattern

__all__ = ["Subscription", "TopicSyntax", "MAX_ID_LENGTH", "MAX_CLIENT_LENGTH"]

TopicSyntax = Literal["amqp", "mqtt"]

MAX_ID_LENGTH = 1024
"""Longest subscription id accepted, in characters: ids are keys in every result set."""
MAX_CLIENT_LENGTH = 1024
"""Longest client reference accepted, in characters."""


def _topic_pattern(text: str, syntax: TopicSyntax) -> TopicPattern:
    """Parse a topic pattern once: the field validator checks it and the model keeps it, and
    many subscriptions share a pattern. Patterns are immutable, so sharing one is safe; long ones
    (MQTT allows 65,535 bytes) are not remembered, so the cache stays small whatever arrives."""
    if len(text) > 1024:
        return TopicPattern(text, syntax)
    return _short_topic_pattern(text, syntax)


@lru_cache(maxsize=4096)
def _short_topic_pattern(text: str, syntax: TopicSyntax) -> TopicPattern:
    return TopicPattern(text, syntax)


class Subscription(BaseModel):
    """One subscription: which messages a consumer wants, by selector and/or topic pattern.

    A message matches when its topic matches ``topic`` (if there is one) AND its properties make
    ``selector`` TRUE (if there is one). With neither, every message matches. ``client`` names the
    consumer to deliver to; many subscriptions may share one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)

    id: str = Field(
        min_length=1,
        max_length=MAX_ID_LENGTH,
        description="Unique name of the subscription; adding an existing id replaces it.",
        examples=["eu-cheap"],
    )
    selector: str | None = Field(
        default=None,
        description="A JMS message selector over the message properties; empty or absent "
        "matches every message.",
        examples=["region = 'eu' AND price BETWEEN 50 AND 55"],
    )
    # Declared before `topic` so that the topic validator can read it.
    topic_syntax: TopicSyntax = Field(
        default="amqp", description="How to read `topic`: 'amqp' (default) or 'mqtt'."
    )
    topic: str | None = Field(
        default=None,
        description="A topic pattern: an AMQP 0-9-1 binding key (words split on '.', '*' one "
        "word, '#' zero or more) or an MQTT topic filter ('/' levels, '+', trailing '#').",
        examples=["stocks.*.nyse", "sensors/+/temperature"],
    )
    client: str | None = Field(
        default=None,
        max_length=MAX_CLIENT_LENGTH,
        description="The consumer this subscription delivers to.",
        examples=["desk-7"],
    )

    _selector: Selector = PrivateAttr()
    _topic: TopicPattern | None = PrivateAttr(default=None)

    @field_validator("selector")
    @classmethod
    def _selector_parses(cls, text: str | None) -> str | None:
        if text is not None:
            parse(text)  # raises SelectorSyntaxError, a ValueError pydantic reports in place
        return text

    @field_validator("topic")
    @classmethod
    def _topic_parses(cls, text: str | None, info: ValidationInfo) -> str | None:
        syntax = info.data.get("topic_syntax")
        if text is not None and syntax is not None:
            _topic_pattern(text, syntax)  # raises TopicPatternError, a ValueError
        return text

    @model_validator(mode="after")
    def _keep_parsed(self) -> Subscription:
        if self.topic is not None:
            self._topic = _topic_pattern(self.topic, self.topic_syntax)
        self._selector = parse(self.selector or "")
        return self

    # The two properties below read pydantic's private-attribute dict directly: ``self._selector``
    # goes through ``BaseModel.__getattr__``, about 3 µs a read, which was a tenth of the cost of
    # indexing a subscription. A model made without validation (``model_construct``) may lack
    # the entries: the usual attribute read then gives the usual error.

    @property
    def parsed_selector(self) -> Selector:
        """The parsed selector; an empty one (matching everything) when there is none."""
        try:
            return self.__pydantic_private__["_selector"]  # type: ignore[index, no-any-return]
        except (KeyError, TypeError):
            return self._selector

    @property
    def parsed_topic(self) -> TopicPattern | None:
        """The parsed topic pattern, or ``None`` when the subscription has no topic."""
        try:
            return self.__pydantic_private__["_topic"]  # type: ignore[index, no-any-return]
        except (KeyError, TypeError):
            return self._topic

    def matches(self, properties: Mapping[str, Any], topic: str | None = None) -> bool:
        """The reference answer for one message: what the index must agree with.

        A topic that is not a valid name under this subscription's syntax (an MQTT name with
        ``+``, say) matches no pattern of that syntax.

        >>> Subscription(id="fx", topic="forex.#", selector="amount > 5").matches(
        ...     {"amount": 10}, topic="forex.usd")
        True
        """
        pattern = self.parsed_topic
        if pattern is not None:
            if topic is None:
                return False
            try:
                if not pattern.matches(topic):
                    return False
            except TopicNameError:
                return False
        return self.parsed_selector.matches(properties)
