"""The ``bitsift`` command: one entry point, one module per subcommand.

Each subcommand lives in its own module (``check``, ``match``, ``filter``, ``route``) that defines
``register(subparsers)`` to add its arguments and a ``run(arguments) -> int`` function. Modules
are imported only when their subcommand runs, so ``bitsift check`` never pays for pyspark or
pyzmq. Every error bitsift raises is printed as one readable message with exit status 2; a
traceback means a bug in bitsift, never bad input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from bitsift.errors import BitsiftError

__all__ = ["main", "SUBCOMMANDS"]

SUBCOMMANDS: dict[str, str] = {
    "check": "validate a subscription file and report every bad entry",
    "match": "print the subscriptions each message (JSON lines) matches",
    "filter": "pass through only the messages some local subscription wants",
    "route": "route a recorded message dataset through Spark (JSON lines or Parquet)",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bitsift",
        description="Content-based message routing: JMS selectors and AMQP/MQTT topic patterns.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, summary in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=summary, description=summary)
        sub.set_defaults(_module=name)
        module = importlib.import_module(f"bitsift.cli.{name}_command")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``bitsift`` command line; returns the exit status."""
    arguments = _parser().parse_args(argv)
    module = importlib.import_module(f"bitsift.cli.{arguments._module}_command")
    try:
        status: int = module.run(arguments)
    except BitsiftError as error:
        print(f"bitsift {arguments.command}: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        name = f" {error.filename}" if error.filename else ""
        print(f"bitsift {arguments.command}: cannot open{name}: {error.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bitsift {arguments.command}: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
