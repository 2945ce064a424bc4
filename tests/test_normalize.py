"""The DNF the index is built from has exactly the TRUE-set of the selector it came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import conditions, messages

from bitsift import parse
from bitsift.index.criteria import FieldTest, Residual, classify
from bitsift.index.normalize import Conjunction, explain, to_dnf
from bitsift.selectors.ast import Node
from bitsift.selectors.evaluate import evaluate
from bitsift.selectors.values import lookup


def dnf_holds(dnf: list[Conjunction], message: Mapping[str, Any]) -> bool:
    def holds(atom: FieldTest | Residual) -> bool:
        if isinstance(atom, Residual):
            return evaluate(atom.node, message) is atom.want
        kind, value = classify(lookup(message, atom.field))
        return atom.holds(kind, value)

    return any(all(holds(atom) for atom in conjunction) for conjunction in dnf)


@given(conditions(), st.lists(messages(), min_size=1, max_size=5))
def test_dnf_is_true_exactly_where_the_selector_is(node: Node, batch: list[dict[str, Any]]) -> None:
    dnf = to_dnf(node)
    for message in batch:
        assert dnf_holds(dnf, message) == (evaluate(node, message) is True)


@given(conditions(), st.lists(messages(), min_size=1, max_size=5))
def test_a_tiny_cap_falls_back_to_residuals_without_changing_results(
    node: Node, batch: list[dict[str, Any]]
) -> None:
    dnf = to_dnf(node, max_conjunctions=1)
    # The cap binds where AND and OR combine; a single leaf may still read as two conjunctions
    # (x NOT BETWEEN a AND b is "below a" or "above b").
    assert len(dnf) <= 2
    for message in batch:
        assert dnf_holds(dnf, message) == (evaluate(node, message) is True)


CASES = [
    # (selector, the index's reading of it)
    ("region = 'eu'", "region in {'eu'}"),
    ("NOT region = 'eu'", "region present and not in {'eu'}"),
    ("region <> 'eu'", "region is string AND region present and not in {'eu'}"),
    ("price BETWEEN 1 AND 2", "price in [1, 2]"),
    ("price NOT BETWEEN 1 AND 2", "price in (-inf, 1)\nprice in (2, +inf)"),
    ("price > 5 AND price <= 7.5", "price in (-inf, 7.5] AND price in (5, +inf)"),
    ("a IS NULL OR b IS NOT NULL", "a missing\nb present"),
    ("urgent", "urgent in {True}"),
    ("NOT urgent", "urgent present and not in {True}"),
    ("name LIKE 'ab%'", "name starts with 'ab'"),
    ("name LIKE 'ab'", "name in {'ab'}"),
    ("kind IN ('a', 'b')", "kind in {'a', 'b'}"),
    ("price * qty > 100", "price present AND qty present AND evaluate(price * qty > 100) is TRUE"),
    ("1 = 1", "TRUE"),
    ("1 = 2", "never TRUE"),
    ("x = 0/0", "never TRUE"),
]


@pytest.mark.parametrize(("selector", "expected"), CASES)
def test_explain_shows_the_criteria(selector: str, expected: str) -> None:
    assert explain(parse(selector).ast) == expected
