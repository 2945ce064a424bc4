"""The LIKE matcher against a plainly exponential reference, plus the cases the reference cannot
reach: pathological patterns on long texts, and what the index reads (prefix, prefix-only, exact).
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import like_patterns

from bitsift.selectors.like import compile_like


def reference_tokens(pattern: str, escape: str | None) -> list[tuple[str, str]]:
    """``("literal", c)``, ``("one", "")`` or ``("any", "")`` for each pattern position."""
    tokens: list[tuple[str, str]] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == escape:
            # The next character is literal; a trailing escape stands for itself.
            tokens.append(("literal", pattern[index + 1] if index + 1 < len(pattern) else char))
            index += 2
            continue
        if char == "%":
            tokens.append(("any", ""))
        elif char == "_":
            tokens.append(("one", ""))
        else:
            tokens.append(("literal", char))
        index += 1
    return tokens


def reference_matches(tokens: list[tuple[str, str]], text: str) -> bool:
    """Textbook recursive matching, exponential in the worst case: fine for tiny inputs."""
    if not tokens:
        return not text
    (kind, char), rest = tokens[0], tokens[1:]
    if kind == "any":
        return any(reference_matches(rest, text[start:]) for start in range(len(text) + 1))
    if not text:
        return False
    if kind == "one" or char == text[0]:
        return reference_matches(rest, text[1:])
    return False


@given(like_patterns(), st.text("ab%_\\!\n", max_size=8))
@example(("a\\", "\\"), "a\\")
@example(("%%", "%"), "%")
@example(("__", "_"), "_")
@example(("%a%", None), "a")
@example(("a%a", None), "a")
def test_matches_like_the_reference(pattern_and_escape: tuple[str, str | None], text: str) -> None:
    pattern, escape = pattern_and_escape
    expected = reference_matches(reference_tokens(pattern, escape), text)
    assert compile_like(pattern, escape).matches(text) is expected


@given(like_patterns())
def test_pattern_matches_its_own_literal_reading(
    pattern_and_escape: tuple[str, str | None],
) -> None:
    # Reading every wildcard as the character it stands in for gives a text the pattern matches.
    pattern, escape = pattern_and_escape
    tokens = reference_tokens(pattern, escape)
    text = "".join(char if kind == "literal" else "x" for kind, char in tokens)
    assert compile_like(pattern, escape).matches(text)


@pytest.mark.parametrize(
    ("pattern", "escape", "text", "expected"),
    [
        ("abc", None, "abc", True),
        ("abc", None, "abcd", False),
        ("a_c", None, "a\nc", True),  # newline is an ordinary character
        ("%", None, "", True),
        ("_", None, "", False),
        ("_", None, "😀", True),  # one code point, not one UTF-16 unit
        ("a%", None, "a\nb", True),
        ("%b", None, "ab\n", False),  # anchored at the end: no '$'-before-newline leniency
        ("100!%", "!", "100%", True),
        ("100!%", "!", "1000", False),
        ("a!b", "!", "ab", True),  # escape before an ordinary character: that character
        ("a!", "!", "a!", True),  # trailing escape stands for itself
        ("a!", "!", "a", False),
        ("!!", "!", "!", True),
        ("%%", "%", "%", True),  # the escape may be a wildcard character itself
        ("%%", "%", "x", False),
        ("a__", "_", "a_", True),
        ("[a-z].*", None, "[a-z].*", True),  # regular-expression characters are literal
        ("[a-z].*", None, "b.x", False),
        ("%a_a%", None, "xxaxayy", True),
        ("%a_a%", None, "xxaxy", False),
    ],
)
def test_examples(pattern: str, escape: str | None, text: str, expected: bool) -> None:
    assert compile_like(pattern, escape).matches(text) is expected


def test_pathological_patterns_run_in_linear_time() -> None:
    # Backtracking regexes take seconds to minutes here; this must be instant. No timing is
    # asserted: an exponential implementation would hang the suite instead.
    text = "a" * 100_000
    assert not compile_like("%a" * 50 + "%b", None).matches(text)
    assert not compile_like("%a_" * 50 + "%b", None).matches(text)
    assert compile_like("%a" * 50 + "%", None).matches(text)
    assert not compile_like("%" + "a" * 1000 + "b%", None).matches(text)
    assert not compile_like("%" + "a_" * 500 + "b%", None).matches(text)


@pytest.mark.parametrize(
    ("pattern", "escape", "prefix", "prefix_only", "exact"),
    [
        ("eu-%", None, "eu-", True, False),
        ("eu-%%", None, "eu-", True, False),
        ("%", None, "", True, False),
        ("eu", None, "eu", False, True),
        ("", None, "", False, True),
        ("eu-_", None, "eu-", False, False),
        ("eu-%x", None, "eu-", False, False),
        ("eu-%_", None, "eu-", False, False),
        ("e!%u%", "!", "e%u", True, False),
        ("e!_u", "!", "e_u", False, True),
        ("_%", None, "", False, False),
    ],
)
def test_what_the_index_reads(
    pattern: str, escape: str | None, prefix: str, prefix_only: bool, exact: bool
) -> None:
    matcher = compile_like(pattern, escape)
    assert (matcher.prefix, matcher.is_prefix_only, matcher.is_exact) == (
        prefix,
        prefix_only,
        exact,
    )


@given(like_patterns(), st.text("ab%_\\!", max_size=8))
def test_properties_agree_with_matching(
    pattern_and_escape: tuple[str, str | None], text: str
) -> None:
    matcher = compile_like(*pattern_and_escape)
    if matcher.matches(text):
        assert text.startswith(matcher.prefix)
    if matcher.is_prefix_only:
        assert matcher.matches(text) is text.startswith(matcher.prefix)
    if matcher.is_exact:
        assert matcher.matches(text) is (text == matcher.prefix)


def test_escape_must_be_one_character() -> None:
    with pytest.raises(ValueError, match="exactly one character"):
        compile_like("a", "!!")


def test_compiled_patterns_are_cached() -> None:
    assert compile_like("a%b", "!") is compile_like("a%b", "!")
