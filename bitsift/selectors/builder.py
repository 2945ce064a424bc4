"""The LALR callbacks that turn selector tokens into the syntax tree, checking what a grammar
cannot: static types, literal ranges, property-name positions and the limits.

Why callbacks during parsing rather than a pass over a parse tree: a selector comes from a
subscriber we may not trust, so no step may recurse over the input. Lark's LALR parser keeps its
stack in a list, and handing it these callbacks as ``transformer=`` makes each rule's callback run
as the rule is reduced, bottom up. Ten thousand nested parentheses therefore cost no Python stack.

Each callback returns a :class:`Part`: the node with its static type and the offset where its text
starts, so that a type error (``price > 'cheap'``) points at the offending operand. Static types
are those visible without a message: *number* (number literals, arithmetic, unary signs),
*string*, *boolean* (boolean literals and conditions), and *unknown* (a property, whose type only
a message tells).

``AND`` and ``OR`` chains arrive as one flat list (``a (OR a)+`` in the grammar), and a chain
nested in parentheses inside a chain of the same kind is kept as a reference and flattened once,
iteratively, when the finished node is first needed; so building a chain of ``n`` terms costs
``O(n)`` however its parentheses fall, where copying operand tuples at every step would cost
``O(n²)``.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from lark import Token, Transformer

from bitsift.selectors.ast import (
    RESERVED_WORDS,
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
from bitsift.selectors.limits import Limits

__all__ = ["Builder", "Part", "Problem", "LONG_MIN", "LONG_MAX", "number_literal"]

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

StaticType = Literal["number", "string", "boolean", "unknown"]

_DECIMAL = re.compile(r"(?:0|[1-9][0-9]*)[lL]?")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+[lL]?")
_OCTAL = re.compile(r"0[0-7]+[lL]?")
_FLOAT = re.compile(
    r"(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
    r"|[0-9]+[eE][+-]?[0-9]+|[0-9]+(?=[fFdD]))[fFdD]?"
)
_LONGEST_LONG = 19
"""Decimal digits of 2**63: a decimal literal with more significant digits cannot be a long,
and converting one would trip Python's limit on int() of long digit strings."""

_WORDS: dict[StaticType, str] = {
    "number": "a number",
    "string": "a string",
    "boolean": "a condition",
    "unknown": "a property",
}


class Problem(Exception):
    """Raised by a callback; the parser adds the text and makes a SelectorSyntaxError."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason)
        self.reason, self.offset = reason, offset


class Part:
    """A subtree under construction: its node, static type, where it starts, and its depth.

    For an ``AND``/``OR`` chain, ``pieces`` holds the operands not yet flattened (nodes, or
    unfinished chains of the same kind) and :attr:`node` builds the flat node on first use.
    """

    __slots__ = (
        "_node",
        "type",
        "offset",
        "depth",
        "bare_number",
        "plain_name",
        "chain",
        "pieces",
        "terms",
    )

    def __init__(
        self,
        node: Node | None,
        type: StaticType,
        offset: int,
        depth: int = 1,
        *,
        bare_number: bool = False,
        plain_name: bool = False,
        chain: type[And] | type[Or] | None = None,
        pieces: list[Node | Part] | None = None,
        terms: int = 1,
    ) -> None:
        self._node = node
        self.type = type
        self.offset = offset
        self.depth = depth
        self.bare_number = bare_number
        """An unsigned, unparenthesised number literal: a sign in front folds into it."""
        self.plain_name = plain_name
        """A property name as written, which may be the left side of IN, LIKE and IS NULL."""
        self.chain = chain
        self.pieces = pieces
        self.terms = terms

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = _flattened(self)
        return self._node


def _flattened(part: Part) -> Node:
    """The flat And/Or node of an unfinished chain, walking nested chains with a stack."""
    kind = part.chain
    assert kind is not None and part.pieces is not None
    operands: list[Any] = []
    pending: list[Node | Part] = list(reversed(part.pieces))
    while pending:
        piece = pending.pop()
        if not isinstance(piece, Part):
            operands.append(piece)
        elif piece._node is None and piece.pieces is not None:
            pending.extend(reversed(piece.pieces))
        else:
            operands.extend(piece.node.operands)  # type: ignore[union-attr]
    return kind(tuple(operands))


def _offset(token: Token) -> int:
    """Where a token starts in the text; the lexer always sets it."""
    return token.start_pos or 0


def number_literal(text: str) -> IntegerLiteral | FloatLiteral | None:
    """The literal a NUMBER token stands for, or None when it is not Java literal syntax.

    Integers may be any size here; the builder checks the range once a sign has been folded in.

    >>> number_literal("0x2A"), number_literal("052L"), number_literal("4.2f"), number_literal("09")
    (IntegerLiteral(value=42), IntegerLiteral(value=42), FloatLiteral(value=4.2), None)
    """
    if _DECIMAL.fullmatch(text):
        digits = text.rstrip("lL")
        if len(digits) > _LONGEST_LONG:
            return IntegerLiteral(10**40)  # out of range either way; the builder says so
        return IntegerLiteral(int(digits))
    if _HEX.fullmatch(text):
        return IntegerLiteral(int(text[2:].rstrip("lL"), 16))  # base 16 has no digit limit
    if _OCTAL.fullmatch(text):
        return IntegerLiteral(int(text.rstrip("lL"), 8))
    if _FLOAT.fullmatch(text):
        return FloatLiteral(float(text.rstrip("fFdD")))
    return None


class Builder(Transformer[Token, Part]):
    """The LALR callbacks: one per aliased rule of ``selector.lark``.

    The builder holds no state but the limits, so one Lark parser per :class:`Limits` value is
    built once and shared by every call and thread.
    """

    def __init__(self, limits: Limits) -> None:
        super().__init__(visit_tokens=False)
        self.limits = limits

    # -- checks --------------------------------------------------------------------------------

    def grown(self, *parts: Part) -> int:
        """The depth of a node over ``parts``; too deep is an error."""
        depth = 1 + max(part.depth for part in parts)
        if depth > self.limits.max_depth:
            raise Problem(
                f"the selector nests more than {self.limits.max_depth} levels deep "
                "(Limits.max_depth); simplify it or raise the limit",
                parts[0].offset,
            )
        return depth

    def checked(self, part: Part) -> Part:
        """A finished operand: a number literal no longer waiting for a sign must be in range."""
        if part.type == "number":  # never touch a chain's node here: it would flatten early
            node = part.node
            if isinstance(node, IntegerLiteral) and not LONG_MIN <= node.value <= LONG_MAX:
                # str() of a huge int is slow and limited; a long literal is shown by the caret.
                shown = f"{node.value} " if abs(node.value) < 10**40 else ""
                raise Problem(
                    f"the number {shown}does not fit a 64-bit long "
                    f"({LONG_MIN} to {LONG_MAX}); write it with a decimal point to make it "
                    "approximate",
                    part.offset,
                )
            if isinstance(node, FloatLiteral) and not math.isfinite(node.value):
                raise Problem(
                    "the number is too large for a double (beyond ±1.7976931348623157e308)",
                    part.offset,
                )
        part.bare_number = False
        return part

    def expect(self, part: Part, allowed: tuple[StaticType, ...], role: str) -> Part:
        self.checked(part)
        if part.type not in allowed:
            raise Problem(f"{role}, not {_WORDS[part.type]}", part.offset)
        return part

    def condition(self, part: Part, role: str) -> Part:
        return self.expect(part, ("boolean", "unknown"), f"{role} must be a condition")

    def numeric(self, part: Part, role: str) -> Part:
        return self.expect(part, ("number", "unknown"), f"{role} must be a number or a property")

    def property_name(self, part: Part, keyword: str) -> Identifier:
        self.checked(part)
        if not part.plain_name:
            what = _WORDS[part.type] if part.type != "unknown" else "an expression"
            raise Problem(
                f"the left side of {keyword} must be a property name, not {what}", part.offset
            )
        node = part.node
        assert isinstance(node, Identifier)
        return node

    # -- conditions ----------------------------------------------------------------------------

    def chain(self, children: list[Any], kind: type[And] | type[Or], word: str) -> Part:
        operands: list[Part] = children[0::2]  # the odd children are the AND / OR tokens
        pieces: list[Node | Part] = []
        terms = 0
        depth = 1
        for operand in operands:
            self.condition(operand, f"each side of {word}")
            if operand.chain is kind and operand.pieces is not None:
                pieces.append(operand)  # flattened later, once: see _flattened
                terms += operand.terms
                depth = max(depth, operand.depth)
            else:
                pieces.append(operand.node)
                terms += 1
                depth = max(depth, operand.depth + 1)
            if terms > self.limits.max_terms:
                raise Problem(
                    f"more than {self.limits.max_terms} terms joined by {word} "
                    "(Limits.max_terms); split the subscription or raise the limit",
                    operand.offset,
                )
        first = operands[0]
        if depth > self.limits.max_depth:
            deepest = max(operands, key=lambda operand: operand.depth)
            raise Problem(
                f"the selector nests more than {self.limits.max_depth} levels deep "
                "(Limits.max_depth); simplify it or raise the limit",
                deepest.offset,
            )
        return Part(None, "boolean", first.offset, depth, chain=kind, pieces=pieces, terms=terms)

    def or_(self, children: list[Any]) -> Part:
        return self.chain(children, Or, "OR")

    def and_(self, children: list[Any]) -> Part:
        return self.chain(children, And, "AND")

    def not_(self, children: list[Any]) -> Part:
        keyword, operand = children
        self.condition(operand, "the operand of NOT")
        depth = self.grown(operand)
        return Part(Not(operand.node), "boolean", _offset(keyword), depth)

    def comparison(self, children: list[Any]) -> Part:
        left, operator, right = children
        if operator.value in ("=", "<>"):
            self.checked(left)
            self.checked(right)
        else:
            role = f"each side of {operator.value}"
            self.expect(left, ("number", "unknown"), f"{role} must be a number or a property")
            self.expect(right, ("number", "unknown"), f"{role} must be a number or a property")
        node = Comparison(operator.value, left.node, right.node)
        return Part(node, "boolean", left.offset, self.grown(left, right))

    def between(self, children: list[Any]) -> Part:
        negated = isinstance(children[1], Token) and children[1].type == "NOT"
        operand, low, high = children[0], children[-3], children[-1]
        self.numeric(operand, "the operand of BETWEEN")
        self.numeric(low, "a BETWEEN bound")
        self.numeric(high, "a BETWEEN bound")
        node = Between(operand.node, low.node, high.node, negated)
        return Part(node, "boolean", operand.offset, self.grown(operand, low, high))

    def in_(self, children: list[Any]) -> Part:
        operand, items = children[0], children[-1]
        negated = children[1].type == "NOT"
        name = self.property_name(operand, "IN")
        node = In(name, tuple(item.node for item in items), negated)
        return Part(node, "boolean", operand.offset, 2)

    def in_items(self, children: list[Any]) -> list[Part]:
        if len(children) > self.limits.max_in_items:
            raise Problem(
                f"more than {self.limits.max_in_items} items in one IN list "
                "(Limits.max_in_items); split the subscription or raise the limit",
                children[self.limits.max_in_items].offset,
            )
        return [self.checked(item) for item in children]

    def signed_number(self, children: list[Any]) -> Part:
        part = self.number(children[-1:])
        if len(children) == 2:
            part = self.signed(children[0], part)
        return part

    def like(self, children: list[Any]) -> Part:
        operand = children[0]
        negated = children[1].type == "NOT"
        name = self.property_name(operand, "LIKE")
        rest = children[2 if negated else 1 :]
        pattern = _string_value(rest[1])
        escape = None
        if len(rest) == 4:
            token = rest[3]
            escape = _string_value(token)
            if len(escape) != 1:
                raise Problem(
                    f"the ESCAPE string must be exactly one character, not {len(escape)}",
                    _offset(token),
                )
        node = Like(name, pattern, escape, negated)
        return Part(node, "boolean", operand.offset, 2)

    def is_null(self, children: list[Any]) -> Part:
        operand = children[0]
        name = self.property_name(operand, "IS NULL")
        negated = any(isinstance(child, Token) and child.type == "NOT" for child in children)
        return Part(IsNull(name, negated), "boolean", operand.offset, 2)

    # -- values --------------------------------------------------------------------------------

    def arithmetic(self, children: list[Any]) -> Part:
        left, operator, right = children
        role = f"each side of {operator.value}"
        self.expect(left, ("number", "unknown"), f"{role} must be a number or a property")
        self.expect(right, ("number", "unknown"), f"{role} must be a number or a property")
        node = Arithmetic(operator.value, left.node, right.node)
        return Part(node, "number", left.offset, self.grown(left, right))

    def sign(self, children: list[Any]) -> Part:
        return self.signed(children[0], children[1])

    def signed(self, sign: Token, operand: Part) -> Part:
        if operand.bare_number:
            # -5 is the literal -5, which is also how -9223372036854775808 stays in range.
            literal = operand.node
            assert isinstance(literal, IntegerLiteral | FloatLiteral)
            if sign.value == "-":
                literal = type(literal)(-literal.value)  # type: ignore[arg-type]
            return Part(literal, "number", _offset(sign), 1, bare_number=True)
        self.expect(operand, ("number", "unknown"), f"unary {sign.value} needs a number")
        if sign.value == "+":
            # Unary plus changes no number, so the tree drops it; the result is a number to the
            # type checks (+flag is not a condition, +name is not a property name).
            return Part(operand.node, "number", _offset(sign), operand.depth)
        return Part(Negate(operand.node), "number", _offset(sign), self.grown(operand))

    def parenthesized(self, children: list[Any]) -> Part:
        inner = self.checked(children[0])
        inner.plain_name = False
        return inner

    def identifier(self, children: list[Any]) -> Part:
        (token,) = children
        offset = 0
        for name_part in token.value.split("."):
            if name_part.upper() in RESERVED_WORDS:
                raise Problem(
                    f"'{name_part}' is a reserved word and cannot be part of a property name; "
                    f'write the name in double quotes ("{token.value}") if it really is one',
                    _offset(token) + offset,
                )
            offset += len(name_part) + 1
        return Part(Identifier(token.value), "unknown", _offset(token), plain_name=True)

    def quoted_identifier(self, children: list[Any]) -> Part:
        (token,) = children
        name = token.value[1:-1].replace('""', '"')
        if not name:
            raise Problem("a property name in double quotes cannot be empty", _offset(token))
        if "\x00" in name:
            # No broker carries a NUL in a property name, and the index reserves names that
            # start with one for values it computes (bitsift.index.subscriptions: derived fields).
            raise Problem(
                "a property name cannot contain the NUL character (\\x00)", _offset(token)
            )
        return Part(Identifier(name), "unknown", _offset(token), plain_name=True)

    def string(self, children: list[Any]) -> Part:
        (token,) = children
        return Part(StringLiteral(_string_value(token)), "string", _offset(token))

    def number(self, children: list[Any]) -> Part:
        (token,) = children
        literal = number_literal(token.value)
        if literal is None:
            shown = token.value if len(token.value) <= 40 else token.value[:40] + "..."
            raise Problem(
                f"'{shown}' is not a number: write an integer (42, 0x2A, 052, 42L) or a "
                "decimal (4.2, .5, 42., 4.2e1, 4.2f)",
                _offset(token),
            )
        return Part(literal, "number", _offset(token), bare_number=True)

    def true(self, children: list[Any]) -> Part:
        (token,) = children
        return Part(BooleanLiteral(True), "boolean", _offset(token))

    def false(self, children: list[Any]) -> Part:
        (token,) = children
        return Part(BooleanLiteral(False), "boolean", _offset(token))


def _string_value(token: Token) -> str:
    return str(token.value)[1:-1].replace("''", "'")
