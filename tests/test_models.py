"""The Subscription model: validation by parsing, errors with positions, schema, pickling."""

from __future__ import annotations

import json
import pickle

import pytest
from pydantic import ValidationError

from bitsift import Subscription


def test_valid_subscription_holds_parsed_forms() -> None:
    sub = Subscription(id="s", selector="a > 1", topic="x.*", client="c")
    assert sub.parsed_selector.matches({"a": 2})
    assert sub.parsed_topic is not None and sub.parsed_topic.matches("x.y")
    assert sub.topic_syntax == "amqp"


def test_no_selector_and_no_topic_matches_everything() -> None:
    sub = Subscription(id="all")
    assert sub.matches({}) and sub.matches({"a": 1}, topic="any.thing")


def test_a_topic_pattern_needs_a_message_topic() -> None:
    sub = Subscription(id="fx", topic="forex.#")
    assert not sub.matches({})
    assert sub.matches({}, topic="forex")  # AMQP '#' is zero or more words


def test_an_invalid_topic_name_matches_no_pattern_of_that_syntax() -> None:
    sub = Subscription(id="m", topic="#", topic_syntax="mqtt")
    assert not sub.matches({}, topic="a/+")  # '+' is not allowed in an MQTT topic name


def test_bad_selector_is_a_validation_error_with_a_caret() -> None:
    with pytest.raises(ValidationError) as caught:
        Subscription(id="s", selector="region = 'eu'\nAND price < 'cheap'")
    text = str(caught.value)
    assert "selector" in text
    assert "line 2, column 13" in text
    assert "AND price < 'cheap'\n                ^" in text


def test_bad_topic_is_reported_on_the_topic_field() -> None:
    with pytest.raises(ValidationError) as caught:
        Subscription(id="s", topic="a/#/b", topic_syntax="mqtt")
    errors = caught.value.errors()
    assert [error["loc"] for error in errors] == [("topic",)]
    assert "column 3" in errors[0]["msg"]


@pytest.mark.parametrize(
    "fields",
    [
        {"id": ""},
        {"id": "x" * 1025},
        {"id": "s", "topic_syntax": "stomp"},
        {"id": "s", "unknown": 1},
        {"id": 5},
        {"id": "s", "selector": 5},
    ],
)
def test_bad_fields_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Subscription.model_validate(fields)


def test_json_schema_export() -> None:
    schema = Subscription.model_json_schema()
    assert schema["required"] == ["id"]
    assert set(schema["properties"]) == {"id", "selector", "topic", "topic_syntax", "client"}
    assert schema["properties"]["topic_syntax"]["enum"] == ["amqp", "mqtt"]
    json.dumps(schema)


def test_models_are_frozen_hashable_and_pickle() -> None:
    sub = Subscription(id="s", selector="a LIKE 'x%'", topic="t/+", topic_syntax="mqtt")
    with pytest.raises(ValidationError):
        sub.id = "t"
    assert hash(sub) == hash(Subscription.model_validate(sub.model_dump()))
    again = pickle.loads(pickle.dumps(sub))
    assert again == sub
    assert again.parsed_topic is not None and again.parsed_topic.matches("t/u")
    assert again.parsed_selector.matches({"a": "xy"})


def test_json_round_trip() -> None:
    sub = Subscription(id="s", selector="a = 1", client="c")
    assert Subscription.model_validate_json(sub.model_dump_json()) == sub
