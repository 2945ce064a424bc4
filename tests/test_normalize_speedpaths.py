"""The shortcuts that make ``to_dnf`` fast never change what it returns.

``to_dnf`` remembers leaves in a bounded cache keyed by flat tuples, decides constant ``AND``/``OR``
from their operands, and sorts conjunctions of distinct plain fields by field name instead of by
text; the column table skips lane counting for one test per field. Each shortcut is checked here
against the slow rule it replaces, and every DNF against the reference evaluator in three-valued
logic.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import boolean_literals, conditions, identifiers, messages, selectors
from test_normalize import dnf_holds

from bitsift import parse
from bitsift.index import normalize
from bitsift.index.columns import ColumnTable
from bitsift.index.criteria import MISSING, Atom, Equals, FieldTest, InRange, OfType, Residual
from bitsift.index.criteria import Kind as ValueKind
from bitsift.index.normalize import Conjunction, clear_caches, to_dnf
from bitsift.samples import w3_selector_texts
from bitsift.selectors.ast import (
    And,
    Arithmetic,
    Between,
    BooleanLiteral,
    Comparison,
    ComparisonOperator,
    Condition,
    FloatLiteral,
    Identifier,
    In,
    IntegerLiteral,
    IsNull,
    Like,
    Node,
    Not,
    Or,
    StringLiteral,
)
from bitsift.selectors.evaluate import evaluate


@pytest.fixture(autouse=True)
def _cold_caches() -> Iterator[None]:
    clear_caches()
    yield
    clear_caches()


def ast_of(text: str) -> Any:
    """The tree of ``text``, typed loosely: AND, OR and NOT take any condition in these tests."""
    node = parse(text).ast
    assert node is not None
    return node


def canonical_order(conjunction: Conjunction) -> list[tuple[bool, str]]:
    return [(isinstance(atom, Residual), str(atom)) for atom in conjunction]


def assert_canonical(conjunction: Conjunction) -> None:
    """The general rule: no duplicates, no implied presence test, sorted by text."""
    assert len(set(conjunction)) == len(conjunction)
    tested = {
        atom.field
        for atom in conjunction
        if isinstance(atom, FieldTest) and atom.criterion != MISSING
    }
    for atom in conjunction:
        if isinstance(atom, FieldTest) and atom.criterion == MISSING and atom.negated:
            assert atom.field not in tested, conjunction
    keys = canonical_order(conjunction)
    assert keys == sorted(keys)


# -- the whole function -------------------------------------------------------------------------


@given(selectors(max_depth=4), st.lists(messages(), min_size=1, max_size=4))
def test_cold_warm_and_exact(node: Node, batch: list[dict[str, Any]]) -> None:
    clear_caches()
    cold = to_dnf(node)
    warm = to_dnf(node)
    assert cold == warm
    assert [canonical_order(c) for c in cold] == [canonical_order(c) for c in warm]
    for conjunction in cold:
        assert_canonical(conjunction)
    for message in batch:
        assert dnf_holds(cold, message) == (evaluate(node, message) is True)


@given(
    conditions(max_depth=3),
    st.sampled_from([-1, 0, 1, 2]),
    st.lists(messages(), min_size=1, max_size=4),
)
def test_any_cap_even_a_degenerate_one_stays_exact(
    node: Node, cap: int, batch: list[dict[str, Any]]
) -> None:
    dnf = to_dnf(node, cap)
    for message in batch:
        assert dnf_holds(dnf, message) == (evaluate(node, message) is True)


UNKNOWN = Comparison(
    "=", Arithmetic("+", BooleanLiteral(True), IntegerLiteral(1)), IntegerLiteral(1)
)
"""A constant the parser refuses (``TRUE + 1 = 1``) but whose value is defined: UNKNOWN."""
CONSTANT_CASES: list[tuple[Node, list[Conjunction]]] = [
    # Constant AND/OR are decided from their operands, whatever the cap (even 0).
    (ast_of("1 = 1 AND 2 = 2"), [()]),
    (ast_of("1 = 1 AND 2 = 3"), []),
    (ast_of("1 = 2 OR 2 = 2"), [()]),
    (ast_of("NOT (1 = 2 OR 2 = 3)"), [()]),
    (Or((UNKNOWN, ast_of("1 = 2"))), []),  # UNKNOWN OR FALSE is UNKNOWN: never TRUE
    (Not(And((UNKNOWN, ast_of("1 = 1")))), []),  # NOT UNKNOWN is UNKNOWN
    (Not(Or((UNKNOWN, ast_of("1 = 1")))), []),  # UNKNOWN OR TRUE is TRUE
    (Not(And((UNKNOWN, ast_of("1 = 2")))), [()]),  # UNKNOWN AND FALSE is FALSE
]


@pytest.mark.parametrize(("node", "expected"), CONSTANT_CASES, ids=str)
@pytest.mark.parametrize("cap", [0, 1, 64])
def test_constant_trees_are_decided_without_a_message(
    node: Node, expected: list[Conjunction], cap: int
) -> None:
    assert (evaluate(node, {}) is True) == (expected == [()])
    assert to_dnf(node, cap) == expected


def test_the_w3_selectors_read_the_same_cold_and_warm() -> None:
    nodes = [ast_of(text) for text, _ in w3_selector_texts(300, seed=11)]
    cold = [to_dnf(node) for node in nodes]
    assert [to_dnf(node) for node in nodes] == cold
    for dnf in cold:
        for conjunction in dnf:
            assert_canonical(conjunction)


# -- leaf keys ----------------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "a b"])
LITERALS = st.one_of(
    st.sampled_from([IntegerLiteral(0), IntegerLiteral(1), IntegerLiteral(-1)]),
    st.sampled_from([FloatLiteral(0.0), FloatLiteral(-0.0), FloatLiteral(1.0), FloatLiteral(1.5)]),
    st.sampled_from([BooleanLiteral(True), BooleanLiteral(False)]),
    st.sampled_from([StringLiteral(""), StringLiteral("1"), StringLiteral("a")]),
)
IN_ITEMS: st.SearchStrategy[StringLiteral | IntegerLiteral | FloatLiteral] = st.sampled_from(
    [StringLiteral("x"), StringLiteral("1"), IntegerLiteral(1), FloatLiteral(1.0)]
    + [FloatLiteral(0.0), FloatLiteral(-0.0)]
)


@st.composite
def small_leaves(draw: st.DrawFn) -> Condition | Identifier:
    """Leaves from a tiny domain, so that equal and almost-equal pairs are common."""
    name = Identifier(draw(NAMES))
    negated = draw(st.booleans())
    choice = draw(st.integers(0, 6))
    if choice == 0:
        operator: ComparisonOperator = draw(st.sampled_from(["=", "<>", "<", ">="]))
        value = draw(LITERALS)
        return (
            Comparison(operator, name, value)
            if draw(st.booleans())
            else Comparison(operator, value, name)
        )
    if choice == 1:
        return Between(name, draw(LITERALS), draw(LITERALS), negated)
    if choice == 2:
        return In(name, tuple(draw(st.lists(IN_ITEMS, min_size=1, max_size=3))), negated)
    if choice == 3:
        return Like(
            name, draw(st.sampled_from(["a%", "a", "_"])), draw(st.sampled_from([None, "!"]))
        )
    if choice == 4:
        return IsNull(name, negated)
    if choice == 5:
        return name
    return Comparison("=", name, Identifier(draw(NAMES)))  # no flat key: the node is its own


@given(small_leaves(), small_leaves())
def test_leaf_keys_are_equal_exactly_when_the_leaves_are(first: Node, second: Node) -> None:
    first_key, second_key = normalize._leaf_key(first), normalize._leaf_key(second)
    assert (first_key == second_key) == (first == second)
    if first == second:
        assert hash(first_key) == hash(second_key)


@given(small_leaves(), st.booleans())
def test_a_remembered_leaf_reads_as_a_fresh_one(node: Node, want: bool) -> None:
    fresh = normalize._leaf_result(node, want)
    clear_caches()
    assert normalize._truth(node, want, 64) == fresh  # remembers it
    assert normalize._truth(node, want, 64) == fresh  # from the cache
    assert [canonical_order(c) for c in normalize._truth(node, want, 64)[0]] == [
        canonical_order(c) for c in fresh[0]
    ]


X = Identifier("x")
ZERO, NEGATIVE_ZERO = FloatLiteral(0.0), FloatLiteral(-0.0)
NEAR_TWINS = [
    # Unequal leaves that a careless flat key would merge: 0.0 == -0.0, 1 == 1.0 == True.
    (Comparison("=", X, ZERO), Comparison("=", X, NEGATIVE_ZERO)),
    (Comparison("<", ZERO, X), Comparison("<", NEGATIVE_ZERO, X)),
    (Between(X, ZERO, IntegerLiteral(1)), Between(X, NEGATIVE_ZERO, IntegerLiteral(1))),
    (Between(X, IntegerLiteral(-1), ZERO), Between(X, IntegerLiteral(-1), NEGATIVE_ZERO)),
    (In(X, (StringLiteral("a"), ZERO)), In(X, (StringLiteral("a"), NEGATIVE_ZERO))),
    (Comparison("=", X, IntegerLiteral(1)), Comparison("=", X, FloatLiteral(1.0))),
    (Comparison("=", X, IntegerLiteral(1)), Comparison("=", X, BooleanLiteral(True))),
    (In(X, (IntegerLiteral(1),)), In(X, (FloatLiteral(1.0),))),
    (Comparison("=", X, StringLiteral("x")), Comparison("=", StringLiteral("x"), X)),
]


@pytest.mark.parametrize(("first", "second"), NEAR_TWINS, ids=str)
def test_near_twins_are_remembered_apart(first: Node, second: Node) -> None:
    assert first != second
    assert normalize._leaf_key(first) != normalize._leaf_key(second)
    expected = [canonical_order(c) for c in to_dnf(second)]
    clear_caches()
    to_dnf(first)
    assert [canonical_order(c) for c in to_dnf(second)] == expected


def test_zero_and_negative_zero_read_differently() -> None:
    assert [str(a) for [a] in to_dnf(Comparison("=", X, ZERO))] == ["x in {0.0}"]
    assert [str(a) for [a] in to_dnf(Comparison("=", X, NEGATIVE_ZERO))] == ["x in {-0.0}"]


# -- the cache's bounds -------------------------------------------------------------------------


def test_a_large_leaf_is_not_remembered() -> None:
    items = ", ".join(f"'{number}'" for number in range(300))
    large = ast_of(f"x IN ({items})")
    small = ast_of("x IN ('a', 'b')")
    to_dnf(large)
    to_dnf(small)
    remembered = normalize._RECENT[True]
    assert normalize._leaf_key(small) in remembered
    assert normalize._leaf_key(large) not in remembered
    long_name = ast_of('"' + "n" * 400 + '" = 1')
    to_dnf(long_name)
    assert normalize._leaf_key(long_name) not in remembered


def test_the_leaf_cache_never_passes_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(normalize, "LEAF_CACHE_LIMIT", 8)
    for number in range(50):
        to_dnf(ast_of(f"x = {number} AND NOT y = {number}"))
        generations = (*normalize._RECENT, *normalize._EARLIER)
        assert all(len(generation) <= 8 for generation in generations)


def test_a_leaf_in_use_survives_the_generations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(normalize, "LEAF_CACHE_LIMIT", 8)
    hot = ast_of("exchange = 'nyse'")
    first = normalize._truth(hot, True, 64)
    for number in range(100):  # one-off leaves: many generations come and go
        to_dnf(ast_of(f"price BETWEEN {number} AND {number + 5} AND exchange = 'nyse'"))
        assert normalize._truth(hot, True, 64) is first  # never recomputed: the same atoms
    one_off = normalize._leaf_key(ast_of("price BETWEEN 0 AND 5"))
    assert all(one_off not in generation for generation in normalize._RECENT)
    assert all(one_off not in generation for generation in normalize._EARLIER)


def test_leaf_weights_stop_counting_past_the_limit() -> None:
    limit = normalize.LEAF_CACHE_MAX_WEIGHT
    wide = ast_of(" + ".join(["price"] * 90) + " > 1")
    huge = ast_of("x IN (" + ", ".join(["'a'"] * 5000) + ")")
    assert limit < normalize._leaf_weight(wide) < 2 * limit  # not the whole tree's weight
    assert normalize._leaf_weight(huge) > limit
    assert normalize._leaf_weight(ast_of("x BETWEEN 1 AND 2")) < limit // 2


def test_threads_sharing_a_tiny_cache_get_the_same_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nodes = [ast_of(text) for text, _ in w3_selector_texts(200, seed=5)]
    expected = [to_dnf(node) for node in nodes]
    monkeypatch.setattr(normalize, "LEAF_CACHE_LIMIT", 16)  # emptied again and again
    failures: list[str] = []

    def work() -> None:
        for _ in range(3):
            for node, dnf in zip(nodes, expected, strict=True):
                if to_dnf(node) != dnf:
                    failures.append(str(node))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []


# -- conjunctions -------------------------------------------------------------------------------

FIELD_NAMES = st.sampled_from(["a", "a b", "a.b", "ab", "a\tb", "a!", "", " ", "b", "\x00"])
CRITERIA = st.sampled_from(
    [
        MISSING,
        Equals(frozenset([("s", "x")])),
        Equals(frozenset([("n", 1)])),
        OfType(ValueKind.STRING),
        InRange(1, True, None, False),
        InRange(1.0, True, None, False),  # equal to the one above, printed differently
    ]
)
ATOMS = st.one_of(
    st.builds(FieldTest, FIELD_NAMES, CRITERIA, st.booleans()),
    st.builds(
        Residual,
        st.sampled_from([ast_of("a * b > 1"), ast_of("a LIKE '%x'")]),
        st.booleans(),
    ),
)


@given(st.lists(st.lists(ATOMS, max_size=3), min_size=1, max_size=4))
def test_the_fast_conjunction_equals_the_general_rule(atom_lists: list[list[Atom]]) -> None:
    parts = [normalize._canonical(atoms) for atoms in atom_lists]  # as every conjunction made is
    fast = normalize._conjoin(parts)
    general = normalize._canonical([atom for part in parts for atom in part])
    assert fast == general
    assert canonical_order(fast) == canonical_order(general)
    assert_canonical(fast)


@given(st.lists(FIELD_NAMES, min_size=2, max_size=5, unique=True))
def test_distinct_plain_fields_sort_by_name_as_by_text(names: list[str]) -> None:
    atoms = tuple(FieldTest(name, OfType(ValueKind.NUMBER)) for name in names)
    conjunction = normalize._conjoin([atoms])
    assert canonical_order(conjunction) == sorted(canonical_order(conjunction))


# -- the shapes of real selectors ---------------------------------------------------------------


def leaf_nodes() -> st.SearchStrategy[Node]:
    return st.one_of(conditions(max_depth=0), identifiers(), boolean_literals)


@given(
    st.lists(leaf_nodes(), min_size=1, max_size=5),
    st.booleans(),
    st.lists(messages(), min_size=1, max_size=4),
)
def test_and_or_of_leaves_is_exact(
    leaves: list[Any], use_or: bool, batch: list[Mapping[str, Any]]
) -> None:
    node: Any = leaves[0]  # AND, OR and NOT take identifiers and boolean literals too
    if len(leaves) > 1:
        node = Or(tuple(leaves)) if use_or else And(tuple(leaves))
    for tree in (node, Not(node)):
        dnf = to_dnf(tree)
        for message in batch:
            assert dnf_holds(dnf, message) == (evaluate(tree, message) is True)


# -- column table -------------------------------------------------------------------------------


@given(st.lists(selectors(max_depth=3), min_size=1, max_size=6), st.randoms())
def test_columns_number_lanes_and_share_residuals_whatever_the_shortcut(
    nodes: list[Node], random: Any
) -> None:
    table = ColumnTable()
    columns = []
    for node in nodes:
        for conjunction in to_dnf(node):
            column, _ = table.acquire((None, conjunction))
            columns.append(column)
            # Each field test's lane is how many tests of its field come before it.
            expected = []
            for position, atom in enumerate(conjunction):
                if isinstance(atom, FieldTest):
                    earlier = conjunction[:position]
                    lane = sum(isinstance(a, FieldTest) and a.field == atom.field for a in earlier)
                    expected.append((lane, atom))
            assert column.field_tests == expected
            assert column.residuals == tuple(a for a in conjunction if isinstance(a, Residual))
            assert table.by_number[column.number] is column
    live = {column.number: column for column in columns}
    assert sorted(live) == list(range(len(live)))  # dense numbers, lowest first
    random.shuffle(columns)
    for column in columns:
        if column.number in live:
            del live[column.number]
            table.release(column)
    assert len(table) == 0 and table._residuals == {}
