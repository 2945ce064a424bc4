"""``bitsift filter --subscriptions FILE``: pass on only the messages a local subscription wants.

Input, one of:

* standard input (the default): JSON lines ``{"topic": "...", "properties": {...}}``; each
  accepted line is written to standard output exactly as it came;
* ``--zmq ENDPOINT``: a ZeroMQ SUB socket (connect, or ``--bind``) receiving
  ``[topic, properties JSON, body]`` frames; each accepted message is written as a JSON line
  ``{"topic": ..., "properties": {...}, "body_base64": "..."}``;
* ``--udp HOST:PORT``: UDP datagrams, one JSON message each (``--multicast-group`` joins an IPv4
  group on ``--interface``); each accepted datagram is written as a JSON line.

On exit (end of input, ``--count`` messages, ``--duration`` seconds, or Ctrl-C) the counters go to
standard error, and every ``--stats`` seconds while running. Malformed messages are logged with
their reason and skipped; the exit status is then 1, so that a bad feed is noticed, else 0.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import sys
import time
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bitsift.filters.receiver_filter import ReceiverFilter
    from bitsift.filters.wire import Message, WireLimits

__all__ = ["register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--subscriptions", "-s", required=True, metavar="FILE", help="subscription file"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--zmq", metavar="ENDPOINT", help="read a ZeroMQ feed, e.g. tcp://127.0.0.1:5556"
    )
    source.add_argument("--udp", metavar="HOST:PORT", help="read UDP datagrams, e.g. 0.0.0.0:9999")
    parser.add_argument(
        "--bind", action="store_true", help="with --zmq: bind the endpoint instead of connecting"
    )
    parser.add_argument(
        "--multicast-group", metavar="GROUP", help="with --udp: join this IPv4 multicast group"
    )
    parser.add_argument(
        "--interface",
        default="0.0.0.0",
        metavar="ADDRESS",
        help="with --multicast-group: the local interface address to join on (default: any)",
    )
    parser.add_argument(
        "--stats", type=float, metavar="SECONDS", help="print the counters every SECONDS"
    )
    parser.add_argument(
        "--count", type=int, metavar="N", help="stop after N messages (malformed ones included)"
    )
    parser.add_argument("--duration", type=float, metavar="SECONDS", help="stop after SECONDS")
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=1 << 20,
        metavar="N",
        help="largest message, line or datagram accepted (default: 1 MiB)",
    )


def run(arguments: argparse.Namespace) -> int:
    from bitsift.errors import BitsiftError
    from bitsift.filters.receiver_filter import ReceiverFilter
    from bitsift.filters.wire import WireLimits
    from bitsift.subscription_files import load_subscriptions

    for name in ("count", "duration", "stats"):
        value = getattr(arguments, name)
        if value is not None and value <= 0:
            raise BitsiftError(f"--{name} must be greater than 0, not {value}")
    if arguments.bind and not arguments.zmq:
        raise BitsiftError("--bind goes with --zmq")
    if arguments.multicast_group and not arguments.udp:
        raise BitsiftError("--multicast-group goes with --udp")
    try:
        limits = WireLimits(max_message_bytes=arguments.max_message_bytes)
    except ValueError as error:
        raise BitsiftError(str(error)) from None
    _log_to_stderr()
    receiver_filter = ReceiverFilter(load_subscriptions(arguments.subscriptions))
    print(f"bitsift filter: {_describe(receiver_filter)}", file=sys.stderr)
    clock = _Clock(receiver_filter, arguments)
    try:
        if arguments.zmq:
            _run_zmq(receiver_filter, arguments, limits, clock)
        elif arguments.udp:
            _run_udp(receiver_filter, arguments, limits, clock)
        else:
            _run_lines(receiver_filter, sys.stdin.buffer, limits, clock)
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        _silence_stdout()
    finally:
        clock.report(final=True)
    return 1 if receiver_filter.malformed else 0


def _describe(receiver_filter: ReceiverFilter) -> str:
    return (
        f"{receiver_filter.subscription_count:,} subscriptions, "
        f"{receiver_filter.column_count:,} conjunctions after dropping "
        f"{receiver_filter.subsumed:,} covered by others"
    )


def _log_to_stderr() -> None:
    logger = logging.getLogger("bitsift.filters")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("bitsift filter: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False


def _silence_stdout() -> None:
    # Python flushes stdout at exit; with the reader gone that would raise again.
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


class _Clock:
    """Stats every ``--stats`` seconds, and the ``--count`` / ``--duration`` stopping rules."""

    def __init__(self, receiver_filter: ReceiverFilter, arguments: argparse.Namespace) -> None:
        self.filter = receiver_filter
        self.interval: float | None = arguments.stats
        self.count: int | None = arguments.count
        self.started = time.monotonic()
        self.end = None if arguments.duration is None else self.started + arguments.duration
        self.next_report = None if self.interval is None else self.started + self.interval

    def done(self) -> bool:
        now = time.monotonic()
        if self.next_report is not None and now >= self.next_report:
            self.report()
            assert self.interval is not None
            self.next_report = now + self.interval
        if self.count is not None and self.filter.seen >= self.count:
            return True
        return self.end is not None and now >= self.end

    def wait_limit(self, longest: float = 0.5) -> float:
        """How long a receive may block before the clock needs to look again."""
        now = time.monotonic()
        wait = longest
        for moment in (self.next_report, self.end):
            if moment is not None:
                wait = min(wait, max(0.0, moment - now))
        return wait

    def report(self, final: bool = False) -> None:
        counters = self.filter.counters
        elapsed = max(time.monotonic() - self.started, 1e-9)
        reasons = ", ".join(
            f"{reason}: {count:,}"
            for reason, count in sorted(self.filter.malformed_reasons.items())
        )
        line = f"bitsift filter: {counters} ({counters.seen / elapsed:,.0f} messages/s)"
        if reasons:
            line += f"; malformed by reason: {reasons}"
        if final:
            line += " - done"
        print(line, file=sys.stderr, flush=True)


def _lines(stream: IO[bytes], limit: int) -> Any:
    """Yield ``(line number, line or None when over the limit)``, reading at most ``limit`` + 2
    bytes at a time, so that one endless line cannot take all memory."""
    number = 0
    while True:
        line = stream.readline(limit + 2)
        if not line:
            return
        number += 1
        if len(line) > limit + 1:
            while line and not line.endswith(b"\n"):  # skip the rest of the long line
                line = stream.readline(limit + 2)
            yield number, None
            continue
        yield number, line


def _run_lines(
    receiver_filter: ReceiverFilter, stream: IO[bytes], limits: WireLimits, clock: _Clock
) -> None:
    from bitsift.filters.wire import MalformedMessage, decode_envelope

    output = sys.stdout.buffer
    for number, line in _lines(stream, limits.max_message_bytes):
        if line is None:
            receiver_filter.record_malformed(
                "oversize", f"line {number} is longer than {limits.max_message_bytes:,} bytes"
            )
        elif line.strip():
            try:
                message = decode_envelope(line.strip(), limits)
            except MalformedMessage as error:
                receiver_filter.record_malformed(error.reason, f"line {number}: {error.detail}")
            else:
                if receiver_filter.accepts(message.properties, message.topic):
                    output.write(line if line.endswith(b"\n") else line + b"\n")
                    output.flush()
        if clock.done():
            return


def _message_line(message: Message) -> bytes:
    record: dict[str, Any] = {"topic": message.topic, "properties": message.properties}
    if message.body:
        record["body_base64"] = base64.b64encode(message.body).decode("ascii")
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _run_zmq(
    receiver_filter: ReceiverFilter,
    arguments: argparse.Namespace,
    limits: WireLimits,
    clock: _Clock,
) -> None:
    from bitsift.filters.receivers import ZmqReceiver

    output = sys.stdout.buffer
    with ZmqReceiver(receiver_filter, arguments.zmq, bind=arguments.bind, limits=limits) as feed:
        shown = ", ".join(repr(prefix.decode()) for prefix in feed.prefixes)
        verb = "bound to" if arguments.bind else "connected to"
        print(f"bitsift filter: {verb} {feed.endpoint}, prefixes {shown}", file=sys.stderr)
        while not clock.done():
            message = feed.receive(timeout=clock.wait_limit())
            if message is not None:
                output.write(_message_line(message))
                output.flush()


def _parse_host_port(text: str) -> tuple[str, int]:
    from bitsift.errors import BitsiftError

    host, separator, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not separator or not host or not port_text.isdigit() or not 0 <= int(port_text) < 65_536:
        raise BitsiftError(f"--udp wants HOST:PORT (for example 127.0.0.1:9999), not {text!r}")
    return host, int(port_text)


def _write_datagram(output: IO[bytes], message: Message) -> None:
    raw = message.raw or b""
    if b"\n" in raw or b"\r" in raw:  # keep one message per line
        raw = json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":")).encode()
    output.write(raw + b"\n")
    output.flush()


def _run_udp(
    receiver_filter: ReceiverFilter,
    arguments: argparse.Namespace,
    limits: WireLimits,
    clock: _Clock,
) -> None:
    import asyncio

    from bitsift.filters.receivers import UdpReceiver

    host, port = _parse_host_port(arguments.udp)
    output = sys.stdout.buffer

    async def main() -> None:
        feed = await UdpReceiver.open(
            receiver_filter,
            host,
            port,
            multicast_group=arguments.multicast_group,
            interface=arguments.interface,
            limits=limits,
            max_datagram=min(limits.max_message_bytes, 65_507),
        )
        bound_host, bound_port = feed.address
        print(
            f"bitsift filter: listening on {bound_host}:{bound_port}", file=sys.stderr, flush=True
        )
        try:
            while not clock.done():
                message = await feed.receive(timeout=clock.wait_limit())
                if message is not None:
                    _write_datagram(output, message)
            while not feed.queue.empty():  # accepted before the stop, still waiting
                _write_datagram(output, feed.queue.get_nowait())
        finally:
            feed.close()

    asyncio.run(main())
