"""The ``bitsift`` command line: exit codes and output an operator can act on."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bitsift.cli import main

SUBSCRIPTIONS = """\
- id: eu-cheap
  selector: region = 'eu' AND price < 50
  client: desk-7
- id: fx
  topic: forex.#
"""


@pytest.fixture
def subscriptions(tmp_path: Path) -> Path:
    path = tmp_path / "subs.yaml"
    path.write_text(SUBSCRIPTIONS)
    return path


def test_check_accepts_a_good_file(subscriptions: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--explain", str(subscriptions)]) == 0
    out = capsys.readouterr().out
    assert "OK, 2 subscriptions (1 with a selector, 1 with a topic, 1 client)" in out
    assert "price in (-inf, 50) AND region in {'eu'}" in out


def test_check_lists_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("- id: a\n  selector: a != 1\n- id: b\n  selector: b = 'x\n")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "2 bad subscriptions" in err
    assert "entry 1 (line 1), selector: '!=' is not a selector operator: write '<>'" in err
    assert "entry 2 (line 3), selector: this string has no closing quote" in err


def test_match_reads_json_lines(
    subscriptions: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        json.dumps({"topic": "forex.usd", "properties": {"region": "eu", "price": 20}}),
        "{broken",
        json.dumps({"properties": {"region": "eu", "price": 60}}),
        json.dumps([1, 2]),
        json.dumps({"topic": 5}),
        "",
        json.dumps({"properties": {"region": "eu", "price": 1}}),
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["match", "--clients", "-s", str(subscriptions)]) == 1  # bad lines were seen
    captured = capsys.readouterr()
    results = [json.loads(line) for line in captured.out.splitlines()]
    assert results == [
        {"line": 1, "matches": ["eu-cheap", "fx"], "clients": ["desk-7"]},
        {"line": 3, "matches": [], "clients": []},
        {"line": 7, "matches": ["eu-cheap"], "clients": ["desk-7"]},
    ]
    assert "line 2: not valid JSON" in captured.err
    assert "line 4: expected a JSON object, found list" in captured.err
    assert "line 5: 'topic' must be a string or null" in captured.err


def test_match_from_a_file_with_good_input_exits_zero(
    subscriptions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = tmp_path / "m.jsonl"
    messages.write_text(json.dumps({"topic": "forex"}) + "\n")
    assert main(["match", "-s", str(subscriptions), str(messages)]) == 0
    assert json.loads(capsys.readouterr().out) == {"line": 1, "matches": ["fx"]}


def test_missing_files_are_one_line_errors(
    subscriptions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["match", "-s", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read the file" in capsys.readouterr().err
    assert main(["match", "-s", str(subscriptions), str(tmp_path / "none.jsonl")]) == 2
    assert "cannot open" in capsys.readouterr().err


def test_console_script_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bitsift.cli", "--help"], capture_output=True, text=True, check=True
    )
    assert "check" in result.stdout and "match" in result.stdout
