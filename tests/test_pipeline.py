"""The Spark pipeline gives, row for row, what ``SubscriptionIndex.match`` gives, and loses no row.

One local[2] Spark session serves the whole module (starting Spark costs seconds). Hypothesis
draws few examples here: each one is a Spark job; the batch matcher underneath is tested much
harder, without Spark, in tests/test_batch_matcher.py. Skipped with a clear reason when there is
no Java 17+.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow
import pyarrow.parquet
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batch_matcher import TOPICS, arrow_tables, subscription_sets

from bitsift import Subscription, SubscriptionIndex
from bitsift.pipeline import PipelineError, annotate, route, tag
from bitsift.pipeline.session import java_version
from bitsift.samples import (
    w3_arrow_schema,
    w3_records,
    w3_subscriptions,
    write_w3_subscriptions,
)

pytestmark = pytest.mark.spark

W3_SCHEMA = w3_arrow_schema()


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    version = java_version()
    if version is None or version < 17:
        pytest.skip(f"Spark needs Java 17+ (found {version or 'none'}); see docs/spark.md")
    from bitsift.pipeline import local_session

    session = local_session("local[2]", shuffle_partitions=2)
    yield session
    session.stop()  # frees the JVM's memory for the rest of the suite


def w3_table(count: int, seed: int) -> pyarrow.Table:
    return pyarrow.Table.from_pylist(list(w3_records(count, seed)), schema=W3_SCHEMA)


@settings(max_examples=6, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subscription_sets(), arrow_tables(), st.data())
def test_route_equals_the_library(
    spark: Any, subs: list[Subscription], table: pyarrow.Table, data: st.DataObject
) -> None:
    topics = data.draw(st.lists(st.sampled_from(TOPICS), min_size=len(table), max_size=len(table)))
    rows = table.to_pylist()
    index = SubscriptionIndex(subs)
    expected = {
        (str(number), subscription_id)
        for number, (row, topic) in enumerate(zip(rows, topics, strict=True))
        for subscription_id in index.match(row, topic)
    }
    with_ids = table.append_column("id", pyarrow.array([str(n) for n in range(len(table))]))
    with_ids = with_ids.append_column("topic", pyarrow.array(topics, pyarrow.string()))
    df = spark.createDataFrame(with_ids).repartition(2)
    found = {(row.message_id, row.subscription_id) for row in route(df, index).collect()}
    assert found == expected


def test_route_w3_with_clients_and_other_column_names(spark: Any) -> None:
    subs = w3_subscriptions(200, seed=21)
    index = SubscriptionIndex(subs)
    table = w3_table(3_000, seed=22)
    renamed = table.rename_columns(["key", "routing_key", *table.column_names[2:]])
    df = spark.createDataFrame(renamed).repartition(3)
    result = route(df, subs, id_column="key", topic_column="routing_key")
    assert result.columns == ["message_id", "subscription_id", "client"]
    found = {(r.message_id, r.subscription_id, r.client) for r in result.collect()}
    client_of = {sub.id: sub.client for sub in subs}
    expected = set()
    for record in table.to_pylist():
        properties = {k: v for k, v in record.items() if k not in ("id", "topic")}
        for subscription_id in index.match(properties, record["topic"]):
            expected.add((record["id"], subscription_id, client_of[subscription_id]))
    assert found == expected
    assert len(expected) > 100


def test_annotate_adds_a_sorted_array_column(spark: Any) -> None:
    subs = [
        Subscription(id="b-cheap", selector="price < 100"),
        Subscription(id="a-nested", selector="detail.state = 'up'", topic="fx.#"),
    ]
    schema = "id string, topic string, price double, detail struct<state: string>"
    df = spark.createDataFrame(
        [
            ("1", "fx.usd", 50.0, {"state": "up"}),
            ("2", None, 50.0, {"state": "up"}),
            ("3", "fx", None, None),
        ],
        schema,
    )
    rows = annotate(df, subs).orderBy("id").collect()
    assert [row.subscriptions for row in rows] == [["a-nested", "b-cheap"], ["b-cheap"], []]
    assert rows[0].price == 50.0 and rows[0].detail.state == "up"


def test_bad_json_records_go_to_dead_letters_and_every_row_is_counted(
    spark: Any, tmp_path: Path
) -> None:
    good = [json.dumps(record) for record in w3_records(500, seed=31)]
    bad = [
        '{"id": "b1", "price": "cheap"}',  # price is a number to every selector
        '{"id": "b2", "price": 5',  # truncated
        "[1, 2]",  # not an object
        '{"topic": "x"}',  # no id
        '{"id": "b5", "topic": 7}',  # topic not a string
        '{"id": "b6", "symbol": "' + "X" * 3_000 + '"}',  # over the size limit below
        "",  # an empty line is a record too
    ]
    path = tmp_path / "messages.jsonl"
    path.write_text("\n".join(good[:250] + bad + good[250:]) + "\n")
    subs = w3_subscriptions(100, seed=32)
    tagged = tag(spark.read.text(str(path)), subs, json_lines=True, max_record_bytes=2_000)
    rows = tagged.collect()
    assert len(rows) == len(good) + len(bad)
    rejected = sorted(
        (row.message_id or "", row.reason) for row in rows if row.status == "rejected"
    )
    assert len(rejected) == len(bad)
    by_id = dict(rejected)
    assert "test it as a number" in by_id["b1"]
    assert "must be a string" in by_id["b5"]
    reasons = " | ".join(reason for _, reason in rejected)
    for expected_reason in (
        "JSON object",
        "has no 'id'",
        "over the limit",
        "not valid JSON: Expecting ',' delimiter",
        "not valid JSON: Expecting value",
    ):
        assert expected_reason in reasons
    # The good rows are routed exactly as the library routes them.
    index = SubscriptionIndex(subs)
    for row in rows:
        if row.status == "rejected":
            assert row.record is not None and not row.subscriptions
            continue
        record = json.loads(good[int(row.message_id[1:])])
        properties = {k: v for k, v in record.items() if k not in ("id", "topic")}
        assert set(row.subscriptions) == index.match(properties, record["topic"])
        assert row.status == ("routed" if row.subscriptions else "unmatched")


def test_route_command_end_to_end(spark: Any, tmp_path: Path) -> None:
    from bitsift.cli.route_command import main

    records = list(w3_records(2_000, seed=41))
    messages = tmp_path / "in.jsonl"
    messages.write_text("".join(json.dumps(r) + "\n" for r in records) + "{oops\n")
    subscriptions = write_w3_subscriptions(tmp_path / "subs.json", 150, seed=42)
    output = tmp_path / "out"
    status = main(
        [
            "--subscriptions",
            str(subscriptions),
            "--input",
            str(messages),
            "--output",
            str(output),
            "--quiet",
        ]
    )
    assert status == 0
    summary = json.loads((output / "summary.json").read_text())
    assert summary["rows_in"] == 2_001 and summary["rejected"] == 1
    assert summary["routed"] + summary["unmatched"] == 2_000
    # Matches are partitioned by subscription and equal the library's.
    table = pyarrow.parquet.read_table(output / "matches")
    found = {(row["message_id"], str(row["subscription_id"])) for row in table.to_pylist()}
    index = SubscriptionIndex(w3_subscriptions(150, seed=42))
    expected = {
        (r["id"], s)
        for r in records
        for s in index.match({k: v for k, v in r.items() if k not in ("id", "topic")}, r["topic"])
    }
    assert found == expected
    assert summary["matches"] == len(expected)
    dead = [
        json.loads(line)
        for part in (output / "rejected").glob("*.json")
        for line in part.read_text().splitlines()
    ]
    assert [letter["record"] for letter in dead] == ["{oops"]
    # Parquet in, pair table out; an existing output directory needs --overwrite.
    parquet = tmp_path / "in.parquet"
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(records, schema=W3_SCHEMA), parquet)
    common = ["--subscriptions", str(subscriptions), "--input", str(parquet), "--quiet"]
    assert main([*common, "--output", str(output), "--layout", "pairs"]) == 2
    assert main([*common, "--output", str(output), "--layout", "pairs", "--overwrite"]) == 0
    pairs = pyarrow.parquet.read_table(output / "matches").to_pylist()
    assert {(p["message_id"], p["subscription_id"]) for p in pairs} == expected


def test_a_missing_id_column_is_a_clear_error(spark: Any) -> None:
    df = spark.createDataFrame([("x", 1.0)], "key string, price double")
    with pytest.raises(PipelineError, match="no column 'id'.*pass id_column="):
        route(df, [Subscription(id="s", selector="price > 0")])
    with pytest.raises(PipelineError, match="already has a column 'price'"):
        annotate(df, [Subscription(id="s")], column="price")
