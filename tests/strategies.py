"""Hypothesis strategies for selectors and messages, shared by every test that checks a fast path.

The reference evaluator is the oracle, so the generated inputs must reach every corner of the
language: :func:`conditions` draws trees from the whole grammar, obeying the parser's static type
rules so that every tree is one the parser could produce (``str(tree)`` parses back to it), and
:func:`messages` draws messages over the same few property names with missing keys, ``None``,
wrongly typed values, NaN, infinities, -0.0, huge integers, ``Decimal``, numpy scalars, nested
mappings for dotted names, and objects whose ``__eq__`` raises. Literals and message values come
from small overlapping pools, so that comparisons are often TRUE and not only FALSE.

Static types the parser enforces: number (integer and float literals, unary minus, arithmetic),
string (string literals), boolean (boolean literals and conditions), unknown (identifiers).
Arithmetic, unary minus, ``< <= > >=`` and BETWEEN take number or unknown operands; ``= <>`` take
anything; ``NOT``, ``AND``, ``OR`` take boolean or unknown. ``AND`` and ``OR`` are flattened, as
the parser does.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from functools import cache
from typing import Any

import numpy
from hypothesis import strategies as st

from bitsift.selectors.ast import (
    And,
    Arithmetic,
    Between,
    BooleanLiteral,
    Comparison,
    Expression,
    FloatLiteral,
    Identifier,
    In,
    IntegerLiteral,
    IsNull,
    Like,
    Negate,
    Node,
    Not,
    Or,
    StringLiteral,
)

__all__ = [
    "IDENTIFIER_NAMES",
    "LONG_MIN",
    "LONG_MAX",
    "identifiers",
    "conditions",
    "selectors",
    "selector_texts",
    "message_values",
    "messages",
    "like_patterns",
    "RaisingEquality",
]

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

IDENTIFIER_NAMES = ("a", "b", "price", "flag", "detail.state", "x-request-id")
"""A small pool, so selectors and messages name the same properties. ``detail.state`` is dotted
(flat key or nested mappings) and ``x-request-id`` needs double quotes."""

TEXT_ALPHABET = "ab%_\\'é\n"
"""Characters for strings and LIKE patterns: wildcards, an escape, a quote, non-ASCII, newline."""

_INTEGERS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([LONG_MIN, LONG_MIN + 1, LONG_MAX - 1, LONG_MAX, 2**53 + 1, -(2**31)]),
    st.integers(LONG_MIN, LONG_MAX),
)
_FINITE_FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, 1.0, -1.5, 2.0, 1e308, 5e-324, 9.223372036854776e18]),
    st.floats(allow_nan=False, allow_infinity=False),
)
_TEXTS = st.one_of(
    st.sampled_from(["", "a", "b", "ab", "%", "a_b"]), st.text(TEXT_ALPHABET, max_size=5)
)

integer_literals = st.builds(IntegerLiteral, _INTEGERS)
float_literals = st.builds(FloatLiteral, _FINITE_FLOATS)
string_literals = st.builds(StringLiteral, _TEXTS)
boolean_literals = st.builds(BooleanLiteral, st.booleans())


def identifiers() -> st.SearchStrategy[Identifier]:
    """Identifiers from :data:`IDENTIFIER_NAMES`."""
    return st.builds(Identifier, st.sampled_from(IDENTIFIER_NAMES))


def like_patterns() -> st.SearchStrategy[tuple[str, str | None]]:
    """``(pattern, escape)`` pairs: patterns over a small alphabet full of wildcards and escapes."""
    return st.tuples(
        st.text("ab%_\\!", max_size=8), st.one_of(st.none(), st.sampled_from("\\!%_a"))
    )


def _flatten(kind: type[And] | type[Or], operands: list[Node]) -> Node:
    flat: list[Any] = []
    for operand in operands:
        flat.extend(operand.operands if isinstance(operand, kind) else [operand])
    return kind(tuple(flat))


@cache
def _numeric(depth: int) -> st.SearchStrategy[Expression]:
    """Expressions of static type number or unknown."""
    leaves: st.SearchStrategy[Expression] = st.one_of(
        integer_literals, float_literals, identifiers()
    )
    if depth <= 0:
        return leaves
    inner = _numeric(depth - 1)
    return st.one_of(
        leaves,
        st.builds(Negate, inner),
        st.builds(Arithmetic, st.sampled_from(["+", "-", "*", "/"]), inner, inner),
    )


@cache
def _any_value(depth: int) -> st.SearchStrategy[Expression]:
    """Operands of ``=`` and ``<>``: anything at all."""
    options = [_numeric(depth), string_literals, boolean_literals]
    if depth > 0:
        options.append(_condition(depth - 1))
    return st.one_of(*options)


@cache
def _logical(depth: int) -> st.SearchStrategy[Expression]:
    """Operands of ``NOT``, ``AND``, ``OR``: conditions, identifiers, boolean literals."""
    return st.one_of(_condition(depth), identifiers(), boolean_literals)


@cache
def _condition(depth: int) -> st.SearchStrategy[Expression]:
    numeric = _numeric(depth)
    items = st.lists(
        st.one_of(string_literals, integer_literals, float_literals), min_size=1, max_size=4
    )
    simple: list[st.SearchStrategy[Expression]] = [
        st.builds(Comparison, st.sampled_from(["=", "<>"]), _any_value(depth), _any_value(depth)),
        st.builds(Comparison, st.sampled_from(["<", "<=", ">", ">="]), numeric, numeric),
        st.builds(Between, numeric, numeric, numeric, st.booleans()),
        st.builds(In, identifiers(), items.map(tuple), st.booleans()),
        like_patterns().flatmap(
            lambda pair: st.builds(
                Like, identifiers(), st.just(pair[0]), st.just(pair[1]), st.booleans()
            )
        ),
        st.builds(IsNull, identifiers(), st.booleans()),
    ]
    if depth <= 0:
        return st.one_of(*simple)
    inner = _logical(depth - 1)
    return st.one_of(
        *simple,
        st.builds(Not, inner),
        st.lists(inner, min_size=2, max_size=4).map(lambda ops: _flatten(And, ops)),
        st.lists(inner, min_size=2, max_size=4).map(lambda ops: _flatten(Or, ops)),
    )


def conditions(max_depth: int = 3) -> st.SearchStrategy[Node]:
    """Condition trees (comparison, BETWEEN, IN, LIKE, IS NULL, NOT, AND, OR) nested up to
    ``max_depth`` levels, each one the parser could produce."""
    return _condition(max_depth)


def selectors(max_depth: int = 3) -> st.SearchStrategy[Node]:
    """Whole-selector trees: :func:`conditions`, plus a bare identifier or boolean literal."""
    return st.one_of(conditions(max_depth), identifiers(), boolean_literals)


def selector_texts(max_depth: int = 3) -> st.SearchStrategy[str]:
    """Canonical selector text of :func:`selectors`."""
    return selectors(max_depth).map(str)


class RaisingEquality:
    """A message value that fails any comparison or hashing, as a badly written class might."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("RaisingEquality.__eq__ must never be called")

    def __lt__(self, other: object) -> bool:
        raise RuntimeError("RaisingEquality.__lt__ must never be called")

    def __hash__(self) -> int:
        raise RuntimeError("RaisingEquality.__hash__ must never be called")

    def __repr__(self) -> str:
        return "RaisingEquality()"


class RaisingString(str):
    """A ``str`` subclass whose comparisons raise: the evaluator must use the plain string."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("RaisingString.__eq__ must never be called")

    def __ne__(self, other: object) -> bool:
        raise RuntimeError("RaisingString.__ne__ must never be called")

    __hash__ = str.__hash__


def message_values() -> st.SearchStrategy[Any]:
    """Any value a message might hold, well typed or not."""
    return st.one_of(
        st.none(),
        st.booleans(),
        _INTEGERS,
        st.sampled_from([2**63, -(2**63) - 1, 10**30, -(10**400)]),
        st.floats(),
        st.sampled_from([float("nan"), float("inf"), float("-inf"), -0.0]),
        st.decimals(allow_nan=True, allow_infinity=True, places=None),
        st.sampled_from(
            [
                Decimal("NaN"),
                Decimal("sNaN"),
                Decimal("-sNaN"),
                Decimal("1e999999999"),
                Decimal("0.5"),
            ]
        ),
        _TEXTS,
        _TEXTS.map(RaisingString),
        st.sampled_from(
            [numpy.int64(2), numpy.float32(0.5), numpy.bool_(True), numpy.float64("nan")]
        ),
        st.sampled_from(
            [b"a", bytearray(b"a"), [1], ["a"], (1,), {"a": 1}, datetime.date(2024, 1, 1), object()]
        ),
        st.builds(RaisingEquality),
    )


def messages() -> st.SearchStrategy[dict[str, Any]]:
    """Messages over :data:`IDENTIFIER_NAMES`; ``detail.state`` may be a flat key, a nested
    mapping, both, or blocked by a non-mapping ``detail``."""
    values = message_values()
    flat = {name: values for name in IDENTIFIER_NAMES}
    flat["detail"] = st.one_of(st.fixed_dictionaries({}, optional={"state": values}), values)
    return st.fixed_dictionaries({}, optional=flat)
