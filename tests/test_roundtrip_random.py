"""Any tree the parser could produce prints as text that parses back to the same tree.

Together with the round-trip fixtures, this holds the printer in ``ast.py`` and the parser to one
language: canonical text is a faithful serialization, which the index and the Spark pipeline rely
on when they ship selectors as text.
"""

from __future__ import annotations

from hypothesis import example, given
from strategies import selectors

from bitsift import parse
from bitsift.selectors.ast import (
    Arithmetic,
    Comparison,
    Identifier,
    IntegerLiteral,
    Like,
    Negate,
    Node,
    StringLiteral,
)


@given(selectors())
@example(Comparison("=", Negate(IntegerLiteral(5)), IntegerLiteral(-5)))
@example(
    Comparison(">", Arithmetic("-", Identifier("a"), IntegerLiteral(-(2**63))), Identifier("b"))
)
@example(Like(Identifier("x-request-id"), "100!%'", "!"))
@example(Comparison("=", Identifier('say "hi"'), StringLiteral("it's\n")))
def test_printed_tree_parses_back(tree: Node) -> None:
    text = str(tree)
    assert parse(text).ast == tree, text
