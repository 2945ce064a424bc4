"""The ``bitsift route`` job: route recorded messages into per-subscription Parquet, account for
every row, and print a summary an operator can read.

Output layout under the output directory::

    matches/subscription_id=<id>/part-*.parquet  message_id, client  (--layout partitioned)
    matches/part-*.parquet                       message_id, subscription_id, client  (pairs)
    rejected/part-*.json                         message_id, reason, record: one per bad row
    summary.json                                 the numbers printed at the end

The tagged stage (one output row per input row, see :mod:`bitsift.pipeline.records`) is computed
once and cached, then read by three actions: writing matches, writing dead letters and counting.
The input is also counted on its own, so the check ``rows in = routed + unmatched + rejected``
compares two independent counts; a mismatch fails the job.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bitsift.pipeline.records import DEFAULT_MAX_RECORD_BYTES
from bitsift.pipeline.routing import PipelineError, tag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from bitsift.models import Subscription

__all__ = ["RouteSummary", "run_route_job", "input_format_of"]

Layout = Literal["partitioned", "pairs"]


@dataclass
class RouteSummary:
    """What a run did; :meth:`render` prints it for people, ``summary.json`` keeps it for tools."""

    inputs: list[str]
    input_format: str
    output: str
    layout: str
    subscriptions: int
    rows_in: int = 0
    routed: int = 0
    unmatched: int = 0
    rejected: int = 0
    matches: int = 0
    top_subscriptions: list[tuple[str, int]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def balanced(self) -> bool:
        return self.rows_in == self.routed + self.unmatched + self.rejected

    @property
    def rows_per_second(self) -> float:
        return self.rows_in / self.seconds if self.seconds > 0 else 0.0

    def render(self) -> str:
        """The summary as aligned text lines."""

        def share(part: int) -> str:
            return f"({100 * part / self.rows_in:5.1f}%)" if self.rows_in else ""

        width = len(f"{self.rows_in:,}")
        shown_inputs = ", ".join(self.inputs[:3]) + (" ..." if len(self.inputs) > 3 else "")
        check = "OK" if self.balanced else "MISMATCH: rows were lost or duplicated"
        lines = [
            f"bitsift route: {self.rows_in:,} rows in {self.seconds:.1f} s "
            f"({self.rows_per_second:,.0f} rows/s) against {self.subscriptions:,} subscriptions",
            f"  input      {self.rows_in:>{width},} rows   {self.input_format}: {shown_inputs}",
            f"  routed     {self.routed:>{width},} rows {share(self.routed)}  "
            f"{self.matches:,} matches -> {self.output}/matches ({self.layout})",
            f"  unmatched  {self.unmatched:>{width},} rows {share(self.unmatched)}",
            f"  rejected   {self.rejected:>{width},} rows {share(self.rejected)}"
            + (f"  reasons in {self.output}/rejected" if self.rejected else ""),
            f"  check      {self.rows_in:,} in = {self.routed:,} routed + {self.unmatched:,} "
            f"unmatched + {self.rejected:,} rejected: {check}",
        ]
        if self.top_subscriptions:
            lines.append("  top subscriptions by matches:")
            id_width = max(len(name) for name, _ in self.top_subscriptions)
            for name, count in self.top_subscriptions:
                lines.append(f"    {name:<{id_width}}  {count:>12,}")
        return "\n".join(lines)


def input_format_of(paths: Sequence[str]) -> str:
    """``parquet`` when every path ends in .parquet (or is a directory of them), else ``json``."""
    for path in paths:
        local = Path(path)
        if local.suffix.lower() == ".parquet":
            continue
        if local.is_dir() and any(local.glob("*.parquet")):
            continue
        return "json"
    return "parquet"


def _step(message: str, started: float, quiet: bool) -> None:
    if not quiet:
        print(f"[{time.perf_counter() - started:6.1f} s] {message}", file=sys.stderr, flush=True)


def run_route_job(
    spark: SparkSession,
    subscriptions: Sequence[Subscription],
    inputs: Sequence[str],
    output: str,
    *,
    input_format: str | None = None,
    layout: Layout = "partitioned",
    overwrite: bool = False,
    id_field: str = "id",
    topic_field: str = "topic",
    check_types: bool = True,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    top: int = 10,
    quiet: bool = False,
) -> RouteSummary:
    """Route ``inputs`` (JSON lines or Parquet) into ``output``; see the module docstring.

    The caller checks :attr:`RouteSummary.balanced` (``bitsift route`` exits with status 3 when
    the row accounting does not add up, after printing the summary).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from bitsift.index.subscriptions import SubscriptionIndex

    started = time.perf_counter()
    if not inputs:
        raise PipelineError("no input paths given")
    if layout not in ("partitioned", "pairs"):
        raise PipelineError(f"layout must be 'partitioned' or 'pairs', not {layout!r}")
    chosen = input_format or input_format_of(inputs)
    if chosen not in ("json", "parquet"):
        raise PipelineError(f"input format must be 'json' or 'parquet', not {chosen!r}")
    output_path = Path(output)
    if "://" not in output and output_path.exists() and any(output_path.iterdir()):
        if not overwrite:
            raise PipelineError(
                f"output directory {output} already exists and is not empty; "
                "choose another one or pass --overwrite"
            )
    for path in inputs:
        if "://" not in path and not Path(path).exists():
            raise PipelineError(f"input {path} does not exist")
    summary = RouteSummary(
        inputs=list(inputs),
        input_format=chosen,
        output=output,
        layout=layout,
        subscriptions=len(subscriptions),
    )
    _step(f"indexing {len(subscriptions):,} subscriptions", started, quiet)
    index = SubscriptionIndex(subscriptions)
    if chosen == "json":
        source = spark.read.text(list(inputs))
    else:
        source = spark.read.parquet(*inputs)
        if id_field not in source.columns:
            raise PipelineError(
                f"the Parquet input has no {id_field!r} column (columns: "
                f"{', '.join(source.columns)}); pass --id-field"
            )
    tagged = tag(
        source,
        index,
        id_column=id_field,
        topic_column=topic_field,
        json_lines=chosen == "json",
        check_types=check_types,
        max_record_bytes=max_record_bytes,
    ).persist(StorageLevel.MEMORY_AND_DISK)
    mode = "overwrite" if overwrite else "errorifexists"
    try:
        _step("counting input rows", started, quiet)
        summary.rows_in = source.count()
        _step(f"routing {summary.rows_in:,} rows and writing matches", started, quiet)
        pairs = tagged.filter(F.col("status") == "routed").select(
            "message_id", F.explode(F.arrays_zip("subscriptions", "clients")).alias("pair")
        )
        pairs = pairs.select(
            "message_id",
            F.col("pair.subscriptions").alias("subscription_id"),
            F.col("pair.clients").alias("client"),
        )
        matches_path = f"{output}/matches"
        if layout == "partitioned":
            # One shuffle so that each subscription's rows land in one task: one file each.
            pairs.repartition("subscription_id").write.mode(mode).partitionBy(
                "subscription_id"
            ).parquet(matches_path)
        else:
            pairs.write.mode(mode).parquet(matches_path)
        _step("writing rejected rows", started, quiet)
        tagged.filter(F.col("status") == "rejected").select(
            "message_id", "reason", "record"
        ).coalesce(1).write.mode(mode).json(f"{output}/rejected")
        _step("counting", started, quiet)
        for row in tagged.groupBy("status").count().collect():
            setattr(summary, row["status"], int(row["count"]))
        per_subscription = (
            tagged.select(F.explode("subscriptions").alias("subscription_id"))
            .groupBy("subscription_id")
            .count()
            .collect()
        )
    finally:
        tagged.unpersist()
    summary.matches = sum(int(row["count"]) for row in per_subscription)
    ranked = sorted(
        ((str(row["subscription_id"]), int(row["count"])) for row in per_subscription),
        key=lambda item: (-item[1], item[0]),
    )
    summary.top_subscriptions = ranked[:top]
    summary.seconds = time.perf_counter() - started
    if "://" not in output:
        (output_path / "summary.json").write_text(json.dumps(asdict(summary), indent=2) + "\n")
    return summary
