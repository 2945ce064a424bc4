"""Subscription sets as JSON or YAML files, validated whole.

Operators edit these files by hand, so a load reports *every* bad entry with where it sits in the
file (entry number and line), not just the first: fixing a file one error per run is misery at
3 a.m. A file is a list of subscription objects, or a mapping with a ``subscriptions`` list (room
for other keys later). The format is chosen by the suffix: ``.json`` or ``.jsonl`` (one object per
line), ``.yaml`` / ``.yml``; anything else is read as JSON.

Limits, because a file may come from someone we do not trust: at most
:data:`MAX_FILE_BYTES` bytes and :data:`MAX_SUBSCRIPTIONS` entries, and YAML anchors and aliases
are refused (an alias bomb expands a small file into gigabytes).

>>> import tempfile, pathlib
>>> import bitsift
>>> from bitsift import Subscription, load_subscriptions, save_subscriptions
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> save_subscriptions([Subscription(id="a", selector="x > 1")], folder / "subs.yaml")
>>> [sub.id for sub in load_subscriptions(folder / "subs.yaml")]
['a']
>>> _ = (folder / "bad.json").write_text('[{"id": "a", "selector": "x >"}, {"id": ""}]')
>>> try:
...     load_subscriptions(folder / "bad.json")
... except bitsift.SubscriptionFileError as error:
...     for problem in error.problems:
...         print(problem.splitlines()[0])
entry 1 (line 1), selector: the selector ends too early: expected ... (line 1, column 4 of the selector)
entry 2 (line 1), id: String should have at least 1 character
"""  # noqa: E501

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from bitsift.errors import SubscriptionFileError
from bitsift.models import Subscription

__all__ = ["load_subscriptions", "save_subscriptions", "MAX_FILE_BYTES", "MAX_SUBSCRIPTIONS"]

MAX_FILE_BYTES = 256 * 1024 * 1024
"""Largest subscription file read (256 MiB)."""
MAX_SUBSCRIPTIONS = 1_000_000
"""Most entries in one file."""


def load_subscriptions(path: str | os.PathLike[str]) -> list[Subscription]:
    """Read and validate a subscription file; raise one error that lists every bad entry.

    Raises :class:`~bitsift.SubscriptionFileError` (a ``ValueError``) for an unreadable file,
    bad JSON or YAML, a wrong shape, bad entries, or ids used twice.
    """
    where = str(path)
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise SubscriptionFileError(
                where, [f"the file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}"]
            )
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise SubscriptionFileError(where, [f"cannot read the file: {error.strerror}"]) from None
    except UnicodeDecodeError as error:
        raise SubscriptionFileError(
            where, [f"the file is not UTF-8 text (byte {error.start})"]
        ) from None
    suffix = Path(path).suffix.lower()
    if suffix in (".yaml", ".yml"):
        entries = _yaml_entries(where, text)
    elif suffix == ".jsonl":
        entries = _json_lines_entries(where, text)
    else:
        entries = _json_entries(where, text)
    return _validate(where, entries)


def save_subscriptions(subscriptions: Iterable[Subscription], path: str | os.PathLike[str]) -> None:
    """Write subscriptions as JSON or YAML (by suffix), atomically, leaving out empty fields."""
    records = [sub.model_dump(exclude_defaults=True) for sub in subscriptions]
    suffix = Path(path).suffix.lower()
    if suffix in (".yaml", ".yml"):
        text = yaml.safe_dump(records, sort_keys=False, allow_unicode=True)
        if yaml.safe_load(text) != records:
            # PyYAML folds some characters (U+0085, say) when written raw: escape everything.
            text = yaml.safe_dump(records, sort_keys=False, allow_unicode=False)
    elif suffix == ".jsonl":
        text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    else:
        text = json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, target)


# -- reading entries with their line numbers ------------------------------------------------------


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _json_entries(where: str, text: str) -> list[tuple[int, Any]]:
    decoder = json.JSONDecoder()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise SubscriptionFileError(
            where, [f"not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"]
        ) from None
    items = _entries_of(where, document)
    # Walk the array again to learn where each entry starts; the text is known to be valid.
    start = text.find("[", text.find('"subscriptions"') if isinstance(document, dict) else 0)
    lines: list[int] = []
    position = start + 1
    for _ in items:
        while text[position] in " \t\r\n,":
            position += 1
        lines.append(_line_of(text, position))
        _, position = decoder.raw_decode(text, position)
    return list(zip(lines, items, strict=True))


def _json_lines_entries(where: str, text: str) -> list[tuple[int, Any]]:
    entries: list[tuple[int, Any]] = []
    problems: list[str] = []
    # Split on "\n" only: str.splitlines() also breaks at U+0085 and U+2028 inside strings.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            entries.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            problems.append(f"line {number}: not valid JSON: {error.msg} (column {error.colno})")
    if problems:
        raise SubscriptionFileError(where, problems)
    return entries


def _yaml_entries(where: str, text: str) -> list[tuple[int, Any]]:
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise SubscriptionFileError(
                    where, [f"YAML anchors and aliases are not allowed (line {line})"]
                )
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        place = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise SubscriptionFileError(where, [f"not valid YAML: {problem}{place}"]) from None
    items = _entries_of(where, document)
    if not items:
        return []
    sequence = node
    if isinstance(node, yaml.MappingNode):
        sequence = next(value for key, value in node.value if key.value == "subscriptions")
    assert isinstance(sequence, yaml.SequenceNode)
    lines = [item.start_mark.line + 1 for item in sequence.value]
    return list(zip(lines, items, strict=True))


def _entries_of(where: str, document: Any) -> list[Any]:
    if isinstance(document, dict) and "subscriptions" in document:
        document = document["subscriptions"]
    if document is None:
        document = []
    if not isinstance(document, list):
        raise SubscriptionFileError(
            where,
            [
                "expected a list of subscriptions (or a mapping with a 'subscriptions' list), "
                f"found {type(document).__name__}"
            ],
        )
    if len(document) > MAX_SUBSCRIPTIONS:
        raise SubscriptionFileError(
            where, [f"{len(document):,} entries; the limit is {MAX_SUBSCRIPTIONS:,}"]
        )
    return document


def _validate(where: str, entries: list[tuple[int, Any]]) -> list[Subscription]:
    subscriptions: list[Subscription] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for number, (line, entry) in enumerate(entries, start=1):
        place = f"entry {number} (line {line})"
        if not isinstance(entry, dict):
            problems.append(f"{place}: expected an object, found {type(entry).__name__}")
            continue
        try:
            subscription = Subscription.model_validate(entry)
        except ValidationError as error:
            for detail in error.errors(include_url=False):
                field = ".".join(str(part) for part in detail["loc"]) or "entry"
                message = str(detail["msg"]).removeprefix("Value error, ")
                problems.append(f"{place}, {field}: {message}")
            continue
        if subscription.id in first_line:
            problems.append(
                f"{place}: the id {subscription.id!r} is already used by the entry on line "
                f"{first_line[subscription.id]}"
            )
            continue
        first_line[subscription.id] = line
        subscriptions.append(subscription)
    if problems:
        raise SubscriptionFileError(where, problems)
    return subscriptions
