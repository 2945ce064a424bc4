"""The per-batch stage of the pipeline, without Spark: bad-record rules and row accounting."""

from __future__ import annotations

import json

import pyarrow
from hypothesis import given
from hypothesis import strategies as st

from bitsift import Subscription, SubscriptionIndex
from bitsift.index.batch import BatchMatcher
from bitsift.index.criteria import Kind
from bitsift.pipeline.records import Checks, process_columns, process_json_lines, required_kinds

SUBSCRIPTIONS = [
    Subscription(id="cheap", selector="price < 50"),
    Subscription(id="eu", selector="region = 'eu' AND flag", topic="fx.#", client="desk"),
    Subscription(id="mixed", selector="a = 1 OR a = 'x'"),
]


def matcher() -> BatchMatcher:
    return BatchMatcher(SubscriptionIndex(SUBSCRIPTIONS))


def test_required_kinds_come_from_what_selectors_test() -> None:
    kinds = required_kinds(SUBSCRIPTIONS)
    assert kinds == {"price": Kind.NUMBER, "region": Kind.STRING, "flag": Kind.BOOLEAN}


def test_json_lines_are_checked_and_every_row_accounted() -> None:
    lines = [
        '{"id": "1", "price": 10}',
        '{"id": 2, "topic": "fx.eur", "region": "eu", "flag": true, "price": 70}',
        '{"id": "3", "price": "ten"}',
        '{"id": "4", "a": "x", "price": null}',
        "not json",
        None,
        '{"id": true}',
        '{"id": "8", "region": "eu", "flag": "yes"}',
        '{"id": "9", "price": 1, "pad": "' + "x" * 500 + '"}',
    ]
    checks = Checks(required=required_kinds(SUBSCRIPTIONS), max_record_bytes=300)
    outcome = process_json_lines(lines, matcher(), checks)
    assert outcome.message_ids[:4] == ["1", "2", "3", "4"]
    assert outcome.status == [
        "routed",
        "routed",
        "rejected",
        "routed",
        "rejected",
        "rejected",
        "rejected",
        "rejected",
        "rejected",
    ]
    matched = outcome.pairs.per_row()
    assert matched[:4] == [{"cheap"}, {"eu"}, set(), {"mixed"}]
    assert matched[4:] == [frozenset()] * 5
    reasons = outcome.reasons
    assert reasons[2] is not None and "'price' is \"ten\"" in reasons[2]
    assert reasons[4] is not None and reasons[4].startswith("not valid JSON")
    assert reasons[6] == "'id' must be a string or an integer"
    assert reasons[7] is not None and "as a boolean" in reasons[7]
    assert reasons[8] is not None and "over the limit of 300" in reasons[8]
    assert outcome.records[2] == lines[2]
    batch = outcome.to_arrow({"eu": "desk"})
    assert batch.column("clients").to_pylist()[1] == ["desk"]
    assert batch.num_rows == len(lines)


def test_type_checks_can_be_turned_off() -> None:
    outcome = process_json_lines(
        ['{"id": "3", "price": "ten"}'], matcher(), Checks(check_types=False)
    )
    assert outcome.status == ["unmatched"]


def test_typed_columns_of_the_wrong_type_reject_their_non_null_rows() -> None:
    batch = pyarrow.record_batch(
        {
            "id": pyarrow.array([1, 2, 3]),
            "topic": pyarrow.array(["fx.a", None, "fx.b"]),
            "price": pyarrow.array(["1", None, "3"]),
            "region": pyarrow.array(["eu", "eu", "us"]),
            "flag": pyarrow.array([True, True, None]),
        }
    )
    checks = Checks(required=required_kinds(SUBSCRIPTIONS))
    outcome = process_columns(batch, matcher(), checks)
    assert outcome.message_ids.to_pylist() == ["1", "2", "3"]
    assert outcome.status == ["rejected", "unmatched", "rejected"]
    assert outcome.reasons[0] is not None and "column of type string" in outcome.reasons[0]
    assert outcome.records[0] is not None and json.loads(outcome.records[0])["price"] == "1"
    unchecked = process_columns(batch, matcher(), Checks(check_types=False))
    assert unchecked.pairs.per_row() == [{"eu"}, set(), set()]


@given(st.lists(st.sampled_from(['{"id": "1", "price": 1}', "{", '{"id": "x"}', "[]"])))
def test_every_line_gets_exactly_one_status(lines: list[str]) -> None:
    outcome = process_json_lines(lines, matcher(), Checks())
    assert len(outcome.status) == len(lines)
    assert outcome.to_arrow({}).num_rows == len(lines)
    assert set(outcome.status) <= {"routed", "unmatched", "rejected"}
