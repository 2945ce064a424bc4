"""The receivers on real sockets, loopback only: exactly the matching messages come out, in order.

Each test sends a known stream (W3 sample messages with malformed ones mixed in) through a real
socket: ZeroMQ PUB/SUB over ``tcp://127.0.0.1`` (a random port) and ``ipc://`` (in a temporary
directory), and UDP unicast to 127.0.0.1. The expected output is decided by the reference
(:meth:`bitsift.Subscription.matches`), never by the filter.

ZeroMQ's slow joiner: a SUB socket's subscription reaches the publisher some time after it
connects, and messages published before that are lost. So each test first publishes probes until
one arrives, then a sync marker, and only then the stream. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bitsift.filters import ReceiverFilter, WireLimits
from bitsift.filters.receivers import ReceiverError, UdpReceiver, ZmqReceiver, multicast_request
from bitsift.models import Subscription
from bitsift.samples import w3_messages, w3_subscriptions

zmq = pytest.importorskip("zmq")

TIMEOUT = 10.0
"""The longest any one wait in these tests may take, in seconds."""
PROBE_TOPIC = "control.probe"


def _subscriptions(topic_less: bool = True) -> list[Subscription]:
    """A W3 mix, plus the control topic used for probes and markers."""
    subscriptions = w3_subscriptions(150, seed=11)
    if not topic_less:
        # Only patterns that start with a literal word: ZeroMQ can prefilter on those.
        subscriptions = [s for s in subscriptions if s.topic and s.topic[0] not in "*#"]
    return [*subscriptions, Subscription(id="control", topic="control.#")]


def _stream(count: int = 300) -> list[tuple[str, dict[str, Any]]]:
    return list(w3_messages(count, seed=12))


def _expected(
    subscriptions: list[Subscription], stream: list[tuple[str, dict[str, Any]]]
) -> list[tuple[str, dict[str, Any]]]:
    return [
        (topic, properties)
        for topic, properties in stream
        if any(subscription.matches(properties, topic) for subscription in subscriptions)
    ]


# -- ZeroMQ --------------------------------------------------------------------------------------


@pytest.fixture
def context() -> Iterator[Any]:
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


def _frames(topic: str, properties: dict[str, Any], body: bytes = b"") -> list[bytes]:
    return [topic.encode(), json.dumps(properties).encode(), body]


def _control(kind: str) -> list[bytes]:
    return _frames(PROBE_TOPIC, {"control": kind})


def _join(publisher: Any, receiver: ZmqReceiver) -> None:
    """Publish probes until one arrives, then a sync marker; return when the marker is read."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        assert time.monotonic() < deadline, "the SUB socket never received a probe"
        publisher.send_multipart(_control("probe"))
        message = receiver.receive(timeout=0.05)
        if message is not None and message.topic == PROBE_TOPIC:
            break
    publisher.send_multipart(_control("sync"))
    _read_until(receiver, "sync")


def _read_until(receiver: ZmqReceiver, marker: str) -> list[Any]:
    """The messages before the control message ``marker`` (probes left out)."""
    received: list[Any] = []
    deadline = time.monotonic() + TIMEOUT
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"the {marker!r} marker never arrived"
        message = receiver.receive(timeout=remaining)
        if message is None:
            continue
        if message.topic == PROBE_TOPIC:
            if message.properties.get("control") == marker:
                return received
            continue
        received.append(message)


def _malformed_frames(limits: WireLimits) -> list[list[bytes]]:
    deep: Any = 1
    for _ in range(limits.max_json_depth + 5):
        deep = [deep]
    return [
        [b"nyse.us.X"],  # one frame
        [b"nyse.us.X", b"{}"],  # two frames
        [b"nyse.us.X", b"{}", b"", b"extra"],  # four frames
        [b"nyse.us.X", b"{not json", b""],
        [b"nyse.us.X", b"[1, 2, 3]", b""],  # JSON, but not an object
        [b"\xff\xfe", b"{}", b""],  # topic not UTF-8
        [b"nyse.us.X", b'{"price": "\xff"}', b""],  # properties not UTF-8
        [b"nyse.us.X", json.dumps({"deep": deep}).encode(), b""],
        [b"nyse.us.X", b'{"pad": "' + b"x" * (limits.max_properties_bytes + 1) + b'"}', b""],
    ]


def _check_zmq_stream(context: Any, bind_endpoint: str, topic_less: bool) -> None:
    subscriptions = _subscriptions(topic_less)
    stream = _stream()
    limits = WireLimits(max_properties_bytes=4096, max_json_depth=8)
    publisher = context.socket(zmq.PUB)
    publisher.setsockopt(zmq.LINGER, 0)
    publisher.setsockopt(zmq.SNDHWM, 0)
    publisher.bind(bind_endpoint)
    endpoint = publisher.getsockopt(zmq.LAST_ENDPOINT).decode()
    receiver_filter = ReceiverFilter(subscriptions, refine_after=16)
    with ZmqReceiver(receiver_filter, endpoint, context=context, limits=limits) as receiver:
        if topic_less:
            assert receiver.prefixes == (b"",)
        else:
            assert b"" not in receiver.prefixes
        _join(publisher, receiver)
        before = receiver_filter.counters
        malformed = _malformed_frames(limits)
        for number, (topic, properties) in enumerate(stream):
            publisher.send_multipart(_frames(topic, properties, body=b"\x00body%d" % number))
            if number % 30 == 0:
                publisher.send_multipart(malformed[(number // 30) % len(malformed)])
        publisher.send_multipart(_control("end"))
        received = _read_until(receiver, "end")
        after = receiver_filter.counters
    publisher.close()
    expected = _expected(subscriptions, stream)
    assert [(m.topic, m.properties) for m in received] == expected
    # Bodies are passed through untouched.
    numbers = {json.dumps(p, sort_keys=True): n for n, (_, p) in enumerate(stream)}
    for message in received:
        assert (
            message.body == b"\x00body%d" % numbers[json.dumps(message.properties, sort_keys=True)]
        )
    sent_malformed = len(range(0, len(stream), 30))
    if topic_less:  # everything gets through ZeroMQ, so every malformed message is counted
        assert after.malformed - before.malformed == sent_malformed
        assert after.seen - before.seen == len(stream) + sent_malformed + 1
    assert after.accepted - before.accepted == len(expected) + 1  # and the end marker


def test_zmq_tcp_loopback(context: Any) -> None:
    _check_zmq_stream(context, "tcp://127.0.0.1:*", topic_less=True)


def test_zmq_ipc_with_prefix_subscriptions(context: Any, tmp_path: Path) -> None:
    _check_zmq_stream(context, f"ipc://{tmp_path}/feed", topic_less=False)


def test_zmq_prefixes_keep_unwanted_topics_out(context: Any) -> None:
    receiver_filter = ReceiverFilter([Subscription(id="fx", topic="forex.*", selector="p > 1")])
    publisher = context.socket(zmq.PUB)
    publisher.setsockopt(zmq.LINGER, 0)
    publisher.bind("tcp://127.0.0.1:*")
    endpoint = publisher.getsockopt(zmq.LAST_ENDPOINT).decode()
    with ZmqReceiver(receiver_filter, endpoint, context=context) as receiver:
        assert receiver.prefixes == (b"forex.",)
        deadline = time.monotonic() + TIMEOUT
        got = None
        while got is None:
            assert time.monotonic() < deadline
            publisher.send_multipart(_frames("bonds.x", {"p": 5}))  # ZeroMQ drops these
            publisher.send_multipart(_frames("forex.eur", {"p": 5}, b"b"))
            got = receiver.receive(timeout=0.05)
        assert got.topic == "forex.eur" and got.body == b"b"
    publisher.close()
    # Nothing on another prefix ever reached the filter.
    assert receiver_filter.dropped == 0


def test_zmq_bad_endpoint_is_a_clear_error(context: Any) -> None:
    with pytest.raises(ReceiverError, match="cannot connect"):
        ZmqReceiver(ReceiverFilter([]), "nonsense://x", context=context)


def test_zmq_receive_times_out(context: Any) -> None:
    with ZmqReceiver(ReceiverFilter([]), "tcp://127.0.0.1:*", bind=True, context=context) as r:
        started = time.monotonic()
        assert r.receive(timeout=0.1) is None
        assert time.monotonic() - started < TIMEOUT


# -- UDP -----------------------------------------------------------------------------------------


def _udp_malformed(limits: WireLimits) -> list[bytes]:
    return [
        b"not json",
        b"[1, 2]",
        b'{"topic": 5, "properties": {}}',
        b'{"topic": "a", "properties": [1]}',
        b"\xff\xff",
        b'{"properties": {"pad": "' + b"x" * 3000 + b'"}}',  # over max_datagram below
    ]


async def _udp_round_trip() -> tuple[list[Any], list[tuple[str, dict[str, Any]]], Any, int]:
    subscriptions = _subscriptions()
    stream = _stream(200)
    limits = WireLimits()
    receiver_filter = ReceiverFilter(subscriptions, refine_after=16)
    receiver = await UdpReceiver.open(receiver_filter, "127.0.0.1", 0, max_datagram=2048)
    host, port = receiver.address
    assert host == "127.0.0.1"
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    malformed = _udp_malformed(limits)
    sent_malformed = 0
    received: list[Any] = []
    try:
        for number, (topic, properties) in enumerate(stream):
            datagram = json.dumps({"topic": topic, "properties": properties, "n": number})
            sender.sendto(datagram.encode(), (host, port))
            if number % 20 == 0:
                sender.sendto(malformed[(number // 20) % len(malformed)], (host, port))
                sent_malformed += 1
            if number % 50 == 0:
                await asyncio.sleep(0)  # let the loop read, so the socket buffer never fills
        end = {"topic": PROBE_TOPIC, "properties": {"control": "end"}}
        sender.sendto(json.dumps(end).encode(), (host, port))
        while True:
            message = await receiver.receive(timeout=TIMEOUT)
            assert message is not None, "the end marker never arrived"
            if message.topic == PROBE_TOPIC:
                break
            received.append(message)
    finally:
        sender.close()
        receiver.close()
    return received, _expected(subscriptions, stream), receiver_filter, sent_malformed


def test_udp_unicast_loopback() -> None:
    received, expected, receiver_filter, sent_malformed = asyncio.run(
        asyncio.wait_for(_udp_round_trip(), TIMEOUT * 2)
    )
    assert [(m.topic, m.properties) for m in received] == expected
    assert [json.loads(m.raw)["n"] for m in received] == sorted(
        json.loads(m.raw)["n"] for m in received
    )
    assert receiver_filter.malformed == sent_malformed
    assert receiver_filter.malformed_reasons["oversize"] >= 1


def test_multicast_request_checks_addresses() -> None:
    assert multicast_request("239.0.0.1") == socket.inet_aton("239.0.0.1") + bytes(4)
    with pytest.raises(ReceiverError, match="not an IPv4 multicast"):
        multicast_request("10.0.0.1")
    with pytest.raises(ReceiverError, match="IPv4 addresses"):
        multicast_request("nonsense")
