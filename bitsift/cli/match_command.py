"""``bitsift match --subscriptions FILE [MESSAGES]``: which subscriptions does each message match?

Reads JSON lines, one message per line: ``{"topic": "...", "properties": {...}}`` (both keys
optional). Writes one JSON line per message, in order: ``{"line": N, "matches": [ids...]}`` (and
``"clients"`` with ``--clients``). A line that is not a valid message is reported on stderr with
its line number and skipped, and the run ends with status 1 so a bad feed is not missed; it never
stops the lines after it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import IO, Any

__all__ = ["register", "run", "read_messages", "MAX_LINE_BYTES"]

MAX_LINE_BYTES = 1024 * 1024
"""Longest message line accepted (1 MiB); longer lines are reported and skipped."""


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--subscriptions", "-s", required=True, metavar="FILE", help="subscription file"
    )
    parser.add_argument(
        "messages",
        nargs="?",
        default="-",
        metavar="MESSAGES",
        help="JSON-lines file of messages (default: standard input)",
    )
    parser.add_argument(
        "--clients", action="store_true", help="also list each matching client once"
    )


def read_messages(
    stream: IO[str], problems: list[str]
) -> Iterator[tuple[int, str | None, dict[str, Any]]]:
    """Yield ``(line number, topic, properties)``; bad lines go to ``problems`` and are skipped."""
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            problems.append(f"line {number}: longer than {MAX_LINE_BYTES:,} characters")
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as error:
            reason = error.msg if isinstance(error, json.JSONDecodeError) else "nested too deeply"
            problems.append(f"line {number}: not valid JSON: {reason}")
            continue
        if not isinstance(record, dict):
            problems.append(f"line {number}: expected a JSON object, found {type(record).__name__}")
            continue
        topic = record.get("topic")
        properties = record.get("properties", {})
        if topic is not None and not isinstance(topic, str):
            problems.append(f"line {number}: 'topic' must be a string or null")
            continue
        if not isinstance(properties, dict):
            problems.append(f"line {number}: 'properties' must be a JSON object")
            continue
        yield number, topic, properties


def run(arguments: argparse.Namespace) -> int:
    from bitsift.index.subscriptions import SubscriptionIndex
    from bitsift.subscription_files import load_subscriptions

    index = SubscriptionIndex(load_subscriptions(arguments.subscriptions))
    problems: list[str] = []
    bad = 0
    stream = sys.stdin if arguments.messages == "-" else open(arguments.messages, encoding="utf-8")
    try:
        for number, topic, properties in read_messages(stream, problems):
            bad += len(problems)
            while problems:
                print(problems.pop(0), file=sys.stderr)
            output: dict[str, Any] = {
                "line": number,
                "matches": sorted(index.match(properties, topic)),
            }
            if arguments.clients:
                output["clients"] = sorted(index.match_clients(properties, topic))
            print(json.dumps(output, ensure_ascii=False))
    finally:
        if stream is not sys.stdin:
            stream.close()
    bad += len(problems)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if bad else 0
