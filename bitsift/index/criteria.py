"""Criteria: the single-field tests the index can answer with bitmaps, and how values meet them.

The seeds' dispatcher matches a request when "the request criteria form a subset of the message
criteria". A JMS selector is richer than a list of criteria, so :mod:`bitsift.index.normalize`
rewrites it into an OR of conjunctions (DNF) whose atoms are the tests defined here:

* :class:`FieldTest` ``(field, criterion, negated)``: the value of one field meets ``criterion``,
  or, when ``negated``, the field is present and does **not** meet it. Negated tests are what the
  index needs for ``<>``, ``NOT IN`` and pushed-in ``NOT``: in JMS, ``NOT (name = 5)`` is TRUE when
  ``name`` is a string, but UNKNOWN when ``name`` is missing, so "not equal" always means "present
  and not equal".
* :class:`Residual` ``(node, want)``: anything no index can serve; the reference evaluator decides
  it, and only for the few candidates the indexed tests leave.

Criteria are chosen so that the index finds the satisfied ones by dictionary lookup (typed keys),
by bisection (numeric ranges), or by a handful of prefix lookups, never by scanning subscriptions.

Values are classified once per message field by :func:`classify`, with the same rules as the
reference evaluator: ``bool`` is never a number, and numbers compare exactly across ``int``,
``float`` and ``Decimal``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from decimal import Decimal
from enum import Enum
from typing import Literal, TypeAlias

from bitsift.selectors.ast import Comparison, Node
from bitsift.selectors.values import NoSelectorType, normalize

__all__ = [
    "Kind",
    "Number",
    "Key",
    "classify",
    "key_of",
    "Missing",
    "Equals",
    "OfType",
    "InRange",
    "HasPrefix",
    "Criterion",
    "FieldTest",
    "Residual",
    "Atom",
    "MISSING",
]

Number: TypeAlias = "int | float | Decimal"
Key: TypeAlias = "tuple[Literal['b', 'n', 's'], bool | int | float | Decimal | str]"
"""A typed dictionary key: ``('n', 5)``, ``('s', 'eu')``, ``('b', True)``. The tag keeps Python's
``True == 1`` out of lookups; int, float and Decimal share the ``'n'`` tag and hash alike when
equal, so ``('n', 5) == ('n', 5.0)`` exactly as the selector language wants."""


class Kind(Enum):
    """The selector type of a message value."""

    MISSING = "missing"  # absent or None: NULL
    BOOLEAN = "boolean"
    NUMBER = "number"
    STRING = "string"
    OTHER = "other"  # a value of no selector type (bytes, list, dict, ...)


_KIND_OF: dict[type, Kind] = {
    type(None): Kind.MISSING,
    bool: Kind.BOOLEAN,
    int: Kind.NUMBER,
    float: Kind.NUMBER,
    Decimal: Kind.NUMBER,
    str: Kind.STRING,
    NoSelectorType: Kind.OTHER,
}


_set = object.__setattr__
"""How the frozen criteria below set their fields in their own ``__init__``: a build makes
hundreds of thousands of them, and the ``__init__`` dataclasses generate for a frozen class looks
``object.__setattr__`` up again for every field (twice as slow)."""


def classify(value: object) -> tuple[Kind, object]:
    """The selector type of ``value`` and the value normalised for comparison.

    Delegates to :func:`bitsift.selectors.values.normalize`, the reference evaluator's own rule,
    so the index can never classify a value differently from the language.

    >>> classify(True), classify(3)
    ((<Kind.BOOLEAN: 'boolean'>, True), (<Kind.NUMBER: 'number'>, 3))
    >>> classify(None)[0], classify(b"x")[0]
    (<Kind.MISSING: 'missing'>, <Kind.OTHER: 'other'>)
    """
    kind = type(value)
    if kind is str:  # the common cases first, without a call
        return Kind.STRING, value
    if kind is int or kind is float:
        return Kind.NUMBER, value
    if kind is bool:
        return Kind.BOOLEAN, value
    normalised = normalize(value)
    return _KIND_OF[type(normalised)], normalised


def key_of(kind: Kind, value: object) -> Key | None:
    """The dictionary key of a classified value, or None when it can equal nothing (NaN, other)."""
    if kind is Kind.STRING:
        return ("s", value)  # type: ignore[return-value]
    if kind is Kind.NUMBER:
        if value != value:  # NaN equals nothing, not even itself
            return None
        return ("n", value)  # type: ignore[return-value]
    if kind is Kind.BOOLEAN:
        return ("b", value)  # type: ignore[return-value]
    return None


@dataclass(frozen=True, slots=True)
class Missing:
    """The field is absent or None (``IS NULL``); negated, it is ``IS NOT NULL``."""

    def holds(self, kind: Kind, value: object) -> bool:
        return kind is Kind.MISSING

    def __str__(self) -> str:
        return "missing"


@dataclass(frozen=True, slots=True, init=False)
class Equals:
    """The value's typed key is one of ``keys`` (``=``, ``IN``, a boolean identifier)."""

    keys: frozenset[Key]

    def __init__(self, keys: frozenset[Key]) -> None:
        _set(self, "keys", keys)  # see _set

    def holds(self, kind: Kind, value: object) -> bool:
        key = key_of(kind, value)
        return key is not None and key in self.keys

    def __str__(self) -> str:
        return "in {" + ", ".join(sorted(repr(key[1]) for key in self.keys)) + "}"


@dataclass(frozen=True, slots=True)
class OfType:
    """The value is of one selector type (numbers include NaN)."""

    kind: Kind

    def holds(self, kind: Kind, value: object) -> bool:
        return kind is self.kind

    def __str__(self) -> str:
        return f"is {self.kind.value}"


@dataclass(frozen=True, slots=True, init=False)
class InRange:
    """The value is a number (not NaN) inside the interval; ``None`` is an open end."""

    low: Number | None
    low_inclusive: bool
    high: Number | None
    high_inclusive: bool

    def __init__(
        self, low: Number | None, low_inclusive: bool, high: Number | None, high_inclusive: bool
    ) -> None:
        _set(self, "low", low)  # see _set
        _set(self, "low_inclusive", low_inclusive)
        _set(self, "high", high)
        _set(self, "high_inclusive", high_inclusive)

    def holds(self, kind: Kind, value: object) -> bool:
        if kind is not Kind.NUMBER or value != value:
            return False
        number: Number = value  # type: ignore[assignment]
        if self.low is not None and (
            number < self.low or (number == self.low and not self.low_inclusive)
        ):
            return False
        if self.high is not None and (
            number > self.high or (number == self.high and not self.high_inclusive)
        ):
            return False
        return True

    def __str__(self) -> str:
        low = "(-inf" if self.low is None else ("[" if self.low_inclusive else "(") + str(self.low)
        high = (
            "+inf)" if self.high is None else str(self.high) + ("]" if self.high_inclusive else ")")
        )
        return f"in {low}, {high}"


@dataclass(frozen=True, slots=True)
class HasPrefix:
    """The value is a string starting with ``prefix`` (``LIKE 'prefix%'``)."""

    prefix: str

    def holds(self, kind: Kind, value: object) -> bool:
        return kind is Kind.STRING and value.startswith(self.prefix)  # type: ignore[attr-defined]

    def __str__(self) -> str:
        return f"starts with {self.prefix!r}"


Criterion: TypeAlias = "Missing | Equals | OfType | InRange | HasPrefix"
MISSING = Missing()


@dataclass(frozen=True, slots=True, init=False)
class FieldTest:
    """One indexed test on one field; see the module docstring for ``negated``.

    Its hash is not kept: an index of 100,000 subscriptions holds about a million field tests,
    and a kept hash is a separate 40-byte integer object each. Building an index hashes a test
    about once (sharing its column), so keeping it saved little time for that memory.
    """

    field: str
    criterion: Criterion
    negated: bool = False

    def __init__(self, field: str, criterion: Criterion, negated: bool = False) -> None:
        _set(self, "field", field)  # see _set
        _set(self, "criterion", criterion)
        _set(self, "negated", negated)

    def __reduce__(self) -> tuple[object, ...]:
        return (FieldTest, (self.field, self.criterion, self.negated))

    def holds(self, kind: Kind, value: object) -> bool:
        if self.negated:
            return kind is not Kind.MISSING and not self.criterion.holds(kind, value)
        return self.criterion.holds(kind, value)

    def __str__(self) -> str:
        if isinstance(self.criterion, Missing):
            return f"{self.field} {'present' if self.negated else 'missing'}"
        if self.negated:
            return f"{self.field} present and not {self.criterion}"
        return f"{self.field} {self.criterion}"


@dataclass(frozen=True, slots=True)
class Residual:
    """A condition the reference evaluator must find ``want`` (TRUE, or FALSE under a NOT)."""

    node: Node
    want: bool
    _hash: int = dataclass_field(default=0, init=False, repr=False, compare=False)
    operands: tuple[str, Node, int, Node, int] | None = dataclass_field(
        default=None, init=False, repr=False, compare=False
    )
    """For a comparison: its operator, and each operand with its hash. Residuals often share an
    operand (``price * qty > 1000``, ``price * qty > 5000``), which the matcher then evaluates
    once per message and compares many times."""

    def __post_init__(self) -> None:  # hashed once, as FieldTest is
        object.__setattr__(self, "_hash", hash((self.node, self.want)))
        node = self.node
        if isinstance(node, Comparison):
            left, right = node.left, node.right
            parts = (node.operator, left, hash(left), right, hash(right))
            object.__setattr__(self, "operands", parts)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[object, ...]:
        return (Residual, (self.node, self.want))

    def __str__(self) -> str:
        return f"evaluate({self.node}) is {'TRUE' if self.want else 'FALSE'}"


Atom: TypeAlias = "FieldTest | Residual"


def is_finite_number(value: object) -> bool:
    """True for a number that is neither NaN nor infinite (used to vet constant bounds)."""
    kind, normalised = classify(value)
    if kind is not Kind.NUMBER:
        return False
    if isinstance(normalised, Decimal):
        return normalised.is_finite()
    return math.isfinite(normalised)  # type: ignore[arg-type]
