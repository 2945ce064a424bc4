"""Selector text to syntax tree: Lark's LALR parser over ``selector.lark``, plus the checks a
grammar cannot express.

Why LALR with the tree built during parsing: a selector comes from a subscriber we may not trust,
so no step may recurse over the input. Lark's LALR parser keeps its stack in a list, and passing
the builder as ``transformer=`` makes every rule's callback run as the rule is reduced, bottom up.
Ten thousand nested parentheses or a chain of five thousand ``OR`` terms therefore cost no Python
stack, and the limits of :mod:`~bitsift.selectors.limits` are enforced as the tree grows.

Each callback returns a :class:`_Part`: the AST node with its static type and the place its text
starts, so that a type error (``price > 'cheap'``) points at the offending operand. Static types
are those visible without a message: *number* (number literals, arithmetic), *string*, *boolean*
(boolean literals and conditions), and *unknown* (a property, whose type only a message tells).

Every Lark exception is turned into :class:`~bitsift.SelectorSyntaxError` here, with the
expected tokens named in words and the line shown with a caret; none escapes this module.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lark import PostLex

from bitsift.errors import SelectorSyntaxError
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
from bitsift.selectors.limits import Limits, get_limits
from bitsift.selectors.selector import Selector

__all__ = ["parse", "clear_cache", "CACHE_SIZE"]

CACHE_SIZE = 4096
"""Distinct selector texts :func:`parse` remembers. Brokers see the same few selectors again and
again; a bound keeps a stream of distinct texts from growing memory."""

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


@dataclass(slots=True)
class _Part:
    """A subtree under construction: its node, static type, where it starts, and its depth."""

    node: Node
    type: StaticType
    line: int
    column: int
    depth: int = 1
    bare_number: bool = False
    """An unsigned, unparenthesised number literal: a sign in front folds into it."""
    parenthesized: bool = False


def _words(types: str) -> str:
    return {
        "number": "a number",
        "string": "a string",
        "boolean": "a condition",
        "unknown": "a property",
    }[types]


class _Problem(Exception):
    """Raised by a callback; :func:`_build` adds the text and makes a SelectorSyntaxError."""

    def __init__(self, reason: str, line: int, column: int) -> None:
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column


class _Builder(Transformer[Token, _Part]):
    """The LALR callbacks: one per aliased rule of ``selector.lark``.

    The builder holds no state but the limits, so one Lark parser per :class:`Limits` value is
    built once and shared by every call and thread.
    """

    def __init__(self, limits: Limits) -> None:
        super().__init__(visit_tokens=False)
        self.limits = limits

    # -- helpers -------------------------------------------------------------------------------

    def error(self, reason: str, line: int, column: int) -> _Problem:
        return _Problem(reason, line, column)

    def grown(self, *parts: _Part) -> int:
        depth = 1 + max(part.depth for part in parts)
        if depth > self.limits.max_depth:
            first = parts[0]
            raise self.error(
                f"the selector nests more than {self.limits.max_depth} levels deep "
                "(Limits.max_depth); simplify it or raise the limit",
                first.line,
                first.column,
            )
        return depth

    def checked(self, part: _Part) -> _Part:
        """A finished operand: a number literal no longer waiting for a sign must be in range."""
        node = part.node
        if isinstance(node, IntegerLiteral) and not LONG_MIN <= node.value <= LONG_MAX:
            raise self.error(
                f"the number {node.value} does not fit a 64-bit long "
                f"({LONG_MIN} to {LONG_MAX}); write it with a decimal point to make it "
                "approximate",
                part.line,
                part.column,
            )
        if isinstance(node, FloatLiteral) and not math.isfinite(node.value):
            raise self.error(
                "the number is too large for a double (beyond ±1.7976931348623157e308)",
                part.line,
                part.column,
            )
        part.bare_number = False
        return part

    def expect(self, part: _Part, allowed: tuple[StaticType, ...], role: str) -> _Part:
        self.checked(part)
        if part.type not in allowed:
            raise self.error(f"{role}, not {_words(part.type)}", part.line, part.column)
        return part

    def condition(self, part: _Part, role: str) -> _Part:
        return self.expect(part, ("boolean", "unknown"), f"{role} must be a condition")

    def numeric(self, part: _Part, role: str) -> _Part:
        return self.expect(part, ("number", "unknown"), f"{role} must be a number or a property")

    def property_name(self, part: _Part, keyword: str) -> Identifier:
        self.checked(part)
        if not isinstance(part.node, Identifier) or part.parenthesized:
            raise self.error(
                f"the left side of {keyword} must be a property name, not "
                f"{_words(part.type) if not isinstance(part.node, Identifier) else 'parentheses'}",
                part.line,
                part.column,
            )
        return part.node

    # -- conditions ----------------------------------------------------------------------------

    def _chain(self, children: list[Any], kind: type[And] | type[Or], word: str) -> _Part:
        left, _, right = children
        for operand in (left, right):
            self.condition(operand, f"each side of {word}")
        operands: list[Any] = []
        for operand in (left, right):
            if isinstance(operand.node, kind):
                operands.extend(operand.node.operands)
            else:
                operands.append(operand.node)
        if len(operands) > self.limits.max_terms:
            raise self.error(
                f"more than {self.limits.max_terms} terms joined by {word} "
                "(Limits.max_terms); split the subscription or raise the limit",
                left.line,
                left.column,
            )
        # The chain counts one level however long it is, so depth does not grow with length.
        depth = max(left.depth if isinstance(left.node, kind) else left.depth + 1, right.depth + 1)
        if depth > self.limits.max_depth:
            self.grown(left, right)
        return _Part(kind(tuple(operands)), "boolean", left.line, left.column, depth)

    def or_(self, children: list[Any]) -> _Part:
        return self._chain(children, Or, "OR")

    def and_(self, children: list[Any]) -> _Part:
        return self._chain(children, And, "AND")

    def not_(self, children: list[Any]) -> _Part:
        keyword, operand = children
        self.condition(operand, "the operand of NOT")
        depth = self.grown(operand)
        return _Part(Not(operand.node), "boolean", keyword.line, keyword.column, depth)

    def comparison(self, children: list[Any]) -> _Part:
        left, operator, right = children
        if operator.value in ("=", "<>"):
            self.checked(left)
            self.checked(right)
        else:
            role = f"each side of {operator.value}"
            self.expect(left, ("number", "unknown"), f"{role} must be a number or a property")
            self.expect(right, ("number", "unknown"), f"{role} must be a number or a property")
        node = Comparison(operator.value, left.node, right.node)
        return _Part(node, "boolean", left.line, left.column, self.grown(left, right))

    def between(self, children: list[Any]) -> _Part:
        negated = isinstance(children[1], Token) and children[1].type == "NOT"
        operand, low, high = children[0], children[-3], children[-1]
        self.numeric(operand, "the operand of BETWEEN")
        self.numeric(low, "a BETWEEN bound")
        self.numeric(high, "a BETWEEN bound")
        node = Between(operand.node, low.node, high.node, negated)
        return _Part(node, "boolean", operand.line, operand.column, self.grown(operand, low, high))

    def in_(self, children: list[Any]) -> _Part:
        operand, items = children[0], children[-1]
        negated = children[1].type == "NOT"
        name = self.property_name(operand, "IN")
        node = In(name, tuple(item.node for item in items), negated)
        return _Part(node, "boolean", operand.line, operand.column, 2)

    def in_items(self, children: list[Any]) -> list[_Part]:
        if len(children) > self.limits.max_in_items:
            extra = children[self.limits.max_in_items]
            raise self.error(
                f"more than {self.limits.max_in_items} items in one IN list "
                "(Limits.max_in_items); split the subscription or raise the limit",
                extra.line,
                extra.column,
            )
        return [self.checked(item) for item in children]

    def signed_number(self, children: list[Any]) -> _Part:
        part = self.number_literal(children[-1])
        if len(children) == 2:
            part = self.signed(children[0], part)
        return part

    def like(self, children: list[Any]) -> _Part:
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
                raise self.error(
                    f"the ESCAPE string must be exactly one character, not {len(escape)}",
                    token.line,
                    token.column,
                )
        node = Like(name, pattern, escape, negated)
        return _Part(node, "boolean", operand.line, operand.column, 2)

    def is_null(self, children: list[Any]) -> _Part:
        operand = children[0]
        name = self.property_name(operand, "IS NULL")
        negated = any(isinstance(child, Token) and child.type == "NOT" for child in children)
        return _Part(IsNull(name, negated), "boolean", operand.line, operand.column, 2)

    # -- values --------------------------------------------------------------------------------

    def arithmetic(self, children: list[Any]) -> _Part:
        left, operator, right = children
        role = f"each side of {operator.value}"
        self.expect(left, ("number", "unknown"), f"{role} must be a number or a property")
        self.expect(right, ("number", "unknown"), f"{role} must be a number or a property")
        node = Arithmetic(operator.value, left.node, right.node)
        return _Part(node, "number", left.line, left.column, self.grown(left, right))

    def sign(self, children: list[Any]) -> _Part:
        return self.signed(children[0], children[1])

    def signed(self, sign: Token, operand: _Part) -> _Part:
        if operand.bare_number:
            # -5 is the literal -5, which is also how -9223372036854775808 stays in range.
            literal = operand.node
            assert isinstance(literal, IntegerLiteral | FloatLiteral)
            if sign.value == "-":
                literal = type(literal)(-literal.value)  # type: ignore[arg-type]
            return _Part(literal, "number", *_place(sign), 1, bare_number=True)
        self.expect(operand, ("number", "unknown"), f"unary {sign.value} needs a number")
        if sign.value == "+":
            return _Part(operand.node, operand.type, *_place(sign), operand.depth)
        node = Negate(operand.node)
        return _Part(node, "number", *_place(sign), self.grown(operand))

    def parenthesized(self, children: list[Any]) -> _Part:
        inner = self.checked(children[0])
        inner.parenthesized = True
        return inner

    def identifier(self, children: list[Any]) -> _Part:
        (token,) = children
        offset = 0
        for part in token.value.split("."):
            if part.upper() in RESERVED_WORDS:
                raise self.error(
                    f"'{part}' is a reserved word and cannot be part of a property name; "
                    f'write the name in double quotes ("{token.value}") if it really is one',
                    token.line,
                    token.column + offset,
                )
            offset += len(part) + 1
        return _Part(Identifier(token.value), "unknown", token.line, token.column)

    def quoted_identifier(self, children: list[Any]) -> _Part:
        (token,) = children
        name = token.value[1:-1].replace('""', '"')
        if not name:
            raise self.error(
                "a property name in double quotes cannot be empty", token.line, token.column
            )
        return _Part(Identifier(name), "unknown", token.line, token.column)

    def string(self, children: list[Any]) -> _Part:
        (token,) = children
        return _Part(StringLiteral(_string_value(token)), "string", token.line, token.column)

    def number(self, children: list[Any]) -> _Part:
        return self.number_literal(children[0])

    def number_literal(self, token: Token) -> _Part:
        literal = _number(token.value)
        if literal is None:
            raise self.error(
                f"'{token.value}' is not a number: write an integer (42, 0x2A, 052, 42L) or a "
                "decimal (4.2, .5, 42., 4.2e1, 4.2f)",
                *_place(token),
            )
        return _Part(literal, "number", *_place(token), bare_number=True)

    def true(self, children: list[Any]) -> _Part:
        (token,) = children
        return _Part(BooleanLiteral(True), "boolean", token.line, token.column)

    def false(self, children: list[Any]) -> _Part:
        (token,) = children
        return _Part(BooleanLiteral(False), "boolean", token.line, token.column)


def _place(token: Token) -> tuple[int, int]:
    """Line and column of a token; the lexer always sets them."""
    return token.line or 1, token.column or 1


def _string_value(token: Token) -> str:
    return str(token.value)[1:-1].replace("''", "'")


def _number(text: str) -> IntegerLiteral | FloatLiteral | None:
    """The literal a NUMBER token stands for, or None when it is not Java literal syntax."""
    if _DECIMAL.fullmatch(text):
        return IntegerLiteral(int(text.rstrip("lL")))
    if _HEX.fullmatch(text):
        return IntegerLiteral(int(text[2:].rstrip("lL"), 16))
    if _OCTAL.fullmatch(text):
        return IntegerLiteral(int(text.rstrip("lL"), 8))
    if _FLOAT.fullmatch(text):
        return FloatLiteral(float(text.rstrip("fFdD")))
    return None


# -- error messages ------------------------------------------------------------------------------

_TERMINAL_WORDS = {
    "IDENTIFIER": "a property name",
    "QUOTED_IDENTIFIER": "a property name",
    "STRING": "a string",
    "NUMBER": "a number",
    "TRUE": "TRUE",
    "FALSE": "FALSE",
    "NULL": "NULL",
    "SIGN": "a sign (+ or -)",
    "MULTIPLY": "an operator (* or /)",
    "COMPARISON": "a comparison (=, <>, <, <=, >, >=)",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "$END": "the end of the selector",
}
_ORDER = [
    "a property name, a literal, '('",
    "a comparison (=, <>, <, <=, >, >=)",
    "a property name",
    "a string",
    "a number",
    "TRUE",
    "FALSE",
    "NULL",
    "'('",
    "')'",
    "','",
    "a sign (+ or -)",
    "an operator (* or /)",
]
_OPERAND_WORDS = {
    "a property name",
    "a string",
    "a number",
    "TRUE",
    "FALSE",
    "'('",
    "a sign (+ or -)",
}
_FORBIDDEN = {
    "!=": "'!=' is not a selector operator: write '<>' for 'not equal'",
    "==": "'==' is not a selector operator: write '=' for 'equal'",
    "&&": "'&&' is not a selector operator: write AND",
    "||": "'||' is not a selector operator: write OR",
    "--": "comments are not part of the selector language (for a double minus, write '- -')",
    "/*": "comments are not part of the selector language",
}
_CHARACTERS = {
    "'": "this string has no closing quote (write '' for a quote inside a string)",
    '"': 'this quoted property name has no closing double quote (write "" for a quote inside)',
    "%": "'%' (modulo) is not part of the selector language",
    "!": "'!' is not a selector operator: write NOT, or '<>' for 'not equal'",
    ".": "a '.' must join two parts of a property name, as in detail.state",
    ";": "a selector is one condition: remove the ';'",
}


_KEYWORDS = frozenset(RESERVED_WORDS)


def _expected_words(expected: set[str]) -> str:
    words = {_TERMINAL_WORDS.get(name, name) for name in expected}
    if _OPERAND_WORDS <= words:
        # Where any operand may start, listing seven kinds of token helps nobody.
        words = (words - _OPERAND_WORDS) | {"a property name, a literal, '('"}
    end = "the end of the selector" in words
    words.discard("the end of the selector")
    ordered = sorted(words, key=lambda word: (_ORDER.index(word) if word in _ORDER else 99, word))
    if end:
        ordered.append("the end of the selector")
    if len(ordered) <= 1:
        return ordered[0] if ordered else "nothing more"
    return ", ".join(ordered[:-1]) + " or " + ordered[-1]


def _end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1].rstrip()) + 1


def _describe(token: Token) -> str:
    if token.type in ("IDENTIFIER", "QUOTED_IDENTIFIER"):
        return f"property name {token.value}"
    if token.type == "STRING":
        return f"string {token.value}"
    if token.type == "NUMBER":
        return f"number {token.value}"
    return f"'{token.value}'"


def _syntax_error(text: str, error: UnexpectedInput) -> SelectorSyntaxError:
    if isinstance(error, UnexpectedCharacters):
        position = error.pos_in_stream or 0
        char = text[position] if position < len(text) else ""
        reason = _CHARACTERS.get(char, f"the character {char!r} has no meaning in a selector")
        return SelectorSyntaxError(reason, text, error.line, error.column)
    if isinstance(error, UnexpectedToken):
        token = error.token
        expected = _expected_words(set(error.expected))
        if token.type == "$END":
            line, column = _end_position(text)
            return SelectorSyntaxError(
                f"the selector ends too early: expected {expected}", text, line, column
            )
        if token.type == "FORBIDDEN":
            reason = _FORBIDDEN[token.value]
        elif token.type == "LPAR" and re.search(r"[\w$\"]\s*$", text[: token.start_pos or 0]):
            reason = "function calls are not part of the selector language"
        elif token.type in _KEYWORDS and "IDENTIFIER" in error.expected:
            reason = (
                f"'{token.value}' is a reserved word and cannot name a property "
                f'(write "{token.value}" in double quotes if it really is one): '
                f"expected {expected}"
            )
        else:
            reason = f"unexpected {_describe(token)}: expected {expected}"
        return SelectorSyntaxError(reason, text, token.line or 1, token.column or 1)
    line, column = _end_position(text)  # pragma: no cover - LALR raises only the two above
    return SelectorSyntaxError(str(error), text, line, column)


# -- the entry point -----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _grammar() -> str:
    from importlib.resources import files

    return files("bitsift.selectors").joinpath("selector.lark").read_text(encoding="utf-8")


def _build(text: str, limits: Limits) -> Node:
    parser, builder = _lalr(limits)
    try:
        part: Any = parser.parse(text)
        builder.condition(part, "the whole selector")
    except _Problem as problem:
        raise SelectorSyntaxError(problem.reason, text, problem.line, problem.column) from None
    except UnexpectedInput as error:
        raise _syntax_error(text, error) from None
    except LarkError as error:  # pragma: no cover - defensive: no other Lark error is expected
        line, column = _end_position(text)
        raise SelectorSyntaxError(str(error), text, line, column) from None
    assert isinstance(part, _Part)
    return part.node


class _KeepForbidden(PostLex):
    """Keeps FORBIDDEN (``!=``, ``--``, ...) in the lexer although no rule uses it, so that the
    parser meets it as a token and the error can say what to write instead."""

    always_accept = ("FORBIDDEN",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return stream


@lru_cache(maxsize=8)
def _lalr(limits: Limits) -> tuple[Lark, _Builder]:
    builder = _Builder(limits)
    parser = Lark(
        _grammar(),
        parser="lalr",
        lexer="basic",
        postlex=_KeepForbidden(),
        maybe_placeholders=False,
        transformer=builder,
    )
    return parser, builder


@lru_cache(maxsize=CACHE_SIZE)
def _parse_cached(text: str, limits: Limits) -> Selector:
    if not text.strip():
        return Selector(text, None)
    if len(text) > limits.max_length:
        raise SelectorSyntaxError(
            f"the selector is {len(text)} characters long; the limit is {limits.max_length} "
            "(Limits.max_length)",
            text,
            1,
            1,
        )
    return Selector(text, _build(text, limits))


def parse(text: str, *, limits: Limits | None = None) -> Selector:
    """Parse selector text; raises :class:`~bitsift.SelectorSyntaxError` for anything invalid.

    An empty or blank selector means "no selector" and matches every message. Results are cached
    by text (and limits), so parsing the same selector again is a dictionary lookup.

    >>> import bitsift
    >>> print(bitsift.parse("NOT region = 'eu' AND price BETWEEN 1 AND 5").ast)
    NOT region = 'eu' AND price BETWEEN 1 AND 5
    >>> bitsift.parse("a != 1")
    Traceback (most recent call last):
      ...
    bitsift.errors.SelectorSyntaxError: '!=' is not a selector operator: write '<>' for 'not equal' (line 1, column 3 of the selector)
        a != 1
          ^
    """  # noqa: E501
    if not isinstance(text, str):
        raise SelectorSyntaxError(
            f"a selector must be text (str), not {type(text).__name__}", "", 1, 1
        )
    return _parse_cached(text, limits or get_limits())


def clear_cache() -> None:
    """Forget every cached parse (used when the process-wide limits change)."""
    _parse_cached.cache_clear()
