"""Route a Spark DataFrame of messages: the index is built once, broadcast once, and matched per
partition over Arrow batches.

The driver parses and validates every subscription and builds the
:class:`~bitsift.SubscriptionIndex` (so a bad selector fails the job before any executor starts),
then broadcasts it. An index pickles as its validated subscriptions and is rebuilt on arrival,
once per Python worker process, not per task. Each partition is matched with ``mapInArrow``:
Arrow record batches go through :class:`~bitsift.index.batch.BatchMatcher`, which classifies
whole columns with numpy and resolves every row with packed bit matrices, instead of calling a
Python UDF once per row.

pyspark is imported inside the functions, never at module level: ``import bitsift`` must work
without Java.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bitsift.errors import BitsiftError
from bitsift.index.batch import BatchMatcher
from bitsift.models import Subscription
from bitsift.pipeline.records import (
    DEFAULT_MAX_RECORD_BYTES,
    Checks,
    process_columns,
    process_json_lines,
    required_kinds,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from bitsift.index.subscriptions import SubscriptionIndex

__all__ = ["PipelineError", "route", "annotate", "tag", "Plan"]


class PipelineError(BitsiftError, ValueError):
    """The pipeline cannot run as asked (a missing column, a bad option)."""


@dataclass(frozen=True)
class Plan:
    """What every executor needs: the index, the bad-record rules and the column names."""

    index: SubscriptionIndex
    checks: Checks
    id_column: str | None
    topic_column: str | None
    json_lines: bool

    def client_of(self) -> dict[str, str | None]:
        return {subscription.id: subscription.client for subscription in self.index}


_WORKER_STATE: dict[int, tuple[Plan, BatchMatcher, dict[str, str | None]]] = {}
"""Per Python worker: the matcher built from each broadcast, so its caches outlive one task."""
_WORKER_STATE_LIMIT = 4


def _index_of(subscriptions: Iterable[Subscription] | SubscriptionIndex) -> SubscriptionIndex:
    from bitsift.index.subscriptions import SubscriptionIndex

    if isinstance(subscriptions, SubscriptionIndex):
        return subscriptions
    return SubscriptionIndex(subscriptions)


def tag(
    df: DataFrame,
    subscriptions: Iterable[Subscription] | SubscriptionIndex,
    *,
    id_column: str | None = "id",
    topic_column: str | None = "topic",
    json_lines: bool = False,
    check_types: bool = True,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
) -> DataFrame:
    """One output row per input row: ``message_id``, ``subscriptions``, ``clients``, ``status``
    (``routed``, ``unmatched`` or ``rejected``), ``reason`` and, for rejected rows, ``record``.

    With ``json_lines=True``, ``df`` has one string column of JSON text per message (what
    ``spark.read.text`` gives); otherwise it has one column per property. This is the stage the
    ``bitsift route`` job runs; :func:`route` and :func:`annotate` are views of it.
    """
    index = _index_of(subscriptions)
    if json_lines:
        if len(df.columns) != 1:
            raise PipelineError(f"JSON input must be one text column, not {df.columns}")
    else:
        missing = [c for c in (id_column,) if c is not None and c not in df.columns]
        if missing:
            raise PipelineError(
                f"the DataFrame has no column {missing[0]!r} (columns: {', '.join(df.columns)}); "
                "pass id_column= to name the message id column"
            )
    plan = Plan(
        index=index,
        checks=Checks(
            required=required_kinds(index) if check_types else {},
            max_record_bytes=max_record_bytes,
            check_types=check_types,
        ),
        id_column=id_column,
        topic_column=topic_column if topic_column in df.columns or json_lines else None,
        json_lines=json_lines,
    )
    return df.mapInArrow(_partition_matcher(df, plan, annotate_column=None), _spark_schema())


def _partition_matcher(
    df: DataFrame, plan: Plan, annotate_column: str | None
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The function ``mapInArrow`` runs on each partition; it closes over one broadcast."""
    broadcast = df.sparkSession.sparkContext.broadcast(plan)

    def match_partition(batches: Iterator[Any]) -> Iterator[Any]:
        matcher, client_of = _worker_state(broadcast)
        current: Plan = broadcast.value
        for batch in batches:
            if current.json_lines:
                outcome = process_json_lines(
                    batch.column(0).to_pylist(),
                    matcher,
                    current.checks,
                    id_field=current.id_column or "id",
                    topic_field=current.topic_column or "topic",
                )
            else:
                outcome = process_columns(
                    batch,
                    matcher,
                    current.checks,
                    id_column=current.id_column,
                    topic_column=current.topic_column,
                )
            if annotate_column is None:
                yield outcome.to_arrow(client_of)
            else:
                yield batch.append_column(annotate_column, outcome.subscription_lists())

    return match_partition


def _worker_state(broadcast: Any) -> tuple[BatchMatcher, dict[str, str | None]]:
    # A reused Python worker loads each broadcast value once and keeps it; keying on the value's
    # identity (the entry keeps it alive) lets the matcher and its caches outlive one task.
    plan: Plan = broadcast.value
    entry = _WORKER_STATE.get(id(plan))
    if entry is None or entry[0] is not plan:
        while len(_WORKER_STATE) >= _WORKER_STATE_LIMIT:  # a long-lived worker, many jobs
            del _WORKER_STATE[next(iter(_WORKER_STATE))]
        entry = _WORKER_STATE[id(plan)] = (plan, BatchMatcher(plan.index), plan.client_of())
    return entry[1], entry[2]


def _spark_schema() -> Any:
    from pyspark.sql.types import ArrayType, StringType, StructField, StructType

    # The Arrow twin of this schema is records.output_schema(); the two must agree.
    return StructType(
        [
            StructField("message_id", StringType()),
            StructField("subscriptions", ArrayType(StringType())),
            StructField("clients", ArrayType(StringType())),
            StructField("status", StringType()),
            StructField("reason", StringType()),
            StructField("record", StringType()),
        ]
    )


def route(
    df: DataFrame,
    subscriptions: Iterable[Subscription] | SubscriptionIndex,
    *,
    id_column: str = "id",
    topic_column: str | None = "topic",
) -> DataFrame:
    """Every ``(message_id, subscription_id)`` pair where the row matches the subscription,
    plus ``client`` when any subscription has one.

    ``df`` has an id column, an optional topic column and one column per message property
    (structs for nested properties, reachable with dotted names; null is NULL). Results are
    exactly :meth:`SubscriptionIndex.match` for each row: no row is rejected here (type checks
    are the job's business), so ``route`` gives the selector language's own answer.
    """
    from pyspark.sql import functions as F

    index = _index_of(subscriptions)
    tagged = tag(
        df,
        index,
        id_column=id_column,
        topic_column=topic_column,
        check_types=False,
        max_record_bytes=None,
    )
    has_clients = any(subscription.client is not None for subscription in index)
    pairs = tagged.select(
        "message_id",
        F.explode(F.arrays_zip("subscriptions", "clients")).alias("pair"),
    )
    columns = [F.col("message_id"), F.col("pair.subscriptions").alias("subscription_id")]
    if has_clients:
        columns.append(F.col("pair.clients").alias("client"))
    return pairs.select(*columns)


def annotate(
    df: DataFrame,
    subscriptions: Iterable[Subscription] | SubscriptionIndex,
    *,
    topic_column: str | None = "topic",
    column: str = "subscriptions",
    id_column: str | None = "id",
) -> DataFrame:
    """``df`` with one more column, ``subscriptions``: the sorted ids each row matches (empty when
    none). The id and topic columns are not message properties; every other column is.
    """
    from pyspark.sql.types import ArrayType, StringType, StructField, StructType

    if column in df.columns:
        raise PipelineError(f"the DataFrame already has a column {column!r}; pass column=")
    plan = Plan(
        index=_index_of(subscriptions),
        checks=Checks(max_record_bytes=None, check_types=False),
        id_column=id_column if id_column in df.columns else None,
        topic_column=topic_column if topic_column in df.columns else None,
        json_lines=False,
    )
    schema = StructType([*df.schema.fields, StructField(column, ArrayType(StringType()))])
    return df.mapInArrow(_partition_matcher(df, plan, annotate_column=column), schema)
