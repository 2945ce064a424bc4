"""The reference evaluator: truth tables, the typing rules, and laws that must hold for any tree.

The examples build trees directly (the parser is tested elsewhere), one group per rule of the
module docstrings of ``evaluate`` and ``values``; the hypothesis tests check three-valued laws and
that no message, however strange, makes evaluation raise.
"""

from __future__ import annotations

import math
import sys
from decimal import Decimal
from typing import Any, cast

import numpy
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    LONG_MAX,
    LONG_MIN,
    conditions,
    identifiers,
    message_values,
    messages,
    selectors,
)

from bitsift.selectors.ast import (
    And,
    Arithmetic,
    Between,
    BooleanLiteral,
    Comparison,
    Condition,
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
from bitsift.selectors.evaluate import and3, evaluate, not3, or3, value_of
from bitsift.selectors.evaluate import identifiers as names_in
from bitsift.selectors.values import ValueKind, kind_of, normalize

A, B, FLAG = Identifier("a"), Identifier("b"), Identifier("flag")
T, F, U = True, False, None


def lit(value: object) -> Expression:
    if isinstance(value, bool):
        return BooleanLiteral(value)
    if isinstance(value, int):
        return IntegerLiteral(value)
    if isinstance(value, float):
        return FloatLiteral(value)
    assert isinstance(value, str)
    return StringLiteral(value)


def cmp(left: Expression, operator: Any, right: Expression) -> Comparison:
    return Comparison(operator, left, right)


# The AST types the operands of NOT, AND and OR as conditions, but the language also allows an
# identifier or a boolean literal there; these helpers say so to mypy in one place.
def not_(operand: Node) -> Not:
    return Not(cast(Condition, operand))


def and_(operands: tuple[Node, ...]) -> And:
    return And(cast(tuple[Condition, ...], operands))


def or_(operands: tuple[Node, ...]) -> Or:
    return Or(cast(tuple[Condition, ...], operands))


# --- three-valued logic --------------------------------------------------------------------

AND_TABLE = [
    (T, T, T),
    (T, F, F),
    (T, U, U),
    (F, T, F),
    (F, F, F),
    (F, U, F),
    (U, T, U),
    (U, F, F),
    (U, U, U),
]
OR_TABLE = [
    (T, T, T),
    (T, F, T),
    (T, U, T),
    (F, T, T),
    (F, F, F),
    (F, U, U),
    (U, T, T),
    (U, F, U),
    (U, U, U),
]
NOT_TABLE = [(T, F), (F, T), (U, U)]


@pytest.mark.parametrize(("left", "right", "expected"), AND_TABLE)
def test_and_truth_table(left: bool | None, right: bool | None, expected: bool | None) -> None:
    assert and3(left, right) is expected
    assert evaluate(and_((A, B)), {"a": left, "b": right}) is expected


@pytest.mark.parametrize(("left", "right", "expected"), OR_TABLE)
def test_or_truth_table(left: bool | None, right: bool | None, expected: bool | None) -> None:
    assert or3(left, right) is expected
    assert evaluate(or_((A, B)), {"a": left, "b": right}) is expected


@pytest.mark.parametrize(("operand", "expected"), NOT_TABLE)
def test_not_truth_table(operand: bool | None, expected: bool | None) -> None:
    assert not3(operand) is expected
    assert evaluate(not_(A), {"a": operand}) is expected


def test_long_chains_short_circuit_in_any_order() -> None:
    message = {"a": None, "b": False, "flag": True}
    assert evaluate(and_((A, B, FLAG)), message) is False
    assert evaluate(and_((A, FLAG)), message) is None
    assert evaluate(or_((A, B, FLAG)), message) is True
    assert evaluate(or_((A, B)), message) is None


# --- examples, rule by rule ----------------------------------------------------------------

NAN_DECIMALS = [Decimal("NaN"), Decimal("sNaN"), Decimal("-sNaN")]

EXAMPLES: list[tuple[str, Node, dict[str, Any], bool | None]] = [
    # NULL: a missing key and None alike; only IS [NOT] NULL looks at it.
    ("missing is unknown", cmp(A, "=", lit(1)), {}, U),
    ("None is unknown", cmp(A, "<>", lit(1)), {"a": None}, U),
    ("NOT unknown", not_(cmp(A, "=", lit(1))), {}, U),
    ("IS NULL missing", IsNull(A), {}, T),
    ("IS NULL None", IsNull(A), {"a": None}, T),
    ("IS NULL nan", IsNull(A), {"a": math.nan}, F),
    ("IS NULL other type", IsNull(A), {"a": [None]}, F),
    ("IS NOT NULL", IsNull(A, negated=True), {"a": 0}, T),
    # Unlike types are FALSE for every operator, so NOT makes them TRUE (JMS 3.8.1.2).
    ("string = number", cmp(A, "=", lit(5)), {"a": "5"}, F),
    ("string <> number", cmp(A, "<>", lit(5)), {"a": "5"}, F),
    ("NOT (string = number)", not_(cmp(A, "=", lit(5))), {"a": "5"}, T),
    ("bool is not 1", cmp(A, "=", lit(1)), {"a": True}, F),
    ("bool is not 1 either way", cmp(A, "<>", lit(1)), {"a": True}, F),
    ("two equal lists", cmp(A, "=", B), {"a": [1], "b": [1]}, F),
    ("two equal lists <>", cmp(A, "<>", B), {"a": [1], "b": [1]}, F),
    ("bytes vs string", cmp(A, "=", lit("x")), {"a": b"x"}, F),
    # Strings and booleans: = and <> only.
    ("string =", cmp(A, "=", lit("eu")), {"a": "eu"}, T),
    ("string <>", cmp(A, "<>", lit("eu")), {"a": "us"}, T),
    ("strings are not ordered", cmp(A, "<", B), {"a": "a", "b": "b"}, F),
    ("strings are not ordered either way", cmp(A, ">=", B), {"a": "a", "b": "b"}, F),
    ("bool =", cmp(A, "=", lit(True)), {"a": True}, T),
    ("bool <>", cmp(A, "<>", B), {"a": True, "b": False}, T),
    ("bools are not ordered", cmp(A, ">", B), {"a": True, "b": False}, F),
    # Numbers: exact across int, float and Decimal; NaN equals nothing.
    ("int vs float", cmp(A, "=", lit(2.0)), {"a": 2}, T),
    ("exact, not via double", cmp(A, "=", lit(2.0**53)), {"a": 2**53 + 1}, F),
    ("decimal vs float", cmp(A, "=", lit(0.5)), {"a": Decimal("0.5")}, T),
    ("decimal 0.1 vs double 0.1", cmp(A, ">", lit(0.1)), {"a": Decimal("0.1")}, F),
    ("negative zero", cmp(A, "=", lit(0)), {"a": -0.0}, T),
    ("huge int", cmp(A, ">", lit(LONG_MAX)), {"a": 10**400}, T),
    ("nan =", cmp(A, "=", A), {"a": math.nan}, F),
    ("nan <>", cmp(A, "<>", lit(1)), {"a": math.nan}, T),
    ("nan <", cmp(A, "<", lit(1)), {"a": math.nan}, F),
    ("nan >=", cmp(A, ">=", lit(1)), {"a": math.nan}, F),
    *[(f"{d!r} <>", cmp(A, "<>", lit(1)), {"a": d}, T) for d in NAN_DECIMALS],
    *[(f"{d!r} <", cmp(A, "<", B), {"a": d, "b": Decimal(1)}, F) for d in NAN_DECIMALS],
    ("numpy int", cmp(A, "=", lit(2)), {"a": numpy.int64(2)}, T),
    ("numpy bool is a bool", cmp(A, "=", lit(True)), {"a": numpy.bool_(True)}, T),
    ("infinity", cmp(A, ">", lit(1e308)), {"a": math.inf}, T),
    # Arithmetic: numbers only, else NULL; true division; IEEE 754 division by zero.
    ("addition", cmp(Arithmetic("+", A, lit(1)), "=", lit(2)), {"a": 1}, T),
    ("string in arithmetic", cmp(Arithmetic("+", A, lit(1)), "=", lit(2)), {"a": "1"}, U),
    ("bool in arithmetic", cmp(Arithmetic("+", A, lit(1)), "=", lit(2)), {"a": True}, U),
    ("list in arithmetic", cmp(Arithmetic("*", A, lit(1)), "<>", lit(2)), {"a": [1]}, U),
    ("NULL in arithmetic", cmp(Arithmetic("-", A, lit(1)), "<>", lit(2)), {}, U),
    ("true division", cmp(Arithmetic("/", A, lit(2)), "=", lit(3.5)), {"a": 7}, T),
    ("x/0 is +inf", cmp(Arithmetic("/", A, lit(0)), ">", lit(1e308)), {"a": 1}, T),
    ("-x/0 is -inf", cmp(Arithmetic("/", A, lit(0)), "<", lit(-1e308)), {"a": -1}, T),
    ("x/-0.0 is -inf", cmp(Arithmetic("/", A, lit(-0.0)), "<", lit(-1e308)), {"a": 1}, T),
    ("0/0 is nan", cmp(Arithmetic("/", A, A), "=", Arithmetic("/", A, A)), {"a": 0}, F),
    ("0/0 is nan <>", cmp(Arithmetic("/", A, A), "<>", lit(0)), {"a": 0}, T),
    ("unary minus", cmp(Negate(A), "=", lit(-2)), {"a": 2}, T),
    ("unary minus of a string", cmp(Negate(A), "=", lit(-2)), {"a": "2"}, U),
    ("overflow becomes float", cmp(Arithmetic("*", A, A), ">", lit(LONG_MAX)), {"a": 2**62}, T),
    ("no wrap-around", cmp(Arithmetic("+", A, lit(1)), ">", lit(0)), {"a": LONG_MAX}, T),
    ("-LONG_MIN", cmp(Negate(A), ">", lit(LONG_MAX)), {"a": LONG_MIN}, T),
    ("past the float range", cmp(Arithmetic("*", A, lit(10)), ">", lit(1e308)), {"a": 10**400}, T),
    (
        "float overflow",
        cmp(Arithmetic("*", A, A), "=", Arithmetic("/", lit(1), lit(0))),
        {"a": 1e300},
        T,
    ),
    ("decimal + int", cmp(Arithmetic("+", A, lit(1)), "=", lit(1.5)), {"a": Decimal("0.5")}, T),
    (
        "decimal + float",
        cmp(Arithmetic("+", A, lit(0.25)), "=", lit(0.75)),
        {"a": Decimal("0.5")},
        T,
    ),
    ("decimal / 0", cmp(Arithmetic("/", A, lit(0)), ">", lit(1e308)), {"a": Decimal("2")}, T),
    ("decimal 0/0", cmp(Arithmetic("/", A, lit(0)), "<>", lit(0)), {"a": Decimal("0")}, T),
    (
        "decimal past its exponent range",
        cmp(Arithmetic("+", A, lit(1)), ">", lit(1e308)),
        {"a": Decimal("1e999999999")},
        T,
    ),
    # Conditions as values, identifiers as conditions.
    ("condition = TRUE", cmp(cmp(A, ">", lit(1)), "=", lit(True)), {"a": 2}, T),
    ("condition = FALSE", cmp(cmp(A, ">", lit(1)), "=", lit(False)), {"a": 0}, T),
    ("unknown condition as value", cmp(cmp(A, ">", lit(1)), "=", lit(True)), {}, U),
    (
        "condition = condition",
        cmp(cmp(A, ">", lit(1)), "=", cmp(B, ">", lit(1))),
        {"a": 2, "b": 3},
        T,
    ),
    ("condition vs number", cmp(cmp(A, ">", lit(1)), "=", lit(1)), {"a": 2}, F),
    ("boolean identifier", FLAG, {"flag": True}, T),
    ("false identifier", FLAG, {"flag": False}, F),
    ("missing identifier", FLAG, {}, U),
    ("string identifier", FLAG, {"flag": "true"}, F),
    ("number identifier", FLAG, {"flag": 1}, F),
    ("NOT number identifier", not_(FLAG), {"flag": 1}, T),
    ("boolean literal", BooleanLiteral(False), {}, F),
    # BETWEEN is its expansion.
    ("between", Between(A, lit(1), lit(3)), {"a": 3}, T),
    ("between, outside", Between(A, lit(1), lit(3)), {"a": 3.5}, F),
    ("between a string", Between(A, lit(1), lit(3)), {"a": "2"}, F),
    ("not between a string", Between(A, lit(1), lit(3), negated=True), {"a": "2"}, F),
    ("NOT (string between)", not_(Between(A, lit(1), lit(3))), {"a": "2"}, T),
    ("between, unknown high, low fails", Between(A, lit(1), B), {"a": 0}, F),
    ("between, unknown high, low holds", Between(A, lit(1), B), {"a": 2}, U),
    ("not between, unknown high, low holds", Between(A, lit(1), B, negated=True), {"a": 0}, T),
    ("not between, unknown high", Between(A, lit(1), B, negated=True), {"a": 2}, U),
    ("between nan", Between(A, lit(1), lit(3)), {"a": math.nan}, F),
    ("not between nan", Between(A, lit(1), lit(3), negated=True), {"a": math.nan}, F),
    # IN.
    ("in", In(A, (StringLiteral("x"), StringLiteral("y"))), {"a": "y"}, T),
    ("in, absent", In(A, (StringLiteral("x"),)), {"a": "z"}, F),
    ("not in", In(A, (StringLiteral("x"),), negated=True), {"a": "z"}, T),
    ("in NULL", In(A, (StringLiteral("x"),)), {}, U),
    ("not in NULL", In(A, (StringLiteral("x"),), negated=True), {"a": None}, U),
    ("string vs numeric items", In(A, (IntegerLiteral(1),)), {"a": "1"}, F),
    ("number in numbers", In(A, (StringLiteral("1"), IntegerLiteral(1))), {"a": 1.0}, T),
    ("number not in numbers", In(A, (IntegerLiteral(1), FloatLiteral(2.5))), {"a": 2}, F),
    ("number not in numbers, negated", In(A, (IntegerLiteral(1),), negated=True), {"a": 2}, T),
    ("number vs string items", In(A, (StringLiteral("1"),)), {"a": 1}, U),
    ("number vs string items, negated", In(A, (StringLiteral("1"),), negated=True), {"a": 1}, U),
    ("nan in numbers", In(A, (FloatLiteral(1.0),)), {"a": math.nan}, F),
    ("bool in", In(A, (StringLiteral("true"), IntegerLiteral(1))), {"a": True}, U),
    ("other type in", In(A, (StringLiteral("x"),)), {"a": ["x"]}, U),
    # LIKE.
    ("like", Like(A, "eu-%"), {"a": "eu-west"}, T),
    ("not like", Like(A, "eu-%", negated=True), {"a": "eu-west"}, F),
    ("like NULL", Like(A, "%"), {}, U),
    ("not like NULL", Like(A, "%", negated=True), {}, U),
    ("like a number", Like(A, "1%"), {"a": 12}, U),
    ("like bytes", Like(A, "%"), {"a": b"x"}, U),
    ("like with escape", Like(A, "100!%", "!"), {"a": "100%"}, T),
    # Lookup: flat key first, then nested mappings for dotted names.
    ("nested", cmp(Identifier("detail.state"), "=", lit("up")), {"detail": {"state": "up"}}, T),
    (
        "flat key wins",
        cmp(Identifier("detail.state"), "=", lit("up")),
        {"detail.state": "down", "detail": {"state": "up"}},
        F,
    ),
    (
        "flat None is NULL",
        IsNull(Identifier("detail.state")),
        {"detail.state": None, "detail": {"state": "up"}},
        T,
    ),
    ("not a mapping on the way", IsNull(Identifier("detail.state")), {"detail": "up"}, T),
    ("missing on the way", IsNull(Identifier("a.b.c")), {"a": {"x": {}}}, T),
    ("deeply nested", cmp(Identifier("a.b.c"), "=", lit(1)), {"a": {"b": {"c": 1}}}, T),
    ("quoted name", cmp(Identifier("x-request-id"), "=", lit("r1")), {"x-request-id": "r1"}, T),
]


@pytest.mark.parametrize(
    ("node", "message", "expected"),
    [pytest.param(node, message, expected, id=name) for name, node, message, expected in EXAMPLES],
)
def test_examples(node: Node, message: dict[str, Any], expected: bool | None) -> None:
    assert evaluate(node, message) is expected


def test_value_of_a_condition_is_its_truth_value() -> None:
    assert value_of(cmp(A, ">", lit(1)), {"a": 2}) is True
    assert value_of(cmp(A, ">", lit(1)), {}) is None
    assert value_of(Arithmetic("/", lit(7), lit(2)), {}) == 3.5


def test_identifiers() -> None:
    tree = Or(
        (
            and_((Between(Negate(A), lit(1), Arithmetic("+", B, lit(1))), not_(Identifier("c")))),
            In(Identifier("d"), (StringLiteral("x"),)),
            Like(Identifier("e"), "%"),
            IsNull(Identifier("a")),
        )
    )
    assert names_in(tree) == {"a", "b", "c", "d", "e"}
    assert names_in(BooleanLiteral(True)) == frozenset()


def test_deep_trees_evaluate_without_recursion_error() -> None:
    # The parser allows at most 200 levels (Limits.max_depth); the evaluator uses one Python
    # frame per level and has room for far more.
    depth = 900
    assert sys.getrecursionlimit() >= 1000
    tree: Node = cmp(A, "=", lit(1))
    for _ in range(depth):
        tree = not_(tree)
    assert evaluate(tree, {"a": 1}) is True
    expression: Expression = A
    for _ in range(depth):
        expression = Negate(expression)
    assert evaluate(cmp(expression, "=", lit(1)), {"a": 1}) is True


# --- laws ----------------------------------------------------------------------------------


@given(selectors(), messages())
def test_never_raises(tree: Node, message: dict[str, Any]) -> None:
    assert evaluate(tree, message) in (True, False, None)


@given(conditions(), messages())
def test_double_negation(tree: Node, message: dict[str, Any]) -> None:
    assert evaluate(not_(not_(tree)), message) is evaluate(tree, message)


@given(conditions(max_depth=2), conditions(max_depth=2), messages())
def test_de_morgan(left: Node, right: Node, message: dict[str, Any]) -> None:
    not_left, not_right = not_(left), not_(right)
    assert evaluate(not_(and_((left, right))), message) is evaluate(
        or_((not_left, not_right)), message
    )
    assert evaluate(not_(or_((left, right))), message) is evaluate(
        and_((not_left, not_right)), message
    )
    assert evaluate(and_((left, right)), message) is evaluate(and_((right, left)), message)
    assert evaluate(or_((left, right)), message) is evaluate(or_((right, left)), message)


NUMERIC_OPERANDS = st.one_of(
    identifiers(),
    st.builds(IntegerLiteral, st.integers(-3, 3)),
    st.builds(FloatLiteral, st.sampled_from([-0.5, 0.0, 2.5])),
)


@given(NUMERIC_OPERANDS, NUMERIC_OPERANDS, NUMERIC_OPERANDS, messages())
def test_between_is_its_expansion(
    operand: Expression, low: Expression, high: Expression, message: dict[str, Any]
) -> None:
    inside = and_((cmp(operand, ">=", low), cmp(operand, "<=", high)))
    outside = or_((cmp(operand, "<", low), cmp(operand, ">", high)))
    assert evaluate(Between(operand, low, high), message) is evaluate(inside, message)
    assert evaluate(Between(operand, low, high, negated=True), message) is evaluate(
        outside, message
    )


IN_ITEMS = st.lists(
    st.one_of(
        st.builds(StringLiteral, st.sampled_from(["", "a", "b", "ab"])),
        st.builds(IntegerLiteral, st.integers(-2, 2)),
        st.builds(FloatLiteral, st.sampled_from([0.5, -0.0])),
    ),
    min_size=1,
    max_size=4,
).map(tuple)


@given(
    identifiers(),
    IN_ITEMS,
    st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab", "c"]), message_values()),
)
def test_in_is_a_disjunction_of_equalities(operand: Identifier, items: Any, value: object) -> None:
    message = {operand.name: value}
    result = evaluate(In(operand, items), message)
    kind = kind_of(normalize(value))
    numeric_items = [item for item in items if not isinstance(item, StringLiteral)]
    if kind in (ValueKind.STRING, ValueKind.NULL) or (kind is ValueKind.NUMBER and numeric_items):
        equalities = [cmp(operand, "=", item) for item in items]
        assert result is evaluate(or_((*equalities, equalities[0])), message)
    else:
        assert result is None
    negated = evaluate(In(operand, items, negated=True), message)
    assert negated is not3(result)
