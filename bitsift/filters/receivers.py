"""Receivers that feed a :class:`~bitsift.filters.ReceiverFilter` from a real feed.

* :class:`ZmqReceiver`: a ZeroMQ SUB socket. ZeroMQ can only filter on a byte prefix of the first
  frame, so the receiver subscribes to the topic prefixes every wanted message must start with
  (:meth:`ReceiverFilter.topic_prefixes`), or to everything, and lets the filter decide the rest.
  Messages are three frames ``[topic, properties JSON, body]``; the body is passed on untouched.
* :class:`UdpReceiver`: asyncio datagrams, one JSON object ``{"topic": ..., "properties": {...}}``
  per datagram, optionally joining an IPv4 multicast group on a chosen interface.

A malformed message (wrong frame count, bad UTF-8 or JSON, wrong shape, over a size or depth limit
of :class:`~bitsift.filters.wire.WireLimits`) is counted in the filter's ``malformed`` counter and
logged with its reason, and the receiver goes on with the next message: bad input never raises out
of a receiver and never holds up good messages behind it.

pyzmq is imported when a :class:`ZmqReceiver` is made, never by ``import bitsift``.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

from bitsift.errors import BitsiftError
from bitsift.filters.receiver_filter import ReceiverFilter
from bitsift.filters.wire import (
    DEFAULT_LIMITS,
    MalformedMessage,
    Message,
    WireLimits,
    decode_envelope,
    decode_frames,
)

__all__ = ["ZmqReceiver", "UdpReceiver", "ReceiverError", "multicast_request", "MAX_DATAGRAM"]

MAX_DATAGRAM = 65_507
"""The largest UDP payload over IPv4 (65,535 minus the IP and UDP headers)."""


class ReceiverError(BitsiftError, OSError):
    """A receiver that cannot start: a bad endpoint, an address in use, no pyzmq."""


def _import_zmq() -> Any:
    try:
        import zmq
    except ImportError:  # pragma: no cover - pyzmq is in the dev and zmq extras
        raise ReceiverError("the ZeroMQ receiver needs pyzmq: pip install 'bitsift[zmq]'") from None
    return zmq


class ZmqReceiver:
    """Receive ``[topic, properties, body]`` messages on a SUB socket and keep the wanted ones.

    ``endpoint`` is connected to (or bound, with ``bind=True``). Pass ``context`` to share a
    ZeroMQ context (needed for ``inproc://``); otherwise the receiver owns one. ``limits`` bounds
    every message (see :class:`~bitsift.filters.wire.WireLimits`); libzmq itself is told to drop
    connections that send a message over ``max_message_bytes``, so one huge message cannot
    exhaust memory.

    :meth:`receive` returns the next wanted :class:`~bitsift.filters.wire.Message`, or None after
    ``timeout`` seconds; iterating yields wanted messages until :meth:`close`.
    """

    def __init__(
        self,
        receiver_filter: ReceiverFilter,
        endpoint: str,
        *,
        bind: bool = False,
        context: Any = None,
        limits: WireLimits = DEFAULT_LIMITS,
        receive_buffer: int = 100_000,
    ) -> None:
        zmq = _import_zmq()
        self._zmq = zmq
        self.filter = receiver_filter
        self.limits = limits
        self.endpoint = endpoint
        self._own_context = context is None
        self._context = zmq.Context() if context is None else context
        self._socket = self._context.socket(zmq.SUB)
        try:
            self._socket.setsockopt(zmq.LINGER, 0)
            self._socket.setsockopt(zmq.RCVHWM, receive_buffer)
            self._socket.setsockopt(zmq.MAXMSGSIZE, limits.max_message_bytes)
            prefixes = receiver_filter.topic_prefixes()
            self.prefixes: tuple[bytes, ...] = (
                (b"",) if prefixes is None else tuple(p.encode("utf-8") for p in prefixes)
            )
            """What ZeroMQ was asked to let through (``b""`` is everything)."""
            for prefix in self.prefixes:
                self._socket.setsockopt(zmq.SUBSCRIBE, prefix)
            if bind:
                self._socket.bind(endpoint)
                self.endpoint = self._socket.getsockopt(zmq.LAST_ENDPOINT).decode()
            else:
                self._socket.connect(endpoint)
        except zmq.ZMQError as error:
            self.close()
            raise ReceiverError(
                f"cannot {'bind' if bind else 'connect'} {endpoint}: {error}"
            ) from None
        self._closed = False

    @property
    def socket(self) -> Any:
        """The underlying SUB socket (for polling it together with others)."""
        return self._socket

    def receive(self, timeout: float | None = None) -> Message | None:
        """The next message the filter accepts, or None when ``timeout`` seconds pass first.

        ``timeout=None`` waits as long as it takes. Dropped and malformed messages are counted
        and skipped; they do not restart the timeout.
        """
        zmq = self._zmq
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if deadline is None:
                wait_ms = -1
            else:
                wait_ms = max(0, int((deadline - time.monotonic()) * 1000))
            if not self._socket.poll(wait_ms, zmq.POLLIN):
                return None
            message = self.receive_ready()
            if message is not None:
                return message
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def receive_ready(self) -> Message | None:
        """Read the messages already waiting; the first one the filter accepts, or None."""
        zmq = self._zmq
        socket_ = self._socket
        receiver_filter = self.filter
        limits = self.limits
        while True:
            try:
                frames = socket_.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return None
            try:
                message = decode_frames(frames, limits)
            except MalformedMessage as error:
                receiver_filter.record_malformed(error.reason, error.detail)
                continue
            if receiver_filter.accepts(message.properties, message.topic):
                return message

    def __iter__(self) -> Iterator[Message]:
        while not self._closed:
            message = self.receive(timeout=0.5)
            if message is not None:
                yield message

    def close(self) -> None:
        self._closed = True
        self._socket.close(linger=0)
        if self._own_context:
            self._context.term()

    def __enter__(self) -> ZmqReceiver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def multicast_request(group: str, interface: str = "0.0.0.0") -> bytes:
    """The ``ip_mreq`` structure that joins IPv4 multicast ``group`` on ``interface``.

    >>> multicast_request("239.1.2.3", "127.0.0.1").hex()
    'ef0102037f000001'
    """
    try:
        group_bytes = socket.inet_aton(group)
        interface_bytes = socket.inet_aton(interface)
    except OSError:
        raise ReceiverError(
            f"{group!r} / {interface!r}: a multicast group and an interface must be IPv4 addresses"
        ) from None
    if not 224 <= group_bytes[0] <= 239:
        raise ReceiverError(f"{group} is not an IPv4 multicast address (224.0.0.0/4)")
    return struct.pack("4s4s", group_bytes, interface_bytes)


class UdpReceiver(asyncio.DatagramProtocol):
    """Receive JSON datagrams with asyncio and queue the ones the filter accepts.

    ``await UdpReceiver.open(filter, host, port)`` binds the socket (port 0 picks a free one; see
    :attr:`address`). With ``multicast_group``, the socket joins that IPv4 group on
    ``interface`` (an address of a local interface; ``0.0.0.0`` lets the system choose) and binds
    the group's port. Accepted messages wait in a queue of at most ``queue_size``; when the
    consumer falls that far behind, newer datagrams are dropped and counted in
    :attr:`overflowed` (UDP gives no back-pressure, so the choice is between this and unbounded
    memory). Datagrams over ``max_datagram`` bytes are malformed.
    """

    def __init__(
        self,
        receiver_filter: ReceiverFilter,
        *,
        limits: WireLimits = DEFAULT_LIMITS,
        max_datagram: int = MAX_DATAGRAM,
        queue_size: int = 100_000,
    ) -> None:
        self.filter = receiver_filter
        self.limits = limits
        self.max_datagram = max_datagram
        self.queue: asyncio.Queue[Message] = asyncio.Queue(queue_size)
        self.overflowed = 0
        self.transport: asyncio.DatagramTransport | None = None

    @classmethod
    async def open(
        cls,
        receiver_filter: ReceiverFilter,
        host: str,
        port: int,
        *,
        multicast_group: str | None = None,
        interface: str = "0.0.0.0",
        limits: WireLimits = DEFAULT_LIMITS,
        max_datagram: int = MAX_DATAGRAM,
        queue_size: int = 100_000,
    ) -> UdpReceiver:
        """Bind and start receiving."""
        loop = asyncio.get_running_loop()
        sock = _udp_socket(host, port, multicast_group, interface)
        receiver = cls(
            receiver_filter, limits=limits, max_datagram=max_datagram, queue_size=queue_size
        )
        await loop.create_datagram_endpoint(lambda: receiver, sock=sock)
        return receiver

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the socket is bound to."""
        assert self.transport is not None, "the receiver is not open"
        host, port = self.transport.get_extra_info("sockname")[:2]
        return host, port

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        receiver_filter = self.filter
        if len(data) > self.max_datagram:
            receiver_filter.record_malformed(
                "oversize",
                f"a datagram of {len(data):,} bytes from {addr[0]}; "
                f"the limit is {self.max_datagram:,}",
            )
            return
        try:
            message = decode_envelope(data, self.limits)
        except MalformedMessage as error:
            receiver_filter.record_malformed(error.reason, f"{error.detail} (from {addr[0]})")
            return
        if receiver_filter.accepts(message.properties, message.topic):
            try:
                self.queue.put_nowait(message)
            except asyncio.QueueFull:
                self.overflowed += 1

    def error_received(self, exc: Exception) -> None:
        # ICMP errors on an unconnected UDP socket: nothing to do but go on.
        pass

    async def receive(self, timeout: float | None = None) -> Message | None:
        """The next accepted message, or None after ``timeout`` seconds."""
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except asyncio.TimeoutError:
            return None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _udp_socket(host: str, port: int, group: str | None, interface: str) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    except socket.gaierror as error:
        raise ReceiverError(f"cannot resolve {host!r}: {error.strerror}") from None
    family = infos[0][0]
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # A receive buffer big enough for bursts: the kernel drops what does not fit.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        if group is not None:
            request = multicast_request(group, interface)
            sock.bind((group, port))
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, request)
        else:
            sock.bind(infos[0][4])
        sock.setblocking(False)
    except OSError as error:
        sock.close()
        if isinstance(error, ReceiverError):
            raise
        raise ReceiverError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    return sock
