"""The reference evaluator: the one exact meaning of a selector, which every fast path must match.

The bitmap index, the topic tables, receiver filters and the Spark pipeline all answer "does this
message match?" faster than this module, and all of them are tested against it with hypothesis.
So it is written to be obviously right rather than fast: one function per question, the rules of
Jakarta Messaging 3.8.1 in the order the specification gives them, and no exception because of what
a message holds. How a value is looked up, classified, compared and combined lives in
:mod:`bitsift.selectors.values`, and LIKE in :mod:`bitsift.selectors.like`; this module adds the
three-valued logic on top.

Three values: ``True``, ``False`` and ``None`` for UNKNOWN. A selector matches a message only when
it is TRUE.

* ``AND``, ``OR`` and ``NOT`` follow SQL (Kleene) logic: FALSE AND UNKNOWN is FALSE, TRUE OR
  UNKNOWN is TRUE, NOT UNKNOWN is UNKNOWN; anything else with UNKNOWN is UNKNOWN.
* A comparison or arithmetic with a NULL operand is UNKNOWN or NULL (see ``values``). Only
  ``IS [NOT] NULL`` looks at NULL directly: ``x IS NULL`` is TRUE when ``x`` is missing or ``None``.
* A condition used as a value (``(a > 1) = TRUE``) has the value TRUE, FALSE or NULL.
* An identifier used as a condition (a whole selector, or an operand of ``AND``, ``OR``, ``NOT``)
  is its value when that is a boolean, UNKNOWN when NULL, and FALSE for any other value.
* ``x BETWEEN a AND b`` is exactly ``x >= a AND x <= b``; ``x NOT BETWEEN a AND b`` is exactly
  ``x < a OR x > b``. So for a string ``x`` both are FALSE, while ``NOT (x BETWEEN a AND b)``
  is TRUE.
* ``x IN (...)``: UNKNOWN when ``x`` is NULL. A string ``x`` is TRUE when it equals one of the
  string items, else FALSE. A number ``x`` (an extension) is TRUE when it equals one of the
  numeric items, FALSE when it equals none, and UNKNOWN when the list has no numeric item. Any
  other ``x`` (a boolean, a value of no selector type) is UNKNOWN. ``NOT IN`` negates TRUE and
  FALSE; UNKNOWN stays UNKNOWN.
* ``x LIKE 'pattern'``: UNKNOWN when ``x`` is NULL or not a string, else whether the pattern
  matches (see ``like``); ``NOT LIKE`` negates.

Recursion is one Python frame per tree level, and the parser bounds the depth (Limits.max_depth,
at most 200).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bitsift.selectors.ast import (
    And,
    Arithmetic,
    Between,
    BooleanLiteral,
    Comparison,
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
from bitsift.selectors.like import compile_like
from bitsift.selectors.values import Value, arithmetic, compare, is_number, negate, selector_value

__all__ = ["evaluate", "value_of", "identifiers", "truth", "and3", "or3", "not3"]


def evaluate(node: Node, message: Mapping[str, Any]) -> bool | None:
    """Evaluate a selector tree as a condition: ``True``, ``False`` or ``None`` (UNKNOWN).

    >>> from bitsift.selectors.ast import Comparison, Identifier, IntegerLiteral, Not
    >>> price_above_5 = Comparison(">", Identifier("price"), IntegerLiteral(5))
    >>> evaluate(price_above_5, {"price": 7}), evaluate(Not(price_above_5), {"price": "7"})
    (True, True)
    >>> print(evaluate(price_above_5, {}))
    None
    """
    return truth(value_of(node, message))


def truth(value: Value) -> bool | None:
    """A value used as a condition: a boolean is itself, NULL is UNKNOWN, anything else FALSE."""
    if value is None or type(value) is bool:
        return value
    return False


def not3(value: bool | None) -> bool | None:
    """Three-valued NOT."""
    return None if value is None else not value


def and3(left: bool | None, right: bool | None) -> bool | None:
    """Three-valued AND: FALSE wins, then UNKNOWN."""
    if left is False or right is False:
        return False
    return None if left is None or right is None else True


def or3(left: bool | None, right: bool | None) -> bool | None:
    """Three-valued OR: TRUE wins, then UNKNOWN."""
    if left is True or right is True:
        return True
    return None if left is None or right is None else False


def value_of(node: Node, message: Mapping[str, Any]) -> Value:
    """The value of any node: a normalized value for expressions, ``True``/``False``/``None`` for
    conditions (see :mod:`bitsift.selectors.values` for what a value can be).

    >>> from bitsift.selectors.ast import Arithmetic, Identifier, IntegerLiteral
    >>> value_of(Arithmetic("/", Identifier("qty"), IntegerLiteral(0)), {"qty": -3})
    -inf
    """
    match node:
        case Identifier(name=name):
            return selector_value(message, name)
        case Comparison(operator=operator, left=left, right=right):
            return compare(operator, value_of(left, message), value_of(right, message))
        case And(operands=operands):
            result: bool | None = True
            for operand in operands:
                term = truth(value_of(operand, message))
                if term is False:
                    return False
                if term is None:
                    result = None
            return result
        case Or(operands=operands):
            result = False
            for operand in operands:
                term = truth(value_of(operand, message))
                if term is True:
                    return True
                if term is None:
                    result = None
            return result
        case Not(operand=operand):
            return not3(truth(value_of(operand, message)))
        case (
            StringLiteral(value=value)
            | IntegerLiteral(value=value)
            | FloatLiteral(value=value)
            | BooleanLiteral(value=value)
        ):
            return value
        case Arithmetic(operator=operator, left=left, right=right):
            return arithmetic(operator, value_of(left, message), value_of(right, message))
        case Negate(operand=operand):
            return negate(value_of(operand, message))
        case Between(operand=operand, low=low, high=high, negated=negated):
            tested = value_of(operand, message)
            low_value, high_value = value_of(low, message), value_of(high, message)
            if negated:
                return or3(compare("<", tested, low_value), compare(">", tested, high_value))
            return and3(compare(">=", tested, low_value), compare("<=", tested, high_value))
        case In():
            return _evaluate_in(node, message)
        case Like(operand=operand, pattern=pattern, escape=escape, negated=negated):
            text = value_of(operand, message)
            if type(text) is not str:
                return None
            return compile_like(pattern, escape).matches(text) is not negated
        case IsNull(operand=operand, negated=negated):
            return (value_of(operand, message) is None) is not negated
    raise TypeError(f"not a selector node: {node!r}")


def _evaluate_in(node: In, message: Mapping[str, Any]) -> bool | None:
    value = value_of(node.operand, message)
    if type(value) is str:
        found = any(type(item) is StringLiteral and item.value == value for item in node.items)
    elif is_number(value):
        numbers = [item.value for item in node.items if type(item) is not StringLiteral]
        if not numbers:
            return None
        found = any(compare("=", value, number) for number in numbers)
    else:
        return None  # NULL, a boolean, or a value of no selector type
    return found is not node.negated


def identifiers(node: Node) -> frozenset[str]:
    """Names of all the message properties a selector tree reads.

    >>> from bitsift.selectors.ast import Comparison, Identifier, IsNull, Or
    >>> a_or_b = Or((IsNull(Identifier("a")), Comparison("=", Identifier("b"), Identifier("a"))))
    >>> sorted(identifiers(a_or_b))
    ['a', 'b']
    """
    names: set[str] = set()
    pending: list[Node] = [node]
    while pending:
        match pending.pop():
            case Identifier(name=name):
                names.add(name)
            case Comparison(left=left, right=right) | Arithmetic(left=left, right=right):
                pending += (left, right)
            case Between(operand=operand, low=low, high=high):
                pending += (operand, low, high)
            case And(operands=operands) | Or(operands=operands):
                pending += operands
            case Not(operand=operand) | Negate(operand=operand):
                pending.append(operand)
            case In(operand=operand) | Like(operand=operand) | IsNull(operand=operand):
                pending.append(operand)
    return frozenset(names)
