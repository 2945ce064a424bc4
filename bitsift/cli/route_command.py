"""``bitsift route``: route a recorded message dataset through Spark (the main job).

Reads JSON lines or Parquet, writes the matches as Parquet partitioned by subscription (or one
pair table), bad records to ``rejected/`` with a reason, and prints a summary: rows, matches, top
subscriptions, rejected rows, time and rows per second. Exit status 0 when the run succeeded and
every row is accounted for, 3 when the accounting does not add up (a bug: please report it).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run", "main"]


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--subscriptions", required=True, metavar="FILE", help="subscription file (JSON or YAML)"
    )
    parser.add_argument(
        "--input",
        required=True,
        nargs="+",
        metavar="PATH",
        help="JSON-lines files or Parquet files/directories (local paths or Spark URLs)",
    )
    parser.add_argument("--output", required=True, metavar="DIR", help="output directory")
    parser.add_argument(
        "--master",
        metavar="URL",
        help="Spark master (local[4], spark://host:7077, yarn, k8s://...); "
        "default: whatever spark-submit says, else local[*]",
    )
    parser.add_argument(
        "--format",
        choices=["json", "parquet"],
        help="input format (default: parquet for .parquet paths, else json)",
    )
    parser.add_argument(
        "--layout",
        choices=["partitioned", "pairs"],
        default="partitioned",
        help="matches partitioned by subscription_id (default) or one pair table",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the output directory if it exists"
    )
    parser.add_argument("--id-field", default="id", help="message id field/column (default: id)")
    parser.add_argument(
        "--topic-field", default="topic", help="topic field/column (default: topic)"
    )
    parser.add_argument(
        "--max-record-bytes",
        type=int,
        default=1 << 20,
        metavar="N",
        help="reject records larger than N bytes (default: 1 MiB)",
    )
    parser.add_argument(
        "--no-type-check",
        action="store_true",
        help="do not reject records whose property types differ from what the selectors test",
    )
    parser.add_argument("--top", type=int, default=10, help="how many top subscriptions to show")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")


def run(arguments: argparse.Namespace) -> int:
    from bitsift.pipeline.job import run_route_job
    from bitsift.pipeline.session import local_session
    from bitsift.subscription_files import load_subscriptions

    subscriptions = load_subscriptions(arguments.subscriptions)
    if not arguments.quiet:
        print(
            f"bitsift route: {len(subscriptions):,} subscriptions from {arguments.subscriptions}; "
            "starting Spark...",
            file=sys.stderr,
            flush=True,
        )
    spark = local_session(arguments.master, progress=not arguments.quiet and sys.stderr.isatty())
    summary = run_route_job(
        spark,
        subscriptions,
        arguments.input,
        arguments.output,
        input_format=arguments.format,
        layout=arguments.layout,
        overwrite=arguments.overwrite,
        id_field=arguments.id_field,
        topic_field=arguments.topic_field,
        check_types=not arguments.no_type_check,
        max_record_bytes=arguments.max_record_bytes,
        top=arguments.top,
        quiet=arguments.quiet,
    )
    print(summary.render())
    if not summary.balanced:
        print(
            "bitsift route: row accounting does not add up (see the check line above); "
            "this is a bug in bitsift, please report it with this summary",
            file=sys.stderr,
        )
        return 3
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run ``bitsift route`` with these arguments, reporting errors as the dispatcher does."""
    from bitsift.errors import BitsiftError

    parser = argparse.ArgumentParser(prog="bitsift route", description=__doc__)
    register(parser)
    arguments = parser.parse_args(argv)
    try:
        return run(arguments)
    except BitsiftError as error:
        print(f"bitsift route: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bitsift route: interrupted", file=sys.stderr)
        return 130
