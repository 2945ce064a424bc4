"""What a message value *is* to the selector language, and how values compare and combine.

A message is any ``Mapping[str, object]``, filled by code we do not control: it may hold ``bool``,
huge ``int``, ``float`` NaN, ``Decimal('sNaN')``, numpy scalars, bytes, lists or objects whose
``__eq__`` raises. The selector language knows four kinds of value (boolean, number, string and
NULL), so every Python value is first *normalized* into one of those, or into :data:`NO_TYPE`, the
single marker for "a value of no selector type". After that, comparison and arithmetic are small
total functions that never raise. The reference evaluator and every fast path (the bitmap index,
the Spark pipeline, receiver filters) call these same functions, so they cannot drift apart.

Lookup (:func:`lookup`)
    ``message[name]`` when the key is present, even when its value is ``None``. Otherwise, if the
    name contains dots, nested mappings are walked one segment at a time (``detail.state`` reads
    ``message['detail']['state']``); a missing key or a non-mapping on the way means missing. A
    missing key and a ``None`` value are both NULL. A mapping that raises while being read counts
    as missing.

Classification (:func:`normalize`)
    ``bool`` is boolean, checked before ``int`` so that ``True`` never acts as ``1``;
    ``numpy.bool_`` is boolean too. ``int``, ``float`` and ``decimal.Decimal`` are numbers, and
    so are other ``numbers.Integral`` (to ``int``) and ``numbers.Real`` (to ``float``) values such
    as numpy scalars. A Decimal NaN, quiet or signalling, becomes ``float('nan')``. ``str`` is a
    string. Subclasses become their exact base type, so an overridden ``__eq__`` is never called.
    Anything else (bytes, list, dict, datetime, any object) is :data:`NO_TYPE`.

Comparison (:func:`compare`)
    NULL on either side gives UNKNOWN (``None``). Numbers compare exactly across ``int``,
    ``float`` and ``Decimal`` (Java would first widen a long to a double; we do not round). NaN
    equals nothing, so ``NaN = x`` and ``NaN < x`` are FALSE and ``NaN <> x`` is TRUE. Strings
    with strings and booleans with booleans compare only with ``=`` and ``<>``; ordering them is
    FALSE. Values of unlike kinds, and any :data:`NO_TYPE` value (even two equal lists), give
    FALSE for every operator including ``<>`` (Jakarta Messaging 3.8.1.2).

Arithmetic (:func:`arithmetic`, :func:`negate`)
    On numbers only; a NULL or non-number operand gives NULL, so a comparison with the result is
    UNKNOWN. ``/`` is true division (Java divides longs to a long; we do not). Division by zero
    follows IEEE 754: ``x/0`` is ±Infinity by the signs (a ``-0.0`` divisor counts), ``0/0`` is NaN.
    Integer arithmetic is exact, but an operand or result outside the signed 64-bit range becomes a
    float (±Infinity past the float range), so values cannot grow without bound; Java would wrap
    around instead. ``Decimal`` with ``int`` or ``Decimal`` uses decimal arithmetic rounded to 28
    significant digits with no traps; ``Decimal`` with ``float`` converts to float.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_EVEN, Context, Decimal
from enum import Enum
from typing import Any, Final, TypeAlias

__all__ = [
    "NO_TYPE",
    "NoSelectorType",
    "Value",
    "ValueKind",
    "lookup",
    "normalize",
    "selector_value",
    "kind_of",
    "is_number",
    "compare",
    "arithmetic",
    "negate",
]


class NoSelectorType:
    """The type of :data:`NO_TYPE`: a value the selector language has no type for."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_TYPE"

    def __reduce__(self) -> str:
        return "NO_TYPE"


NO_TYPE: Final = NoSelectorType()
"""Stands for every value of no selector type; no two such values are ever equal in a selector."""

Value: TypeAlias = "None | bool | int | float | Decimal | str | NoSelectorType"
"""A normalized value: NULL (``None``), boolean, number, string, or :data:`NO_TYPE`."""


class ValueKind(Enum):
    NULL = "null"
    BOOLEAN = "boolean"
    NUMBER = "number"
    STRING = "string"
    OTHER = "other"


_NUMBER_TYPES: Final = frozenset({int, float, Decimal})
_EXACT_TYPES: Final = frozenset({bool, int, float, str})
_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1
_MISSING: Final = object()

# Explicit rather than copied from DefaultContext, which a program may have changed.
_DECIMAL_CONTEXT: Final = Context(
    prec=28, rounding=ROUND_HALF_EVEN, Emin=-999_999, Emax=999_999, capitals=1, clamp=0, traps=[]
)


def lookup(message: Mapping[str, Any], name: str) -> object:
    """The raw value a selector identifier names in ``message``; ``None`` when it is missing.

    >>> lookup({"detail": {"state": "up"}}, "detail.state")
    'up'
    >>> print(lookup({"detail.state": None, "detail": {"state": "up"}}, "detail.state"))
    None
    """
    try:
        value = message.get(name, _MISSING)
        if value is not _MISSING:
            return value
        if "." not in name:
            return None
        current: object = message
        for segment in name.split("."):
            if not isinstance(current, Mapping):
                return None
            current = current.get(segment)
        return current
    except Exception:  # a mapping that fails while being read: its message data is unusable
        return None


def normalize(value: object) -> Value:
    """Map any Python value to its selector value (see the module docstring).

    >>> normalize(True), normalize(Decimal("sNaN")), normalize(b"raw")
    (True, nan, NO_TYPE)
    """
    kind = type(value)
    if kind in _EXACT_TYPES or value is None:
        return value  # type: ignore[return-value]
    if type(value) is Decimal:
        return math.nan if value.is_nan() else value
    try:
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, int):
            return int.__int__(value)
        if isinstance(value, float):
            return float.__float__(value)
        if isinstance(value, Decimal):
            return normalize(Decimal(value))
        if kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"):
            return bool(value)
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            try:
                return float(value)
            except OverflowError:  # e.g. a huge Fraction: past the float range
                return math.inf if value > 0 else -math.inf  # type: ignore[operator]
    except Exception:  # a number-like object that cannot say what number it is
        return NO_TYPE
    return NO_TYPE


def selector_value(message: Mapping[str, Any], name: str) -> Value:
    """``normalize(lookup(message, name))``: the value an identifier has in a selector.

    >>> selector_value({"n": 1.5}, "n"), selector_value({}, "n")
    (1.5, None)
    """
    return normalize(lookup(message, name))


def kind_of(value: Value) -> ValueKind:
    """The kind of a normalized value.

    >>> kind_of(True), kind_of(3), kind_of(NO_TYPE)
    (<ValueKind.BOOLEAN: 'boolean'>, <ValueKind.NUMBER: 'number'>, <ValueKind.OTHER: 'other'>)
    """
    if value is None:
        return ValueKind.NULL
    kind = type(value)
    if kind is bool:
        return ValueKind.BOOLEAN
    if kind in _NUMBER_TYPES:
        return ValueKind.NUMBER
    if kind is str:
        return ValueKind.STRING
    return ValueKind.OTHER


def is_number(value: Value) -> bool:
    """True for a normalized number (``int``, ``float`` or ``Decimal``; never ``bool``)."""
    return type(value) in _NUMBER_TYPES


_COMPARISONS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def compare(operator_text: str, left: Value, right: Value) -> bool | None:
    """Compare two normalized values with ``= <> < <= > >=``; ``None`` is UNKNOWN.

    >>> compare("<", 1, 1.5), compare("=", "a", 1), compare("<>", "a", 1), compare("<", "a", "b")
    (True, False, False, False)
    >>> print(compare("=", None, 1))
    None
    """
    if left is None or right is None:
        return None
    left_type, right_type = type(left), type(right)
    if left_type in _NUMBER_TYPES and right_type in _NUMBER_TYPES:
        if left != left or right != right:  # NaN equals nothing and is not ordered
            return operator_text == "<>"
        # Decimal against float: widen the float exactly, since a trapped FloatOperation in the
        # caller's decimal context would make a mixed ordering comparison raise.
        if left_type is Decimal and right_type is float:
            right = Decimal.from_float(right)  # type: ignore[arg-type]
        elif left_type is float and right_type is Decimal:
            left = Decimal.from_float(left)  # type: ignore[arg-type]
        return _COMPARISONS[operator_text](left, right)
    if left_type is right_type and (left_type is str or left_type is bool):
        if operator_text == "=":
            return left == right
        if operator_text == "<>":
            return left != right
    return False


def _as_number(value: Value) -> int | float | Decimal | None:
    """The value itself when it is a number (never a bool), else None."""
    return value if type(value) in _NUMBER_TYPES else None  # type: ignore[return-value]


def _long_or_float(value: int) -> int | float:
    if _LONG_MIN <= value <= _LONG_MAX:
        return value
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _divide_floats(dividend: float, divisor: float) -> float:
    if divisor != 0:
        return dividend / divisor
    if dividend == 0 or dividend != dividend:
        return math.nan
    return math.copysign(math.inf, dividend) * math.copysign(1.0, divisor)


_DECIMAL_OPERATIONS: Final[dict[str, Callable[[Any, Any], Decimal]]] = {
    "+": _DECIMAL_CONTEXT.add,
    "-": _DECIMAL_CONTEXT.subtract,
    "*": _DECIMAL_CONTEXT.multiply,
    "/": _DECIMAL_CONTEXT.divide,
}
_EXACT_OPERATIONS: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
}


def arithmetic(operator_text: str, left: Value, right: Value) -> Value:
    """Apply ``+ - * /`` to two normalized values; NULL unless both are numbers.

    >>> arithmetic("/", 7, 2), arithmetic("/", -1, 0.0), arithmetic("*", 2**62, 4)
    (3.5, -inf, 1.8446744073709552e+19)
    >>> print(arithmetic("+", 1, "1"))
    None
    """
    a, b = _as_number(left), _as_number(right)
    if a is None or b is None:
        return None
    if isinstance(a, int):
        a = _long_or_float(a)
    if isinstance(b, int):
        b = _long_or_float(b)
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        if not isinstance(a, float) and not isinstance(b, float):
            result = _DECIMAL_OPERATIONS[operator_text](a, b)
            return math.nan if result.is_nan() else result
        a, b = float(a), float(b)
    if operator_text == "/":
        return _divide_floats(a, b)
    exact: int | float = _EXACT_OPERATIONS[operator_text](a, b)
    return _long_or_float(exact) if isinstance(exact, int) else exact


def negate(value: Value) -> Value:
    """Unary minus of a normalized value; NULL unless it is a number.

    >>> negate(-(2**63)), negate(Decimal("1.5")), negate(True)
    (9.223372036854776e+18, Decimal('-1.5'), None)
    """
    if type(value) is int:
        return _long_or_float(-value)
    if type(value) is float:
        return -value
    if type(value) is Decimal:
        return value.copy_negate()
    return None
