"""Subscription files: every bad entry reported with its place; limits hold; round trips."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bitsift.subscription_files as files
from bitsift import Subscription, SubscriptionFileError, load_subscriptions, save_subscriptions

GOOD = [
    Subscription(id="a", selector="x > 1"),
    Subscription(id="b", topic="t/+", topic_syntax="mqtt", client="c"),
    Subscription(id="ü", selector="name LIKE 'é%'"),
]


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".yaml", ".yml", ".txt"])
def test_save_and_load_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"subs{suffix}"
    save_subscriptions(GOOD, path)
    assert load_subscriptions(path) == GOOD
    assert not [entry for entry in tmp_path.iterdir() if entry.name.startswith(".")]


@given(st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=5))
def test_any_ids_round_trip(ids: list[str]) -> None:
    import tempfile

    subs = [Subscription(id=identifier, selector="a = 'x'") for identifier in ids]
    with tempfile.TemporaryDirectory() as folder:
        for suffix in (".json", ".yaml", ".jsonl"):
            path = Path(folder) / f"s{suffix}"
            save_subscriptions(subs, path)
            assert load_subscriptions(path) == subs


def test_every_bad_entry_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "subs.json"
    path.write_text(
        "[\n"
        '  {"id": "ok", "selector": "a = 1"},\n'
        '  {"id": "s1", "selector": "a = "},\n'
        '  {"id": "s2", "topic": "a/#/b", "topic_syntax": "mqtt"},\n'
        '  "not an object",\n'
        '  {"id": "ok", "selector": "b = 2"},\n'
        '  {"selector": "c = 3", "colour": "red"}\n'
        "]\n"
    )
    with pytest.raises(SubscriptionFileError) as caught:
        load_subscriptions(path)
    problems = caught.value.problems
    assert problems[0].startswith("entry 2 (line 3), selector: the selector ends too early")
    assert problems[1].startswith("entry 3 (line 4), topic: '#' must be the last level")
    assert problems[2] == "entry 4 (line 5): expected an object, found str"
    assert problems[3] == "entry 5 (line 6): the id 'ok' is already used by the entry on line 2"
    assert problems[4] == "entry 6 (line 7), id: Field required"
    assert problems[5] == "entry 6 (line 7), colour: Extra inputs are not permitted"
    assert "6 bad subscriptions" in str(caught.value)


def test_yaml_lines_and_mapping_form(tmp_path: Path) -> None:
    path = tmp_path / "subs.yaml"
    path.write_text(
        "subscriptions:\n  - id: a\n    selector: x > 1\n  - id: b\n    selector: x >\n"
    )
    with pytest.raises(SubscriptionFileError) as caught:
        load_subscriptions(path)
    assert caught.value.problems[0].startswith("entry 2 (line 4), selector:")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("a.json", "[{", "not valid JSON: Expecting property name"),
        ("a.json", '{"id": "x"}', "expected a list of subscriptions"),
        ("a.yaml", "- id: a\n  selector: [", "not valid YAML"),
        ("a.yaml", "- &x {id: a}\n- *x\n", "anchors and aliases are not allowed (line 1)"),
        ("a.jsonl", '{"id": "a"}\n{oops\n', "line 2: not valid JSON"),
        ("a.json", "5", "found int"),
    ],
)
def test_malformed_files(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SubscriptionFileError, match=re.escape(expected)):
        load_subscriptions(path)


def test_empty_files_hold_no_subscriptions(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("")
    (tmp_path / "a.json").write_text("[]")
    assert load_subscriptions(tmp_path / "a.yaml") == []
    assert load_subscriptions(tmp_path / "a.json") == []


def test_limits_and_unreadable_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps([{"id": str(number)} for number in range(5)]))
    monkeypatch.setattr(files, "MAX_SUBSCRIPTIONS", 4)
    with pytest.raises(SubscriptionFileError, match="5 entries; the limit is 4"):
        load_subscriptions(path)
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 10)
    with pytest.raises(SubscriptionFileError, match="the limit is 10"):
        load_subscriptions(path)
    with pytest.raises(SubscriptionFileError, match="cannot read the file"):
        load_subscriptions(tmp_path / "missing.json")
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe[]")
    with pytest.raises(SubscriptionFileError, match="not UTF-8"):
        load_subscriptions(binary)
