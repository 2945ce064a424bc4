"""The selector syntax tree: immutable, typed, hashable nodes that print back as selector text.

Every later stage (the reference evaluator, criteria extraction for the index, the Spark batch
matcher) reads these nodes, so they are deliberately plain: frozen slotted dataclasses with no
behaviour beyond printing. ``str(node)`` gives canonical selector text, and parsing that text gives
back an equal node; the round-trip fixtures in ``tests/data/roundtrip.txt`` hold the parser and
this printer to that.

Design choices that keep equality honest:

* Integer, float, string and boolean literals are distinct node types, so ``TRUE`` never equals
  ``1`` and ``5`` never equals ``5.0`` in a tree (Python's ``True == 1`` must not leak in).
* A minus sign directly in front of a number literal is folded into the literal by the parser
  (``-5`` is ``IntegerLiteral(-5)``), which is also how ``-9223372036854775808`` stays in range.
  ``Negate`` therefore never wraps a literal that was written with the sign attached; the printer
  writes ``-(5)`` for ``Negate(IntegerLiteral(5))`` so the round trip holds.
* ``AND`` and ``OR`` are n-ary and flattened, so chains of thousands of terms stay shallow.
* A dotted or double-quoted identifier is an ordinary ``Identifier`` whose name holds the dots or
  other characters; how a name is looked up in a message is the evaluator's business.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = [
    "Node",
    "Expression",
    "Condition",
    "NumberLiteral",
    "Identifier",
    "StringLiteral",
    "IntegerLiteral",
    "FloatLiteral",
    "BooleanLiteral",
    "Negate",
    "Arithmetic",
    "Comparison",
    "Between",
    "In",
    "Like",
    "IsNull",
    "Not",
    "And",
    "Or",
    "RESERVED_WORDS",
    "IDENTIFIER_PART",
    "ArithmeticOperator",
    "ComparisonOperator",
    "is_plain_identifier",
    "precedence",
]

RESERVED_WORDS = frozenset(
    {"NULL", "TRUE", "FALSE", "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE"}
)

ArithmeticOperator: TypeAlias = Literal["+", "-", "*", "/"]
ComparisonOperator: TypeAlias = Literal["=", "<>", "<", "<=", ">", ">="]


IDENTIFIER_PART = re.compile(r"(?:[^\W\d]|\$)[\w$]*")
"""One dot-separated part of an unquoted identifier: a letter, ``_`` or ``$``, then letters,
digits, ``_`` and ``$``. The IDENTIFIER terminal of ``selector.lark`` is this pattern joined by
dots; a test holds the two together, so the printer never writes a name the lexer would split."""


class _Immutable:
    """Base of every node: a node is immutable, so a copy (even a deep one) is the node itself.
    This also spares ``copy.deepcopy`` three Python frames per tree level."""

    __slots__ = ()

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self


def is_plain_identifier(name: str) -> bool:
    """True when ``name`` can be written without double quotes (dots between Java identifiers).

    >>> is_plain_identifier("detail.state"), is_plain_identifier("x-request-id")
    (True, False)
    >>> is_plain_identifier("and"), is_plain_identifier("Region")
    (False, True)
    """
    return all(
        IDENTIFIER_PART.fullmatch(part) and part.upper() not in RESERVED_WORDS
        for part in name.split(".")
    )


@dataclass(frozen=True, slots=True)
class Identifier(_Immutable):
    """A message property, looked up by name (see docs/selectors.md for dotted names)."""

    name: str

    def __str__(self) -> str:
        if is_plain_identifier(self.name):
            return self.name
        return '"' + self.name.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class StringLiteral(_Immutable):
    value: str

    def __str__(self) -> str:
        return "'" + self.value.replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class IntegerLiteral(_Immutable):
    """An exact numeric literal; always within the range of a Java ``long``."""

    value: int

    def __str__(self) -> str:
        return str(self.value)


_FLOAT_TEXT = re.compile(r"[.eE]")


@dataclass(frozen=True, slots=True, eq=False)
class FloatLiteral(_Immutable):
    """An approximate numeric literal; always finite.

    Equality and hashing keep the sign of zero: ``x / 0.0`` and ``x / -0.0`` are +Infinity and
    -Infinity, so two trees that differ only there must not be merged by the index.
    """

    value: float

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FloatLiteral):
            return NotImplemented
        return self.value == other.value and math.copysign(1.0, self.value) == math.copysign(
            1.0, other.value
        )

    def __hash__(self) -> int:
        return hash((FloatLiteral, self.value, math.copysign(1.0, self.value)))

    def __str__(self) -> str:
        text = repr(self.value)
        if not math.isfinite(self.value):  # pragma: no cover - the parser never makes these
            raise ValueError(f"a float literal must be finite, not {text}")
        # repr(1e16) is '1e+16' and repr(5.0) is '5.0': both read back as approximate numbers.
        return text if _FLOAT_TEXT.search(text) else text + ".0"


@dataclass(frozen=True, slots=True)
class BooleanLiteral(_Immutable):
    value: bool

    def __str__(self) -> str:
        return "TRUE" if self.value else "FALSE"


@dataclass(frozen=True, slots=True)
class Negate(_Immutable):
    """Unary minus of an arithmetic expression (unary plus is dropped by the parser)."""

    operand: Expression

    def __str__(self) -> str:
        if isinstance(self.operand, Identifier):
            return f"-{self.operand}"
        return f"-({self.operand})"


@dataclass(frozen=True, slots=True)
class Arithmetic(_Immutable):
    operator: ArithmeticOperator
    left: Expression
    right: Expression

    def __str__(self) -> str:
        mine = precedence(self)
        # Left-associative: the right operand needs parentheses at equal precedence too.
        return f"{_wrap(self.left, mine)} {self.operator} {_wrap(self.right, mine + 1)}"


@dataclass(frozen=True, slots=True)
class Comparison(_Immutable):
    operator: ComparisonOperator
    left: Expression
    right: Expression

    def __str__(self) -> str:
        mine = precedence(self)
        return f"{_wrap(self.left, mine + 1)} {self.operator} {_wrap(self.right, mine + 1)}"


@dataclass(frozen=True, slots=True)
class Between(_Immutable):
    operand: Expression
    low: Expression
    high: Expression
    negated: bool = False

    def __str__(self) -> str:
        inner = precedence(self) + 1
        keyword = "NOT BETWEEN" if self.negated else "BETWEEN"
        return (
            f"{_wrap(self.operand, inner)} {keyword} {_wrap(self.low, inner)}"
            f" AND {_wrap(self.high, inner)}"
        )


@dataclass(frozen=True, slots=True)
class In(_Immutable):
    """``identifier [NOT] IN (...)``; items are string literals or, as an extension, numbers."""

    operand: Identifier
    items: tuple[StringLiteral | IntegerLiteral | FloatLiteral, ...]
    negated: bool = False

    def __str__(self) -> str:
        keyword = "NOT IN" if self.negated else "IN"
        return f"{self.operand} {keyword} ({', '.join(str(item) for item in self.items)})"


@dataclass(frozen=True, slots=True)
class Like(_Immutable):
    """``identifier [NOT] LIKE 'pattern' [ESCAPE 'c']``."""

    operand: Identifier
    pattern: str
    escape: str | None = None
    negated: bool = False

    def __str__(self) -> str:
        keyword = "NOT LIKE" if self.negated else "LIKE"
        text = f"{self.operand} {keyword} {StringLiteral(self.pattern)}"
        if self.escape is not None:
            text += f" ESCAPE {StringLiteral(self.escape)}"
        return text


@dataclass(frozen=True, slots=True)
class IsNull(_Immutable):
    operand: Identifier
    negated: bool = False

    def __str__(self) -> str:
        return f"{self.operand} IS NOT NULL" if self.negated else f"{self.operand} IS NULL"


@dataclass(frozen=True, slots=True)
class Not(_Immutable):
    operand: Condition

    def __str__(self) -> str:
        return f"NOT {_wrap(self.operand, precedence(self))}"


@dataclass(frozen=True, slots=True)
class And(_Immutable):
    """Two or more conditions, all of which must hold; flattened by the parser."""

    operands: tuple[Condition, ...]

    def __str__(self) -> str:
        mine = precedence(self)
        return " AND ".join(_wrap(operand, mine + 1) for operand in self.operands)


@dataclass(frozen=True, slots=True)
class Or(_Immutable):
    """Two or more conditions, one of which must hold; flattened by the parser."""

    operands: tuple[Condition, ...]

    def __str__(self) -> str:
        mine = precedence(self)
        return " OR ".join(_wrap(operand, mine + 1) for operand in self.operands)


NumberLiteral: TypeAlias = "IntegerLiteral | FloatLiteral"
Expression: TypeAlias = (
    "Identifier | StringLiteral | IntegerLiteral | FloatLiteral | BooleanLiteral | Negate"
    " | Arithmetic | Condition"
)
"""Anything with a value. Conditions appear here because ``(a > 1) = (b > 2)`` is legal."""
Condition: TypeAlias = "Comparison | Between | In | Like | IsNull | Not | And | Or"
"""A node whose value is TRUE, FALSE or UNKNOWN. A bare identifier or boolean literal can also
stand as a whole selector; see :func:`bitsift.selectors.parser.parse`."""
Node: TypeAlias = Expression

_PRECEDENCE: dict[type, int] = {
    Or: 1,
    And: 2,
    Not: 3,
    Comparison: 4,
    Between: 4,
    In: 4,
    Like: 4,
    IsNull: 4,
}


def precedence(node: Node) -> int:
    """Binding strength of a node when printed: higher binds tighter.

    OR 1 < AND 2 < NOT 3 < comparisons 4 < ``+ -`` 5 < ``* /`` 6 < unary minus 7 < primaries 8.
    """
    if isinstance(node, Arithmetic):
        return 5 if node.operator in ("+", "-") else 6
    if isinstance(node, Negate):
        return 7
    return _PRECEDENCE.get(type(node), 8)


def _wrap(node: Node, needed: int) -> str:
    text = str(node)
    return f"({text})" if precedence(node) < needed else text
