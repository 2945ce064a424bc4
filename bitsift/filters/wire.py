"""Messages as they arrive off the wire, and the limits that keep untrusted input harmless.

A receiver reads bytes a publisher we may not trust wrote: a JSON document nested a million
levels deep, a 2 GB frame, a topic that is not UTF-8. Decoding is therefore bounded and total:
it either returns a :class:`Message` or raises :class:`MalformedMessage` with a reason a person
can act on, which the receiver counts and logs before it moves on to the next message.

Formats:

* ZeroMQ: three frames ``[topic, properties, body]``: the topic as UTF-8 (an empty frame means
  no topic), the properties as a JSON object, and a body of any bytes, passed through untouched.
* UDP and JSON lines: one JSON object ``{"topic": "...", "properties": {...}}`` per datagram or
  line; ``topic`` may be absent or null, ``properties`` may be absent (no properties); any other
  key is ignored by the filter and passed through with the message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bitsift.errors import BitsiftError

__all__ = [
    "Message",
    "MalformedMessage",
    "WireLimits",
    "decode_properties",
    "decode_topic",
    "decode_envelope",
    "decode_frames",
]


class MalformedMessage(BitsiftError, ValueError):
    """A message that cannot be decoded; ``reason`` is a short category for the counters."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}")


@dataclass(frozen=True, slots=True)
class WireLimits:
    """Bounds on one incoming message. The defaults suit market data; raise them if needed.

    ``max_message_bytes``: a whole UDP datagram, JSON line or ZeroMQ message (all frames).
    ``max_topic_bytes``: the topic (65,535 is the MQTT maximum; AMQP allows 255).
    ``max_properties_bytes``: the properties JSON.
    ``max_json_depth``: nesting of arrays and objects in the properties (the object itself is 1).
    """

    max_message_bytes: int = 1 << 20
    max_topic_bytes: int = 65_535
    max_properties_bytes: int = 256 * 1024
    max_json_depth: int = 32

    def __post_init__(self) -> None:
        for name in ("max_message_bytes", "max_topic_bytes", "max_properties_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"WireLimits.{name} must be a positive integer, not {value!r}")
        if not isinstance(self.max_json_depth, int) or not 1 <= self.max_json_depth <= 500:
            raise ValueError(
                f"WireLimits.max_json_depth must be between 1 and 500, not {self.max_json_depth!r}"
            )


DEFAULT_LIMITS = WireLimits()


@dataclass(frozen=True, slots=True)
class Message:
    """One message: its topic (or None), its properties, and a body the filter never reads.

    ``raw`` keeps the undecoded text of a JSON line or datagram, so a receiver can pass on
    exactly what it was sent.
    """

    properties: Mapping[str, Any]
    topic: str | None = None
    body: bytes = b""
    raw: bytes | None = field(default=None, compare=False, repr=False)


def _depth_within(document: object, limit: int) -> bool:
    """Whether ``document`` nests arrays and objects at most ``limit`` levels (no recursion)."""
    pending: list[tuple[object, int]] = [(document, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return False
        pending.extend((child, depth + 1) for child in children)
    return True


def _parse_json(data: bytes | str, what: str, limits: WireLimits) -> Any:
    if isinstance(data, bytes):
        openers = data.count(b"[") + data.count(b"{")
    else:
        openers = data.count("[") + data.count("{")
    try:
        document = json.loads(data)
    except RecursionError:
        raise MalformedMessage(
            "too deep", f"the {what} nest deeper than {limits.max_json_depth} levels"
        ) from None
    except UnicodeDecodeError as error:
        raise MalformedMessage(
            "bad encoding", f"the {what} are not UTF-8 (byte {error.start})"
        ) from None
    except ValueError as error:  # json.JSONDecodeError
        raise MalformedMessage("bad JSON", f"the {what} are not valid JSON ({error})") from None
    # Counting brackets is a C-speed upper bound on the depth; walk the document only when needed.
    if openers > limits.max_json_depth and not _depth_within(document, limits.max_json_depth):
        raise MalformedMessage(
            "too deep", f"the {what} nest deeper than {limits.max_json_depth} levels"
        )
    return document


def decode_properties(data: bytes, limits: WireLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Properties from a JSON object (a ZeroMQ properties frame).

    >>> decode_properties(b'{"price": 12.5, "region": "eu"}')
    {'price': 12.5, 'region': 'eu'}
    >>> decode_properties(b'[1, 2]')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bitsift.filters.wire.MalformedMessage: wrong shape: the properties must be a JSON object, ...
    """
    if len(data) > limits.max_properties_bytes:
        raise MalformedMessage(
            "oversize",
            f"the properties are {len(data):,} bytes; the limit is {limits.max_properties_bytes:,}",
        )
    document = _parse_json(data, "properties", limits)
    if not isinstance(document, dict):
        raise MalformedMessage(
            "wrong shape",
            f"the properties must be a JSON object, not {_json_type(document)}",
        )
    return document


def decode_topic(data: bytes, limits: WireLimits = DEFAULT_LIMITS) -> str | None:
    """A topic frame: UTF-8 text, or None when the frame is empty."""
    if len(data) > limits.max_topic_bytes:
        raise MalformedMessage(
            "oversize",
            f"the topic is {len(data):,} bytes; the limit is {limits.max_topic_bytes:,}",
        )
    if not data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedMessage(
            "bad encoding", f"the topic is not UTF-8 (byte {error.start})"
        ) from None


def decode_envelope(data: bytes, limits: WireLimits = DEFAULT_LIMITS) -> Message:
    """A JSON line or datagram: ``{"topic": ..., "properties": {...}}``.

    >>> decode_envelope(b'{"topic": "forex.eur", "properties": {"price": 3}}').topic
    'forex.eur'
    """
    if len(data) > limits.max_message_bytes:
        raise MalformedMessage(
            "oversize",
            f"the message is {len(data):,} bytes; the limit is {limits.max_message_bytes:,}",
        )
    # The envelope adds one level around the properties.
    envelope_limits = WireLimits(
        limits.max_message_bytes,
        limits.max_topic_bytes,
        limits.max_properties_bytes,
        min(limits.max_json_depth + 1, 500),
    )
    document = _parse_json(data, "message", envelope_limits)
    if not isinstance(document, dict):
        raise MalformedMessage(
            "wrong shape", f"a message must be a JSON object, not {_json_type(document)}"
        )
    topic = document.get("topic")
    if topic is not None and not isinstance(topic, str):
        raise MalformedMessage(
            "wrong shape", f'"topic" must be a string or null, not {_json_type(topic)}'
        )
    if topic is not None and len(topic.encode("utf-8", "surrogatepass")) > limits.max_topic_bytes:
        raise MalformedMessage(
            "oversize", f"the topic is longer than {limits.max_topic_bytes:,} bytes"
        )
    properties = document.get("properties", {})
    if not isinstance(properties, dict):
        raise MalformedMessage(
            "wrong shape",
            f'"properties" must be a JSON object, not {_json_type(properties)}',
        )
    return Message(properties, topic, b"", data)


def decode_frames(frames: list[bytes], limits: WireLimits = DEFAULT_LIMITS) -> Message:
    """A ZeroMQ multipart message ``[topic, properties, body]``."""
    if len(frames) != 3:
        raise MalformedMessage(
            "wrong frame count",
            f"expected 3 frames (topic, properties JSON, body), got {len(frames)}",
        )
    total = sum(len(frame) for frame in frames)
    if total > limits.max_message_bytes:
        raise MalformedMessage(
            "oversize",
            f"the message is {total:,} bytes; the limit is {limits.max_message_bytes:,}",
        )
    topic = decode_topic(frames[0], limits)
    properties = decode_properties(frames[1], limits)
    return Message(properties, topic, frames[2])


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if type(value) in (int, float):
        return "a number"
    return names.get(type(value), type(value).__name__)
