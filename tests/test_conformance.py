"""The selector conformance suite: cases kept as data in ``tests/data/selectors_*.json``.

Why data and not code: each case is one line anyone can read and check against the clause or peer
test it cites, without reading Python, and the same files can be replayed against any other
implementation (a fast path, a port, a peer broker). The format is described in
``tests/data/README.md``; this module only loads the files, checks their shape strictly (so that a
typo fails loudly instead of silently skipping a case), decodes the tagged values JSON cannot hold,
and runs every case through :func:`bitsift.parse`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import bitsift

DATA = Path(__file__).parent / "data"
FILES = sorted(DATA.glob("selectors_*.json"))
MINIMUM_CASES = 300

_FILE_KEYS = {"source", "description", "groups"}
_GROUP_KEYS = {"name", "cites", "notes", "message", "cases"}
_EVALUATION_KEYS = {"selector", "message", "expected", "note"}
_ERROR_KEYS = {"selector", "error", "line", "column", "note"}
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}


@dataclass(frozen=True)
class EvaluationCase:
    """A selector, a message and the three-valued result (``None`` is UNKNOWN)."""

    selector: str
    message: Mapping[str, object]
    expected: bool | None


@dataclass(frozen=True)
class ErrorCase:
    """A selector that must raise SelectorSyntaxError, optionally at a given place."""

    selector: str
    error: str
    line: int | None
    column: int | None


def decode_value(value: Any) -> object:
    """Turn the JSON form of a message value into the Python value it stands for.

    >>> decode_value({"$float": "-0.0"}), decode_value({"$decimal": "1.50"}), decode_value([1])
    (-0.0, Decimal('1.50'), [1])
    """
    if isinstance(value, dict):
        if len(value) == 1:
            ((tag, text),) = value.items()
            if tag == "$float":
                return _FLOATS[text]
            if tag == "$decimal":
                return Decimal(text)
            if tag == "$bytes":
                return str(text).encode("latin-1")
        return {key: decode_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode_value(item) for item in value]
    return value


def _check_keys(
    where: str, found: Mapping[str, Any], allowed: set[str], required: set[str]
) -> None:
    unknown = set(found) - allowed
    missing = required - set(found)
    if unknown or missing:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")


def _load_case(where: str, raw: Mapping[str, Any], base: Mapping[str, Any]) -> Any:
    if not isinstance(raw.get("selector"), str):
        raise ValueError(f"{where}: 'selector' must be a string")
    if "error" in raw:
        _check_keys(where, raw, _ERROR_KEYS, {"selector", "error"})
        line, column = raw.get("line"), raw.get("column")
        for name, number in (("line", line), ("column", column)):
            if number is not None and (type(number) is not int or number < 1):
                raise ValueError(f"{where}: '{name}' must be a positive integer")
        return pytest.param(ErrorCase(raw["selector"], str(raw["error"]), line, column), id=where)
    _check_keys(where, raw, _EVALUATION_KEYS, {"selector", "expected"})
    if raw["expected"] not in (True, False, None):
        raise ValueError(f"{where}: 'expected' must be true, false or null")
    message = {**base, **raw.get("message", {})}
    decoded = decode_value(message)
    assert isinstance(decoded, dict)
    return pytest.param(EvaluationCase(raw["selector"], decoded, raw["expected"]), id=where)


def load_cases(path: Path) -> list[Any]:
    """Every case of one data file as a ``pytest.param`` with the id ``file:group:index``."""
    document = json.loads(path.read_text(encoding="utf-8"))
    short = path.stem.removeprefix("selectors_")
    _check_keys(short, document, _FILE_KEYS, _FILE_KEYS)
    cases: list[Any] = []
    names: set[str] = set()
    for group in document["groups"]:
        _check_keys(f"{short}:{group.get('name')}", group, _GROUP_KEYS, {"name", "cites", "cases"})
        if group["name"] in names or not group["cites"].strip():
            raise ValueError(f"{short}:{group['name']}: names must be unique and cites non-empty")
        names.add(group["name"])
        base = group.get("message", {})
        for index, raw in enumerate(group["cases"]):
            cases.append(_load_case(f"{short}:{group['name']}:{index}", raw, base))
    return cases


ALL_CASES = [case for path in FILES for case in load_cases(path)]
EVALUATION_CASES = [case for case in ALL_CASES if isinstance(case.values[0], EvaluationCase)]
ERROR_CASES = [case for case in ALL_CASES if isinstance(case.values[0], ErrorCase)]


def test_suite_is_large_enough() -> None:
    assert len(FILES) >= 7, [path.name for path in FILES]
    assert len(ALL_CASES) >= MINIMUM_CASES
    assert len(ERROR_CASES) >= 100


@pytest.mark.parametrize("case", EVALUATION_CASES)
def test_evaluation(case: EvaluationCase) -> None:
    selector = bitsift.parse(case.selector)
    assert selector.evaluate(case.message) is case.expected
    assert selector.matches(case.message) is (case.expected is True)


@pytest.mark.parametrize("case", EVALUATION_CASES)
def test_canonical_text_means_the_same(case: EvaluationCase) -> None:
    canonical = bitsift.parse(case.selector).canonical
    assert bitsift.parse(canonical).evaluate(case.message) is case.expected, canonical


@pytest.mark.parametrize("case", ERROR_CASES)
def test_syntax_error(case: ErrorCase) -> None:
    with pytest.raises(bitsift.SelectorSyntaxError) as raised:
        bitsift.parse(case.selector)
    error = raised.value
    assert error.text == case.selector
    assert case.error.lower() in error.reason.lower(), error.reason
    if case.line is not None:
        assert error.line == case.line, str(error)
    if case.column is not None:
        assert error.column == case.column, str(error)
