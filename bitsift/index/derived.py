"""Derived fields: a comparison of an arithmetic expression with constants, indexed like a field.

``price * qty > 100000`` tests no stored field, so the normaliser leaves it to the reference
evaluator as a :class:`~bitsift.index.criteria.Residual`, checked candidate by candidate after the
bitmaps have done their work. That cost grows with the number of such subscriptions among the
candidates: at 100,000 W3 subscriptions, 5,000 of them carry one.

But the expression's *value* does not depend on the subscription. Computed once per message (by
the reference evaluator's :func:`~bitsift.selectors.evaluate.value_of`), it can be treated as the
value of a field named after the expression, and ``> 100000`` becomes an ordinary range test on
that field: bucketed, cached and intersected like ``qty > 5``. :func:`derive` rewrites a residual
into such tests by normalising the same comparison with the expression replaced by an identifier,
so three-valued logic is exactly the normaliser's: ``NOT (price * qty > 5)`` is "present and not
above 5", FALSE (not TRUE) when ``price`` is missing, as the evaluator says.

Derived field names start with NUL, which the parser refuses in property names, so they can never
name a message property. Residuals of other shapes (two fields compared, a NOT over a
disjunction, string functions) stay residuals.

>>> from bitsift import parse
>>> from bitsift.index.normalize import to_dnf
>>> (conjunction,) = to_dnf(parse("price * qty > 100000 AND side = 'buy'").ast)
>>> derived, expressions = derive(conjunction)
>>> [str(atom) for atom in derived if "\\x00" in str(atom)]
['\\x00(price * qty) in (100000, +inf)']
>>> [str(node) for node in expressions.values()]
['price * qty']
"""

from __future__ import annotations

import operator as _operator
from collections.abc import Callable, Mapping
from typing import Any

from bitsift.index.criteria import FieldTest, Residual
from bitsift.index.normalize import MAX_CONJUNCTIONS, Conjunction, to_dnf
from bitsift.selectors.ast import (
    Arithmetic,
    Between,
    BooleanLiteral,
    Comparison,
    FloatLiteral,
    Identifier,
    IntegerLiteral,
    Negate,
    Node,
    Not,
    StringLiteral,
)
from bitsift.selectors.evaluate import identifiers, value_of
from bitsift.selectors.values import Value, arithmetic, lookup, negate, normalize

__all__ = ["PREFIX", "Evaluator", "compile_expression", "derive", "derived_name", "explain"]

_PLAIN = frozenset({bool, int, float, str})
"""Types a message value keeps as its selector value (``values.normalize`` returns them as is)."""
_EXACT: dict[str, Callable[[Any, Any], Any]] = {
    "+": _operator.add,
    "-": _operator.sub,
    "*": _operator.mul,
}
_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
"""An int in this range stays an int in arithmetic() (``values._long_or_float``)."""

Evaluator = Callable[[Mapping[str, Any]], Value]

PREFIX = "\x00"
"""Every derived field name starts with this; no parsed property name can."""


def derived_name(expression: Node) -> str:
    """The field name the index gives an expression's value: equal expressions share it."""
    return f"{PREFIX}({expression})"


def _expression(node: Node) -> bool:
    """An arithmetic expression that reads at least one property (not a bare identifier)."""
    return isinstance(node, (Arithmetic, Negate)) and bool(identifiers(node))


def _constant(node: Node) -> bool:
    return not identifiers(node)


def _substitute(node: Node) -> tuple[Comparison | Between, Node] | None:
    """``node`` with its expression replaced by the derived identifier, and the expression."""
    if isinstance(node, Comparison):
        left, right = node.left, node.right
        if _expression(left) and _constant(right):
            return Comparison(node.operator, Identifier(derived_name(left)), right), left
        if _expression(right) and _constant(left):
            return Comparison(node.operator, left, Identifier(derived_name(right))), right
        return None
    if isinstance(node, Between):
        operand = node.operand
        if _expression(operand) and _constant(node.low) and _constant(node.high):
            named = Identifier(derived_name(operand))
            return Between(named, node.low, node.high, node.negated), operand
    return None


def derive(conjunction: Conjunction) -> tuple[Conjunction, dict[str, Node]]:
    """The conjunction with every residual that compares one expression with constants replaced
    by field tests on the expression's derived field, and each derived name's expression.

    A residual whose rewrite would need more than one conjunction (``expr NOT BETWEEN a AND b``
    is an OR) or still leave a residual stays as it is.
    """
    for atom in conjunction:  # a loop, not any() over a generator: called for every conjunction
        if isinstance(atom, Residual):
            break
    else:
        return conjunction, {}
    atoms: list[FieldTest | Residual] = []
    expressions: dict[str, Node] = {}
    for atom in conjunction:
        if isinstance(atom, Residual):
            found = _substitute(atom.node)
            if found is not None:
                substituted, expression = found
                dnf = to_dnf(substituted if atom.want else Not(substituted))
                if len(dnf) == 1 and all(isinstance(part, FieldTest) for part in dnf[0]):
                    atoms.extend(dnf[0])
                    expressions[derived_name(expression)] = expression
                    continue
        atoms.append(atom)
    if not expressions:
        return conjunction, {}
    # The same canonical order to_dnf gives, so equal conjunctions stay equal (one column).
    unique = sorted(set(atoms), key=lambda atom: (isinstance(atom, Residual), str(atom)))
    return tuple(unique), expressions


def compile_expression(node: Node) -> Evaluator:
    """A function computing ``value_of(node, message)``, with the tree walked once, here.

    The reference evaluator matches each node against every node class on every call; a derived
    field is computed for every message, so its expression is turned into nested closures over
    the evaluator's own value functions (``normalize(lookup(...))``, ``arithmetic``,
    ``negate``): the same arithmetic, without the dispatch. Nodes of any other kind fall back to
    ``value_of`` itself. tests/test_derived.py checks equality with ``value_of`` by hypothesis.

    >>> from bitsift import parse
    >>> compile_expression(parse("price * qty > 1").ast.left)({"price": 2.5, "qty": 4})
    10.0
    """
    if isinstance(node, Identifier):
        name = node.name
        if "." in name:
            return lambda message: normalize(lookup(message, name))

        def identifier(message: Mapping[str, Any]) -> Value:
            # lookup() of a plain name in a dict is dict.get, and normalize() returns the exact
            # types as they are: both inlined for the common message.
            if type(message) is dict:
                value = message.get(name)
                if type(value) in _PLAIN or value is None:
                    return value
                return normalize(value)
            return normalize(lookup(message, name))

        return identifier
    if isinstance(node, (StringLiteral, IntegerLiteral, FloatLiteral, BooleanLiteral)):
        constant: Value = node.value
        return lambda message: constant
    if isinstance(node, Arithmetic):
        operator = node.operator
        left, right = compile_expression(node.left), compile_expression(node.right)
        exact = _EXACT.get(operator)
        if exact is None:  # division: its zero and NaN rules stay in arithmetic()
            return lambda message: arithmetic(operator, left(message), right(message))

        def combine(message: Mapping[str, Any]) -> Value:
            # A float with a float or a machine-range int is what arithmetic() computes with
            # Python's own operator; everything else (ints, Decimals, NULL) goes through it.
            a, b = left(message), right(message)
            if type(a) is float:
                if type(b) is float or (type(b) is int and _LONG_MIN <= b <= _LONG_MAX):
                    return exact(a, b)  # type: ignore[no-any-return]
            elif type(b) is float and type(a) is int and _LONG_MIN <= a <= _LONG_MAX:
                return exact(a, b)  # type: ignore[no-any-return]
            return arithmetic(operator, a, b)

        return combine
    if isinstance(node, Negate):
        operand = compile_expression(node.operand)
        return lambda message: negate(operand(message))
    return lambda message: value_of(node, message)


def explain(node: Node | None, max_conjunctions: int = MAX_CONJUNCTIONS) -> str:
    """How the subscription index reads a selector: a line per conjunction, atoms joined by AND,
    a derived field shown as its expression in parentheses.

    >>> from bitsift import parse
    >>> print(explain(parse("price * qty > 5 OR side = 'buy'").ast))
    (price * qty) in (5, +inf) AND price present AND qty present
    side in {'buy'}
    """
    conjunctions = to_dnf(node, max_conjunctions)
    if not conjunctions:
        return "never TRUE"
    return "\n".join(
        " AND ".join(str(atom).replace(PREFIX, "") for atom in derive(conjunction)[0]) or "TRUE"
        for conjunction in conjunctions
    )
