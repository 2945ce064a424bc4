"""Syntax errors worded for people: Lark's exceptions become SelectorSyntaxError, with what was
expected named in words, the place as line and column, and the line shown with a caret.

Why a module of its own: the parser's job is to say *whether* text is a selector; saying *why not*,
to a tired operator who wrote ``a != 1`` or ``price = NULL``, is a separate craft of lookup tables
and special cases that would otherwise bury the parsing logic.

Positions are character offsets until the very end, where :func:`position` turns them into a line
and column counted exactly as the caret excerpt of :mod:`bitsift.errors` splits lines (every line
break ``str.splitlines`` knows, not only ``\\n``), so that the caret always sits under the spot.
"""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from bitsift.errors import SelectorSyntaxError
from bitsift.selectors.ast import RESERVED_WORDS

__all__ = ["position", "error_at", "end_offset", "syntax_error", "expected_words"]

_TERMINAL_WORDS = {
    "IDENTIFIER": "a property name",
    "QUOTED_IDENTIFIER": "a property name",
    "STRING": "a string",
    "NUMBER": "a number",
    "SIGN": "'+' or '-'",
    "MULTIPLY": "'*' or '/'",
    "COMPARISON": "a comparison (=, <>, <, <=, >, >=)",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "$END": "the end of the selector",
}
"""Words for terminals; the reserved words (AND, NULL, ...) stand for themselves."""

_ANY_OPERAND = "an operand (a property name, a literal or '(')"
_OPERAND_WORDS = frozenset(
    {"a property name", "a string", "a number", "TRUE", "FALSE", "'('", "'+' or '-'"}
)
_ORDER = [
    _ANY_OPERAND,
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
    "'+' or '-'",
    "'*' or '/'",
]
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
_CALLABLE_BEFORE = re.compile(r"[\w$\"]\s*$")
_IN_ITEMS = frozenset({"STRING", "NUMBER", "SIGN"})


def position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of ``offset`` in ``text``, with lines split as
    :meth:`str.splitlines` splits them.

    >>> position("a = 1\\nAND b", 6), position("a\\u2028b", 2), position("", 0)
    ((2, 1), (2, 1), (1, 1))
    """
    lines = text[: max(offset, 0)].splitlines(keepends=True)
    if not lines:
        return 1, 1
    last = lines[-1]
    content = last.splitlines()[0] if last else ""
    if len(content) < len(last):  # the offset is just past a line break
        return len(lines) + 1, 1
    return len(lines), len(last) + 1


def error_at(reason: str, text: str, offset: int) -> SelectorSyntaxError:
    """A SelectorSyntaxError for ``reason`` at character ``offset`` of ``text``."""
    line, column = position(text, offset)
    return SelectorSyntaxError(reason, text, line, column)


def end_offset(text: str) -> int:
    """Where a selector that ends too early ends: just after its last visible character."""
    return len(text.rstrip())


def expected_words(terminals: set[str]) -> str:
    """The terminals a parser state accepts, as a phrase.

    >>> expected_words({"RPAR", "AND", "OR", "$END"})
    "')', AND, OR or the end of the selector"
    """
    words = {_TERMINAL_WORDS.get(name, name) for name in terminals}
    if _OPERAND_WORDS <= words:
        # Where any operand may start, listing seven kinds of token helps nobody.
        words = (words - _OPERAND_WORDS) | {_ANY_OPERAND}
    end = "the end of the selector" in words
    words.discard("the end of the selector")
    ordered = sorted(words, key=lambda word: (_ORDER.index(word) if word in _ORDER else 99, word))
    if end:
        ordered.append("the end of the selector")
    if len(ordered) <= 1:
        return ordered[0] if ordered else "nothing more"
    return ", ".join(ordered[:-1]) + " or " + ordered[-1]


def _describe(token: Token) -> str:
    value = str(token.value)
    if len(value) > 40:
        value = value[:40] + "..."
    if token.type in ("IDENTIFIER", "QUOTED_IDENTIFIER"):
        return f"property name {value}"
    if token.type == "STRING":
        return f"string {value}"
    if token.type == "NUMBER":
        return f"number {value}"
    return f"'{value}'"


def _accepted(error: UnexpectedToken) -> set[str]:
    """What the parser would have taken instead. Lark's ``accepts`` tries every token in a copy
    of the parser (without our callbacks), which is exact where the LALR table's ``expected``
    merges lookaheads of similar states (and would offer ')' with no '(' open)."""
    try:
        accepts = error.accepts
    except Exception:  # pragma: no cover - defensive: fall back to the table's answer
        accepts = set()
    return set(accepts or error.expected)


def syntax_error(text: str, error: UnexpectedInput) -> SelectorSyntaxError:
    """The SelectorSyntaxError that explains a Lark parsing exception."""
    if isinstance(error, UnexpectedCharacters):
        offset = error.pos_in_stream or 0
        char = text[offset] if offset < len(text) else ""
        reason = _CHARACTERS.get(char, f"the character {char!r} has no meaning in a selector")
        return error_at(reason, text, offset)
    if not isinstance(error, UnexpectedToken):  # pragma: no cover - LALR raises only these two
        return error_at(f"not a selector: {error}", text, end_offset(text))
    token = error.token
    accepted = _accepted(error)
    expected = expected_words(accepted)
    offset = token.start_pos or 0
    if token.type == "$END":
        return error_at(f"the selector ends too early: expected {expected}", text, end_offset(text))
    if token.type == "FORBIDDEN":
        reason = _FORBIDDEN[token.value]
    elif token.type == "LPAR" and _CALLABLE_BEFORE.search(text[:offset]):
        reason = "function calls are not part of the selector language"
    elif token.type == "RPAR" and accepted <= _IN_ITEMS:
        reason = "an IN list needs at least one item: ('a', 'b', ...)"
    elif token.type == "NULL" and "IDENTIFIER" in accepted:
        reason = "NULL is not a value to compare with: write 'name IS NULL' or 'name IS NOT NULL'"
    elif token.type in RESERVED_WORDS and "IDENTIFIER" in accepted:
        reason = (
            f"'{token.value}' is a reserved word and cannot name a property "
            f'(write "{token.value}" in double quotes if it really is one): '
            f"expected {expected}"
        )
    else:
        reason = f"unexpected {_describe(token)}: expected {expected}"
    return error_at(reason, text, offset)
