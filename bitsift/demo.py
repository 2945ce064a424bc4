"""``python -m bitsift.demo``: route the bundled W3 sample through local Spark (``make demo``).

On first run it generates a deterministic sample (200,000 W3 messages as JSON lines and 1,000
subscriptions, see :mod:`bitsift.samples`) under ``data/demo/``, plus a handful of deliberately bad
lines so the dead-letter output has something to show. Then it runs ``bitsift route`` on it
with local Spark and prints the summary. Later runs reuse the sample and replace the output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bitsift.errors import BitsiftError

__all__ = ["main", "prepare"]

BAD_LINES = (
    '{"id": "bad-1", "topic": "nyse.us.ABCD", "price": "cheap", "symbol": "ABCD"}',
    '{"id": "bad-2", "topic": "nyse.us.ABCD", "symbol": "ABCD", "price": 12.5',
    '["not", "an", "object"]',
    '{"topic": "lse.gb.WXYZ", "symbol": "WXYZ"}',
)
"""A wrong type, a truncated line, a non-object and a record without an id: four dead letters."""


def prepare(directory: Path, messages: int, subscriptions: int, seed: int) -> tuple[Path, Path]:
    """Write the sample once (same seed, same files); return (messages, subscriptions) paths."""
    from bitsift.samples import write_w3_messages, write_w3_subscriptions

    directory.mkdir(parents=True, exist_ok=True)
    message_path = directory / f"w3-{messages}-{seed}.jsonl"
    subscription_path = directory / f"w3-subscriptions-{subscriptions}-{seed}.json"
    if not message_path.exists():
        print(f"generating {messages:,} W3 messages -> {message_path}", file=sys.stderr)
        temporary = write_w3_messages(directory / "messages.tmp.jsonl", messages, seed)
        with temporary.open("a", encoding="utf-8") as output:
            output.write("\n".join(BAD_LINES) + "\n")
        temporary.replace(message_path)
    if not subscription_path.exists():
        print(
            f"generating {subscriptions:,} W3 subscriptions -> {subscription_path}", file=sys.stderr
        )
        write_w3_subscriptions(subscription_path, subscriptions, seed + 1)
    return message_path, subscription_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bitsift.demo", description=__doc__)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--subscriptions", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--data", default="data/demo", help="where the sample lives")
    parser.add_argument("--output", default="out/demo", help="where the routed output goes")
    parser.add_argument("--master", default="local[2]")
    arguments = parser.parse_args(argv)
    try:
        message_path, subscription_path = prepare(
            Path(arguments.data), arguments.messages, arguments.subscriptions, arguments.seed
        )
    except (OSError, BitsiftError) as error:
        print(f"bitsift demo: cannot prepare the sample: {error}", file=sys.stderr)
        return 2
    from bitsift.cli.route_command import main as route

    return route(
        [
            "--subscriptions",
            str(subscription_path),
            "--input",
            str(message_path),
            "--output",
            arguments.output,
            "--master",
            arguments.master,
            "--overwrite",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
