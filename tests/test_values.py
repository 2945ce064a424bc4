"""Values as the selector language sees them: classification, lookup, and comparison rules.

Every fast path reuses :mod:`bitsift.selectors.values`, so its rules are pinned here directly:
what each Python type counts as, that no NaN can make a comparison raise, that a broken mapping
reads as missing, and that the six comparison operators agree with each other for every pair of
values a message can hold.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterator, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy
import pytest
from hypothesis import given
from strategies import RaisingEquality, message_values

from bitsift.selectors.ast import Comparison, Identifier, IsNull
from bitsift.selectors.evaluate import evaluate
from bitsift.selectors.values import NO_TYPE, ValueKind, kind_of, lookup, normalize

A, B = Identifier("a"), Identifier("b")
NAN_DECIMALS = [Decimal("NaN"), Decimal("sNaN"), Decimal("-sNaN")]


class Colour(enum.IntEnum):
    RED = 1


class LyingClass:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str


@pytest.mark.parametrize(
    ("raw", "expected", "kind"),
    [
        (True, True, ValueKind.BOOLEAN),
        (numpy.bool_(False), False, ValueKind.BOOLEAN),
        (None, None, ValueKind.NULL),
        (Colour.RED, 1, ValueKind.NUMBER),
        (numpy.int64(-3), -3, ValueKind.NUMBER),
        (numpy.float32(0.5), 0.5, ValueKind.NUMBER),
        (Fraction(1, 4), 0.25, ValueKind.NUMBER),
        (Fraction(10**400, 3), math.inf, ValueKind.NUMBER),
        (Decimal("2.5"), Decimal("2.5"), ValueKind.NUMBER),
        ("text", "text", ValueKind.STRING),
        (b"text", NO_TYPE, ValueKind.OTHER),
        ([1], NO_TYPE, ValueKind.OTHER),
        (RaisingEquality(), NO_TYPE, ValueKind.OTHER),
        (LyingClass(), NO_TYPE, ValueKind.OTHER),
    ],
    ids=lambda value: type(value).__name__,  # LyingClass would fool pytest's own id making
)
def test_normalize(raw: object, expected: object, kind: ValueKind) -> None:
    value = normalize(raw)
    assert kind_of(value) is kind
    assert type(value) is type(expected)
    assert value == expected


@pytest.mark.parametrize("raw", [math.nan, numpy.float64("nan"), *NAN_DECIMALS])
def test_every_nan_is_float_nan(raw: object) -> None:
    value = normalize(raw)
    assert type(value) is float and math.isnan(value)


class ExplodingMapping(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("broken mapping")

    def __iter__(self) -> Iterator[str]:
        return iter(["state"])

    def __len__(self) -> int:
        return 1


def test_a_mapping_that_raises_counts_as_missing() -> None:
    assert lookup({"detail": ExplodingMapping()}, "detail.state") is None
    assert lookup(ExplodingMapping(), "state") is None
    assert evaluate(IsNull(Identifier("detail.state")), {"detail": ExplodingMapping()}) is True


@given(message_values(), message_values())
def test_comparisons_are_consistent(left: object, right: object) -> None:
    message = {"a": left, "b": right}
    results = {
        op: evaluate(Comparison(op, A, B), message) for op in ("=", "<>", "<", "<=", ">", ">=")
    }
    left_value, right_value = normalize(left), normalize(right)
    kinds = {kind_of(left_value), kind_of(right_value)}
    has_nan = left_value != left_value or right_value != right_value
    if ValueKind.NULL in kinds:
        assert set(results.values()) == {None}
    elif len(kinds) == 2 or ValueKind.OTHER in kinds:
        assert set(results.values()) == {False}
    elif kinds == {ValueKind.NUMBER} and not has_nan:
        assert results["<>"] is not results["="]
        assert [results["<"], results["="], results[">"]].count(True) == 1
        assert results["<="] is (results["<"] or results["="])
        assert results[">="] is (results[">"] or results["="])
    elif kinds == {ValueKind.NUMBER}:
        assert results == {"=": False, "<>": True, "<": False, "<=": False, ">": False, ">=": False}
    else:
        assert results["<>"] is not results["="]
        assert (results["<"], results["<="], results[">"], results[">="]) == (False,) * 4
