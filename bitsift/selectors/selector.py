"""A parsed selector: the text a subscriber wrote, its syntax tree, and its meaning.

Parsing and evaluation are separate steps (as in cel-python and jmespath): :func:`bitsift.parse`
checks the text once, and the resulting :class:`Selector` is evaluated against as many messages as
needed. A ``Selector`` is immutable and shared: ``parse`` caches by text, and many subscriptions in
a broker use the same few selectors.

A ``Selector`` pickles as its text (and the limits it was parsed under, when they are not the
defaults) and re-parses when loaded, which keeps Spark broadcasts small and means a pickle never
smuggles in a tree the parser would have refused. Re-parsing under the same limits means a
selector that parsed once also loads anywhere, whatever the receiving process's own limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bitsift.selectors.ast import Node
from bitsift.selectors.evaluate import evaluate as evaluate_node
from bitsift.selectors.evaluate import identifiers
from bitsift.selectors.limits import DEFAULT_LIMITS, Limits

__all__ = ["Selector"]


class Selector:
    """A compiled message selector. Make one with :func:`bitsift.parse`.

    >>> import bitsift
    >>> selector = bitsift.parse("region = 'eu' AND price BETWEEN 50 AND 55")
    >>> selector.matches({"region": "eu", "price": 52})
    True
    >>> print(selector.evaluate({"region": "eu"}))  # price is missing: UNKNOWN
    None
    >>> sorted(selector.fields)
    ['price', 'region']
    """

    __slots__ = ("_text", "_ast", "_fields", "_limits")

    def __init__(self, text: str, ast: Node | None, limits: Limits = DEFAULT_LIMITS) -> None:
        self._text = text
        self._ast = ast
        self._limits = limits
        self._fields: frozenset[str] | None = None

    @property
    def text(self) -> str:
        """The selector text exactly as it was written."""
        return self._text

    @property
    def ast(self) -> Node | None:
        """The syntax tree; ``None`` for an empty selector, which matches every message."""
        return self._ast

    @property
    def fields(self) -> frozenset[str]:
        """Names of the message properties the selector reads."""
        if self._fields is None:
            self._fields = identifiers(self._ast) if self._ast is not None else frozenset()
        return self._fields

    @property
    def canonical(self) -> str:
        """Canonical text: the same for selectors that differ only in spacing, case of keywords or
        redundant parentheses."""
        return "" if self._ast is None else str(self._ast)

    def evaluate(self, message: Mapping[str, Any]) -> bool | None:
        """Three-valued result: ``True``, ``False``, or ``None`` for UNKNOWN.

        Never raises because of what the message holds: values of types the selector language
        does not know compare as unlike types (FALSE), and arithmetic follows IEEE 754.
        """
        if self._ast is None:
            return True
        return evaluate_node(self._ast, message)

    def matches(self, message: Mapping[str, Any]) -> bool:
        """True only when the selector is TRUE for the message (UNKNOWN does not match)."""
        return self._ast is None or evaluate_node(self._ast, message) is True

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return self._ast == other._ast

    def __hash__(self) -> int:
        return hash(self._ast)

    def __repr__(self) -> str:
        return f"bitsift.parse({self._text!r})"

    def __str__(self) -> str:
        return self._text

    def __reduce__(self) -> tuple[Any, tuple[str] | tuple[str, Limits]]:
        from bitsift.selectors.parser import reparse

        if self._limits == DEFAULT_LIMITS:
            return (reparse, (self._text,))
        return (reparse, (self._text, self._limits))
