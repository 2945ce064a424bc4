"""``bitsift check FILE...``: validate subscription files before they reach a broker.

Exit status 0 when every file is valid, 1 when any entry is bad (each one is listed with its
entry number, line and what is wrong), so the command fits a CI job or a pre-deploy hook.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="JSON, JSON-lines or YAML file")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="also print how the index reads each selector (one line per conjunction)",
    )


def run(arguments: argparse.Namespace) -> int:
    from bitsift.errors import SubscriptionFileError
    from bitsift.index.derived import explain
    from bitsift.subscription_files import load_subscriptions

    status = 0
    for path in arguments.files:
        try:
            subscriptions = load_subscriptions(path)
        except SubscriptionFileError as error:
            print(str(error), file=sys.stderr)
            status = 1
            continue
        topics = sum(1 for sub in subscriptions if sub.topic is not None)
        selectors = sum(1 for sub in subscriptions if sub.selector)
        clients = len({sub.client for sub in subscriptions if sub.client is not None})
        print(
            f"{path}: OK, {len(subscriptions)} subscriptions "
            f"({selectors} with a selector, {topics} with a topic, "
            f"{clients} client{'' if clients == 1 else 's'})"
        )
        if arguments.explain:
            for sub in subscriptions:
                print(f"  {sub.id}:")
                for line in explain(sub.parsed_selector.ast).splitlines():
                    print(f"    {line}")
    return status
