"""W5 `spark`: batch routing of W3 messages, bitsift's pipeline against the plain Spark SQL way.

Same local[2] Spark session, same input: W3 messages written as JSON lines, read once with an
explicit schema and cached. bitsift runs :func:`bitsift.pipeline.route` (one broadcast index, Arrow
batches through the batch matcher); the baseline is what one writes without bitsift, one
``df.filter(F.expr(selector))`` per subscription, unioned. Both outputs are forced with Spark's
``noop`` sink and timed end to end (planning included), then checked equal: per subscription, the
count and the sum of ``xxhash64(message_id)`` of its matches.

Which subscriptions: W3 subscriptions **without a topic pattern** (Spark SQL has no AMQP
matching). Everything else in W3 means the same in Spark SQL as in JMS with these column types:
three-valued logic, ``NOT x IN (...)``, ``BETWEEN`` inclusive, ``LIKE 'X%'`` on letters (no
escape), a boolean column as a condition, ``price * qty`` in double arithmetic. The pipeline is
also checked against the reference evaluator on a sample of rows.

A second part times the batch matcher alone against the single-message loop
(``SubscriptionIndex.match`` per message) on one core: that ratio is the per-core speedup.
"""

from __future__ import annotations

import tempfile
import time
from functools import reduce
from pathlib import Path
from typing import Any

from benchmarks.harness import Result, peak_rss_mb
from bitsift import SubscriptionIndex
from bitsift.index.batch import BatchMatcher
from bitsift.models import Subscription
from bitsift.samples import w3_arrow_schema, w3_messages, w3_subscriptions, write_w3_messages

SCHEMA = (
    "id string, topic string, symbol string, exchange string, side string, price double, "
    "qty long, region string, urgent boolean"
)
SIZES = (10, 100, 1_000)


def untopical_subscriptions(count: int, seed: int = 55) -> list[Subscription]:
    """``count`` W3 subscriptions without a topic pattern (see the module docstring)."""
    chosen: list[Subscription] = []
    pool = w3_subscriptions(count * 2 + 50, seed=seed, clients=0)
    for subscription in pool:
        if subscription.topic is None:
            chosen.append(subscription)
            if len(chosen) == count:
                return chosen
    raise AssertionError("the W3 pool had too few subscriptions without a topic")


def spark_sql_way(df: Any, subscriptions: list[Subscription]) -> Any:
    """The baseline: one filter per subscription, unioned."""
    from pyspark.sql import functions as F

    parts = [
        df.filter(F.expr(subscription.selector or "TRUE")).select(
            F.col("id").alias("message_id"), F.lit(subscription.id).alias("subscription_id")
        )
        for subscription in subscriptions
    ]
    return reduce(lambda left, right: left.unionAll(right), parts)


def fingerprint(pairs: Any) -> dict[str, tuple[int, int]]:
    """Per subscription: (matches, sum of message id hashes); equal outputs give equal ones."""
    from pyspark.sql import functions as F

    rows = (
        pairs.groupBy("subscription_id")
        .agg(
            F.count("*").alias("n"),
            F.sum(F.pmod(F.xxhash64("message_id"), F.lit(2**31 - 1))).alias("h"),
        )
        .collect()
    )
    return {row["subscription_id"]: (int(row["n"]), int(row["h"])) for row in rows}


def timed_fingerprint(frame: Any) -> tuple[float, dict[str, tuple[int, int]]]:
    """Compute the whole output once (its fingerprint), timed from planning to result."""
    started = time.perf_counter()
    result = fingerprint(frame)
    return time.perf_counter() - started, result


def check_against_reference(df: Any, subscriptions: list[Subscription], sample: int) -> None:
    """The pipeline's pairs for the first ``sample`` rows equal the reference evaluator's."""
    from bitsift.pipeline import route

    rows = df.limit(sample).collect()
    head = df.sparkSession.createDataFrame(rows, df.schema)
    found = {(r.message_id, r.subscription_id) for r in route(head, subscriptions).collect()}
    expected = set()
    for row in rows:
        record = row.asDict()
        properties = {k: v for k, v in record.items() if k not in ("id", "topic") and v is not None}
        for subscription in subscriptions:
            if subscription.parsed_selector.matches(properties):
                expected.add((record["id"], subscription.id))
    if found != expected:
        raise AssertionError(
            f"pipeline differs from the reference on {len(found ^ expected)} pairs"
        )


def spark_results(messages: int, sizes: tuple[int, ...] = SIZES) -> list[Result]:
    from bitsift.pipeline import local_session, route

    results = []
    with tempfile.TemporaryDirectory(prefix="bitsift-w5-") as directory:
        path = Path(directory) / "w3.jsonl"
        print(f"  writing {messages:,} W3 messages as JSON lines", flush=True)
        write_w3_messages(path, messages, seed=2026)
        spark = local_session("local[2]", shuffle_partitions=4)
        # One partition per core: the union baseline pays per task, so this is its best case.
        df = spark.read.schema(SCHEMA).json(str(path)).repartition(2).cache()
        df.count()
        for size in sizes:
            subscriptions = untopical_subscriptions(size)
            check_against_reference(df, subscriptions, sample=300)
            ours = route(df, subscriptions)
            baseline = spark_sql_way(df, subscriptions)
            bitsift_seconds, ours_print = timed_fingerprint(ours)
            print(f"  {size:>5} subscriptions: bitsift {bitsift_seconds:.1f} s", flush=True)
            baseline_seconds, baseline_print = timed_fingerprint(baseline)
            if ours_print != baseline_print:
                raise AssertionError(f"W5 at {size} subscriptions: outputs differ")
            result = Result(
                workload="spark",
                size=f"{messages // 1000}k msgs x {size} subs",
                subject="route()",
                baseline="SQL filters unioned",
                subject_ns=bitsift_seconds * 1e9 / messages,
                baseline_ns=baseline_seconds * 1e9 / messages,
                goal=">= 10x at 1,000 subscriptions" if size == 1_000 else "",
                extra={"bitsift_s": bitsift_seconds, "baseline_s": baseline_seconds},
            )
            if size == 1_000:
                result.met = result.speedup >= 10
            print(
                f"  {size:>5} subscriptions: Spark SQL {baseline_seconds:.1f} s "
                f"({result.speedup:.1f}x), outputs equal",
                flush=True,
            )
            results.append(result)
        df.unpersist()
    return results


def batch_results(messages: int, subscriptions: int = 1_000) -> Result:
    """The batch matcher over Arrow batches of 10,000 rows against the single-message loop."""
    import pyarrow

    index = SubscriptionIndex(w3_subscriptions(subscriptions, seed=57))
    pairs = list(w3_messages(messages, seed=58))
    rows = [properties for _, properties in pairs]
    topics: list[str | None] = [topic for topic, _ in pairs]
    schema = w3_arrow_schema(with_id_and_topic=False)
    table = pyarrow.Table.from_pylist(rows, schema=schema)
    batches = [(table.slice(i, 10_000), topics[i : i + 10_000]) for i in range(0, messages, 10_000)]
    matcher = BatchMatcher(index)
    # Correctness first, on everything: the batch matcher equals the single-message matcher.
    found = [ids for batch, names in batches for ids in matcher.match(batch, names)]
    started = time.perf_counter()
    expected = [  # resolve(): the ids themselves, as the batch matcher gives them
        index.match(properties, topic).resolve()
        for properties, topic in zip(rows, topics, strict=True)
    ]
    loop_seconds = time.perf_counter() - started
    if found != expected:
        raise AssertionError("the batch matcher differs from SubscriptionIndex.match")
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        for batch, names in batches:
            matcher.match_pairs(batch, names)
        timings.append(time.perf_counter() - started)
    batch_seconds = sorted(timings)[1]
    result = Result(
        workload="spark",
        size=f"{messages // 1000}k msgs x {subscriptions} subs, 1 core",
        subject="BatchMatcher (Arrow)",
        baseline="index.match loop",
        subject_ns=batch_seconds * 1e9 / messages,
        baseline_ns=loop_seconds * 1e9 / messages,
        goal=">= 5x messages/s per core",
        extra={
            "matches_per_message": sum(map(len, expected)) / messages,
            "peak_rss_mb": peak_rss_mb(),
        },
    )
    result.met = result.speedup >= 5
    return result


def run(full: bool) -> list[Result]:
    """Quick: 100k messages at 10 and 100 subscriptions (the union baseline at 1,000 runs
    thousands of tasks that each deserialize a 1,000-branch plan: tens of minutes). Full: 1M
    messages at 10, 100 and 1,000."""
    results = [batch_results(100_000 if full else 20_000)]
    print(f"  batch matcher: {results[0].speedup:.1f}x the single-message loop", flush=True)
    if full:
        results.extend(spark_results(1_000_000, SIZES))
    else:
        results.extend(spark_results(100_000, SIZES[:2]))
    return results


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.w5_spark --messages N --sizes 1000``: one custom W5 measurement."""
    import argparse

    from benchmarks.harness import table, write_results

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    arguments = parser.parse_args(argv)
    results = spark_results(arguments.messages, tuple(arguments.sizes))
    write_results(f"spark-{arguments.messages}", results)
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
