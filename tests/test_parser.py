"""The parser's promises: any text gives a Selector or a SelectorSyntaxError (never another
exception, a hang or a blown stack), errors point at the right place in words people use, the
limits hold and can be changed, and parsed selectors cache, pickle and print back faithfully.

What each selector *means* is pinned by the conformance data (tests/test_conformance.py); this
module is about the text-to-tree step itself.
"""

from __future__ import annotations

import copy
import logging
import pickle
import re
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from lark import Lark
from lark import logger as lark_logger
from strategies import selector_texts

import bitsift
from bitsift.errors import SelectorSyntaxError
from bitsift.selectors import parser as parser_module
from bitsift.selectors.ast import IDENTIFIER_PART, RESERVED_WORDS, And, Not, Or
from bitsift.selectors.limits import (
    DEFAULT_LIMITS,
    MAX_DEPTH_CEILING,
    Limits,
    get_limits,
    set_limits,
)
from bitsift.selectors.parser import CACHE_CHARACTERS, cache_info, clear_cache, parse

GRAMMAR = Path(bitsift.__file__).parent / "selectors" / "selector.lark"
DATA = Path(__file__).parent / "data"
ROUNDTRIP = DATA / "roundtrip.txt"
TERMINAL_NAMES = re.compile(
    r"__ANON|\$END|\bLPAR\b|\bRPAR\b|\bCOMMA\b|\bSIGN\b|MULTIPLY|COMPARISON|QUOTED_IDENTIFIER"
    r"|\bIDENTIFIER\b|\bSTRING\b|\bNUMBER\b|FORBIDDEN|Token\(|Lark"
)
"""Lark's own names for things, which must never reach a person reading an error."""

SELECTORISH = "ab$_.é0129xXeEfLdD'\"()=<>!+-*/%,;&| \t\n\r\u2028" + "".join(
    ["AND ", "OR ", "NOT ", "IN ", "LIKE ", "IS ", "NULL ", "BETWEEN ", "ESCAPE ", "TRUE "]
)


def check_outcome(text: str) -> None:
    """Parse ``text``; anything but a Selector or a well-formed SelectorSyntaxError fails."""
    try:
        selector = parse(text)
    except SelectorSyntaxError as error:
        assert error.text == text
        lines = text.splitlines() or [""]
        assert 1 <= error.line <= len(lines), (error.line, len(lines))
        assert 1 <= error.column <= len(lines[error.line - 1]) + 1, error.column
        assert not TERMINAL_NAMES.search(error.reason), error.reason
        message = str(error)
        assert f"line {error.line}, column {error.column} of the selector" in message
        assert message.rstrip().endswith("^"), message
        return
    if selector.ast is not None:
        assert parse(str(selector.ast)).ast == selector.ast


# -- any text whatsoever -------------------------------------------------------------------------


@given(st.text(alphabet=st.sampled_from(list(SELECTORISH)), max_size=60))
@example("a = 1 -- comment")
@example("a = '\u2028' AND b != 1")
@example("a = " + "9" * 5000)
@example("((((a = 1")
@example(")")
@example("'")
@example('"')
@example("NOT")
def test_selectorish_text_parses_or_raises_our_error(text: str) -> None:
    check_outcome(text)


@given(st.text(max_size=80))
def test_any_text_parses_or_raises_our_error(text: str) -> None:
    check_outcome(text)


@st.composite
def mutated_selectors(draw: st.DrawFn) -> str:
    """A valid selector with a few characters inserted, deleted or replaced."""
    text = draw(selector_texts(max_depth=2))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        char = draw(st.sampled_from(list(SELECTORISH)))
        if kind == "insert":
            text = text[:position] + char + text[position:]
        elif kind == "delete":
            text = text[:position] + text[position + 1 :]
        else:
            text = text[:position] + char + text[position + 1 :]
    return text


@given(mutated_selectors())
def test_mutated_selectors_parse_or_raise_our_error(text: str) -> None:
    check_outcome(text)


@pytest.mark.parametrize("value", [None, 5, b"a = 1", ["a = 1"], 1.5])
def test_non_text_is_a_syntax_error(value: object) -> None:
    with pytest.raises(SelectorSyntaxError, match="must be text"):
        parse(value)  # type: ignore[arg-type]


def test_str_subclass_is_read_as_plain_text() -> None:
    class Sneaky(str):
        def __hash__(self) -> int:
            raise RuntimeError("must not be hashed")

    selector = parse(Sneaky("a = 1"))
    assert type(selector.text) is str
    assert selector.matches({"a": 1})


def test_limits_must_be_limits() -> None:
    with pytest.raises(TypeError, match="bitsift.Limits"):
        parse("a = 1", limits={"max_depth": 5})  # type: ignore[arg-type]


# -- depth, chains and the limits ----------------------------------------------------------------


def test_ten_thousand_parentheses_work() -> None:
    selector = parse("(" * 10_000 + "a = 1" + ")" * 10_000)
    assert selector.matches({"a": 1})
    assert str(selector.ast) == "a = 1"


def test_ten_thousand_unclosed_parentheses_are_a_clear_error() -> None:
    with pytest.raises(SelectorSyntaxError, match="ends too early: expected"):
        parse("(" * 10_000 + "a = 1")


def test_ten_thousand_nots_are_too_deep() -> None:
    with pytest.raises(SelectorSyntaxError, match=r"nests more than 100 levels.*max_depth"):
        parse("NOT " * 10_000 + "a")


def test_nesting_up_to_the_limit_works_and_prints_compares_hashes_pickles() -> None:
    limits = Limits(max_depth=MAX_DEPTH_CEILING)
    text = "NOT " * (MAX_DEPTH_CEILING - 1) + "a"
    selector = parse(text, limits=limits)
    assert selector.evaluate({"a": False}) is (MAX_DEPTH_CEILING % 2 == 0)
    again = parse(str(selector.ast), limits=limits)
    assert again.ast == selector.ast and hash(again.ast) == hash(selector.ast)
    assert pickle.loads(pickle.dumps(selector.ast)) == selector.ast
    assert copy.deepcopy(selector.ast) is selector.ast
    with pytest.raises(SelectorSyntaxError, match="nests more than"):
        parse("NOT " + text, limits=limits)


@pytest.mark.parametrize(
    "text",
    [
        "a = " + " + ".join(["b"] * 101),
        "a = " + "- " * 100 + "b",
        "(a = " * 101 + "b" + ")" * 101,
        "(a AND (b OR " * 60 + "c" + ")" * 120,
    ],
    ids=["sum", "minus", "comparisons", "and-or"],
)
def test_every_kind_of_nesting_counts_towards_max_depth(text: str) -> None:
    with pytest.raises(SelectorSyntaxError, match="Limits.max_depth"):
        parse(text)
    parse(text, limits=Limits(max_depth=MAX_DEPTH_CEILING))


@pytest.mark.parametrize("joiner, kind", [(" OR ", Or), (" AND ", And)])
def test_five_thousand_term_chains_work_with_the_default_limits(
    joiner: str, kind: type[And] | type[Or]
) -> None:
    text = joiner.join(f"a = {index % 10}" for index in range(5_000))
    node = parse(text).ast
    assert isinstance(node, kind) and len(node.operands) == 5_000


def test_chains_flatten_through_parentheses_without_copying_per_level() -> None:
    # Right-nested, left-nested and alternating parentheses all flatten to one chain.
    depth = 3_000
    right = "a = 0 OR (" * depth + "a = 1" + ")" * depth
    left = "(" * depth + "a = 0" + " OR a = 1)" * depth
    for text in (right, left):
        node = parse(text, limits=Limits(max_length=200_000)).ast
        assert isinstance(node, Or) and len(node.operands) == depth + 1
    mixed = parse("(a AND b) OR ((c OR d) AND NOT (e OR (f OR g)))").ast
    assert str(mixed) == "a AND b OR (c OR d) AND NOT (e OR f OR g)"


def test_ten_thousand_term_chain_works_when_the_length_allows() -> None:
    text = " OR ".join(f"a{index} = 1" for index in range(10_000))
    with pytest.raises(SelectorSyntaxError, match="Limits.max_length"):
        parse(text)
    node = parse(text, limits=Limits(max_length=len(text))).ast
    assert isinstance(node, Or) and len(node.operands) == 10_000


def test_max_terms() -> None:
    limits = Limits(max_terms=3)
    parse("a AND b AND c", limits=limits)
    with pytest.raises(SelectorSyntaxError, match=r"more than 3 terms joined by OR") as raised:
        parse("a OR b OR (c OR d)", limits=limits)
    assert raised.value.column == 12  # the chain that went over


def test_max_in_items() -> None:
    limits = Limits(max_in_items=3)
    parse("a IN ('x', 'y', 'z')", limits=limits)
    with pytest.raises(SelectorSyntaxError, match="more than 3 items in one IN list") as raised:
        parse("a IN ('x', 'y', 'z', 'w')", limits=limits)
    assert raised.value.column == 22
    items = ", ".join(["'x'"] * 10_001)
    with pytest.raises(SelectorSyntaxError, match="Limits.max_in_items"):
        parse(f"a IN ({items})", limits=Limits(max_length=100_000))


def test_max_length_points_past_the_limit() -> None:
    with pytest.raises(SelectorSyntaxError, match="10 characters long; the limit is 8") as raised:
        parse("a = 'xyzw'", limits=Limits(max_length=8))
    assert (raised.value.line, raised.value.column) == (1, 9)
    with pytest.raises(SelectorSyntaxError, match="Limits.max_length"):
        parse(" " * 70_000)  # even blank text is measured first


def test_process_wide_limits_apply_and_restore() -> None:
    previous = set_limits(max_in_items=2)
    try:
        assert get_limits().max_in_items == 2
        with pytest.raises(SelectorSyntaxError, match="more than 2 items"):
            parse("a IN ('x', 'y', 'z')")
        parse("a IN ('x', 'y', 'z')", limits=DEFAULT_LIMITS)  # an explicit limit wins
    finally:
        set_limits(previous)
    assert get_limits() == previous
    parse("a IN ('x', 'y', 'z')")


@pytest.mark.parametrize(
    "changes",
    [
        {"max_depth": 0},
        {"max_length": -1},
        {"max_terms": True},
        {"max_depth": MAX_DEPTH_CEILING + 1},
    ],
)
def test_bad_limits_are_refused(changes: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="Limits.max_"):
        Limits(**changes)


# -- errors: where and what ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, reason, line, column",
    [
        ("a != 1", "write '<>'", 1, 3),
        ("a == 1", "write '='", 1, 3),
        ("a = 1 && b = 2", "write AND", 1, 7),
        ("a = 1 -- note", "comments are not part", 1, 7),
        ("a = 1 /* note */", "comments are not part", 1, 7),
        ("a % 2 = 1", "modulo", 1, 3),
        ("length(a) = 1", "function calls", 1, 7),
        ("a = NULL", "write 'name IS NULL'", 1, 5),
        ("a IN ()", "at least one item", 1, 7),
        ("price > 'cheap'", "must be a number or a property, not a string", 1, 9),
        ("5", "the whole selector must be a condition, not a number", 1, 1),
        ("a + 1", "must be a condition, not a number", 1, 1),
        ("'x' LIKE 'y'", "left side of LIKE must be a property name", 1, 1),
        ("a LIKE 'x' ESCAPE 'ab'", "exactly one character", 1, 19),
        ("a.in = 1", "'in' is a reserved word", 1, 3),
        ("AND = 1", "reserved word", 1, 1),
        ("a = 1 AND", "ends too early: expected an operand", 1, 10),
        ("a = 1\n  AND\n", "ends too early", 2, 6),
        ("a = 1\nAND b != 2", "write '<>'", 2, 7),
        ("a = 1\r\nAND b != 2", "write '<>'", 2, 7),
        ("a = 1\rAND b != 2", "write '<>'", 2, 7),
        ("a = '\u2028' AND b != 1", "write '<>'", 2, 9),
        ("a = 'x\ny' AND b != 1", "write '<>'", 2, 10),
        ("a = 1)", "unexpected ')': expected the end of the selector", 1, 6),
        ("a = a = b", "unexpected '='", 1, 7),
        ("a = 'open", "no closing quote", 1, 5),
        ('"open = 1', "no closing double quote", 1, 1),
        ("a = 1;", "remove the ';'", 1, 6),
        ("a = #", "the character '#' has no meaning", 1, 5),
    ],
)
def test_error_reason_and_position(text: str, reason: str, line: int, column: int) -> None:
    with pytest.raises(SelectorSyntaxError) as raised:
        parse(text)
    error = raised.value
    assert reason in error.reason, error.reason
    assert (error.line, error.column) == (line, column), str(error)
    check_outcome(text)


def test_caret_sits_under_the_spot() -> None:
    with pytest.raises(SelectorSyntaxError) as raised:
        parse("region = 'eu'\n  AND price > 'cheap'")
    assert str(raised.value) == (
        "each side of > must be a number or a property, not a string "
        "(line 2, column 15 of the selector)\n"
        "      AND price > 'cheap'\n"
        "                  ^"
    )


def test_caret_on_a_very_long_line_shows_a_window() -> None:
    text = "a = 1 AND " * 2_000 + "b != 2" + " AND c = 3" * 2_000
    with pytest.raises(SelectorSyntaxError) as raised:
        parse(text)
    error = raised.value
    assert error.column == 20_003
    source, caret = str(error).split("\n")[1:]
    assert len(source) < 120 and source.strip().startswith("...")
    assert source[caret.index("^") : caret.index("^") + 2] == "!="


def test_errors_pickle() -> None:
    with pytest.raises(SelectorSyntaxError) as raised:
        parse("a != 1")
    copied = pickle.loads(pickle.dumps(raised.value))
    assert (copied.reason, copied.text, copied.line, copied.column) == (
        raised.value.reason,
        "a != 1",
        1,
        3,
    )
    assert isinstance(copied, bitsift.BitsiftError) and isinstance(copied, ValueError)


# -- the grammar file ----------------------------------------------------------------------------


def test_identifier_terminal_is_identifier_part_joined_by_dots() -> None:
    grammar = GRAMMAR.read_text(encoding="utf-8")
    (terminal,) = re.findall(r"^IDENTIFIER: /(.*)/$", grammar, flags=re.MULTILINE)
    part = IDENTIFIER_PART.pattern
    assert terminal == f"{part}(?:\\.{part})*"


def test_reserved_words_of_the_grammar_are_those_of_the_ast() -> None:
    grammar = GRAMMAR.read_text(encoding="utf-8")
    keywords = dict(re.findall(r'^([A-Z]+): "([A-Z]+)"i$', grammar, flags=re.MULTILINE))
    assert set(keywords) == RESERVED_WORDS and all(k == v for k, v in keywords.items())


def test_docs_quote_the_grammar_file() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "selectors.md").read_text(encoding="utf-8")
    (quoted,) = re.findall(r"```lark\n(.*?)```", docs, flags=re.DOTALL)
    grammar = GRAMMAR.read_text(encoding="utf-8")
    assert quoted.strip() == grammar[grammar.index("?start:") :].strip()


def test_grammar_has_no_lalr_conflicts(caplog: pytest.LogCaptureFixture) -> None:
    previous = lark_logger.level
    lark_logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            Lark(GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic")
    finally:
        lark_logger.setLevel(previous)
    assert not [record for record in caplog.records if "conflict" in record.getMessage()]


# -- round trip, pickling and the cache ----------------------------------------------------------


def roundtrip_lines() -> list[str]:
    lines = ROUNDTRIP.read_text(encoding="utf-8").split("\n")
    return [line for line in lines if line and not line.startswith("#")]


def test_roundtrip_fixture_covers_the_grammar() -> None:
    lines = roundtrip_lines()
    assert len(lines) >= 200
    text = "\n".join(lines)
    for construct in ("BETWEEN", "NOT IN", "ESCAPE", "IS NOT NULL", '"', "-(", "e+", "''"):
        assert construct in text, construct


@pytest.mark.parametrize("line", roundtrip_lines())
def test_roundtrip_fixture_prints_back_unchanged(line: str) -> None:
    assert str(parse(line).ast) == line


@pytest.mark.parametrize(
    "text",
    ["a = 1", "", "   ", "NOT a AND b IN ('x', 2)", "\"x-y\" LIKE '%!_' ESCAPE '!'"],
)
def test_selectors_pickle_as_their_text(text: str) -> None:
    selector = parse(text)
    data = pickle.dumps(selector)
    assert b"reparse" in data and text.encode() in data
    assert b"Comparison" not in data  # the tree is never pickled
    loaded = pickle.loads(data)
    assert loaded == selector and loaded.text == text


def test_pickle_keeps_the_limits_it_was_parsed_under() -> None:
    wide = Limits(max_in_items=20_000, max_length=200_000)
    text = "a IN (" + ", ".join(["'x'"] * 15_000) + ")"
    selector = parse(text, limits=wide)
    assert pickle.loads(pickle.dumps(selector)) == selector


def test_parse_is_cached_by_text_and_limits() -> None:
    clear_cache()
    first = parse("a = 1 AND b = 2")
    assert parse("a = 1 AND b = 2") is first
    assert cache_info()["hits"] == 1
    other = parse("a = 1 AND b = 2", limits=Limits(max_depth=50))
    assert other is not first and other == first
    clear_cache()
    assert parse("a = 1 AND b = 2") is not first


def test_cache_is_bounded_in_entries_and_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    small = parser_module._ParseCache(entries=10, characters=1_000)
    monkeypatch.setattr(parser_module, "_cache", small)
    for index in range(50):
        parse(f"a = {index}")
    assert cache_info()["entries"] == 10
    parse("a = '" + "x" * 70 + "'")  # more than a sixteenth of the budget: not cached
    assert cache_info()["entries"] == 10
    for index in range(20):
        parse(f"b = '{'x' * 50}{index}'")
    info = cache_info()
    assert info["characters"] <= 1_000 and info["entries"] < 20
    assert CACHE_CHARACTERS >= 1_000


def test_not_binds_looser_than_comparison() -> None:
    node = parse("NOT a = 1").ast
    assert isinstance(node, Not) and str(node.operand) == "a = 1"
