"""LIKE pattern matching in time linear in the text, whatever the pattern.

Java brokers translate a LIKE pattern into a backtracking regular expression, so ``'%a%a%a…%b'``
against a long run of ``a`` takes ActiveMQ, Artemis and Qpid Broker-J seconds to minutes. A LIKE
pattern needs no backtracking: split it on ``%`` into segments, each a fixed-length run of literal
characters and ``_``. The first segment must match at the start of the text and the last at the
end; each segment in between is then found greedily at its leftmost place after the previous one.
Taking the leftmost place is always safe, because it leaves the most text for the segments after
it. Each segment is found with ``str.find`` (literal) or a regular expression of fixed length
(with ``_``), so the whole match costs at most ``len(text)`` times the pattern length.

The meaning, as the reference evaluator defines it:

* The match is over the whole text (anchored at both ends); newlines are ordinary characters.
* ``_`` matches exactly one character (one code point; Java counts UTF-16 code units, so a
  character outside the Basic Multilingual Plane is two ``_`` there and one here).
* ``%`` matches any run of characters, including none. Consecutive ``%`` mean the same as one.
* The escape character makes the character after it literal, whatever that is: ``%``, ``_``, the
  escape character itself, or an ordinary character (as Artemis and Qpid do; SQL would call the
  last an error). An escape character at the very end of the pattern escapes nothing and stands
  for itself (Artemis and Qpid drop it; recent ActiveMQ keeps it as we do).

:func:`compile_like` also tells the index what kind of pattern it has (:attr:`LikeMatcher.prefix`,
:attr:`~LikeMatcher.is_prefix_only`, :attr:`~LikeMatcher.is_exact`), so that ``'eu-%'`` can be
answered from a sorted key range instead of by matching every value.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["LikeMatcher", "compile_like"]


class _AnyOne:
    """The ``_`` wildcard inside a parsed segment."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "_"


_ANY_ONE = _AnyOne()
_Token = str | _AnyOne


class _Segment:
    """A fixed-length piece of the pattern between two ``%``."""

    __slots__ = ("length", "literal", "regex")

    def __init__(self, tokens: list[_Token]) -> None:
        self.length = len(tokens)
        characters = [token for token in tokens if isinstance(token, str)]
        if len(characters) == len(tokens):
            self.literal: str | None = "".join(characters)
            self.regex: re.Pattern[str] | None = None
        else:
            # A fixed-length expression: no quantifier, so no backtracking beyond its length.
            source = "".join(
                re.escape(token) if isinstance(token, str) else "." for token in tokens
            )
            self.literal = None
            self.regex = re.compile(source, re.DOTALL)

    def matches_at(self, text: str, position: int) -> bool:
        if self.literal is not None:
            return text.startswith(self.literal, position)
        assert self.regex is not None
        return self.regex.match(text, position) is not None

    def find(self, text: str, start: int, end: int) -> int:
        """Leftmost position ``>= start`` where the segment fits before ``end``, or -1."""
        if self.literal is not None:
            return text.find(self.literal, start, end)
        assert self.regex is not None
        found = self.regex.search(text, start, end)
        return -1 if found is None else found.start()


def _parse(pattern: str, escape: str | None) -> list[list[_Token]]:
    """Split a pattern on unescaped ``%`` into segments of literal characters and ``_``."""
    segments: list[list[_Token]] = [[]]
    after_percent = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        index += 1
        if char == escape:
            if index < len(pattern):
                char = pattern[index]
                index += 1
            segments[-1].append(char)
            after_percent = False
        elif char == "%":
            if not after_percent:
                segments.append([])
            after_percent = True
        else:
            segments[-1].append(_ANY_ONE if char == "_" else char)
            after_percent = False
    return segments


class LikeMatcher:
    """A compiled LIKE pattern. Make one with :func:`compile_like`.

    Besides :meth:`matches`, it tells the index what kind of pattern it is:

    ``prefix``
        The literal text every match starts with: everything before the first wildcard.
    ``is_exact``
        The pattern has no wildcard, so it matches ``prefix`` and nothing else.
    ``is_prefix_only``
        The pattern is ``literal%`` (``%%`` counts as one ``%``), so it matches exactly the
        texts that start with ``prefix``.
    """

    __slots__ = (
        "pattern",
        "escape",
        "prefix",
        "is_prefix_only",
        "is_exact",
        "_first",
        "_middle",
        "_last",
        "_minimum_length",
    )

    def __init__(self, pattern: str, escape: str | None) -> None:
        if escape is not None and len(escape) != 1:
            raise ValueError(f"a LIKE escape must be exactly one character, not {escape!r}")
        self.pattern = pattern
        self.escape = escape
        parsed = _parse(pattern, escape)
        first = parsed[0]
        first_is_literal = _ANY_ONE not in first
        literal_length = len(first) if first_is_literal else first.index(_ANY_ONE)
        self.prefix = "".join(t for t in first[:literal_length] if isinstance(t, str))
        self.is_exact = len(parsed) == 1 and first_is_literal
        self.is_prefix_only = len(parsed) == 2 and first_is_literal and not parsed[1]
        segments = [_Segment(tokens) for tokens in parsed]
        self._first = segments[0]
        self._middle = tuple(segments[1:-1])
        self._last: _Segment | None = segments[-1] if len(segments) > 1 else None
        self._minimum_length = sum(segment.length for segment in segments)

    def matches(self, text: str) -> bool:
        """True when the whole of ``text`` matches the pattern.

        >>> matcher = compile_like("%a%b", None)
        >>> matcher.matches("xaxb"), matcher.matches("ab\\n"), matcher.matches("a" * 100_000)
        (True, False, False)
        """
        if self._last is None:
            return len(text) == self._minimum_length and self._first.matches_at(text, 0)
        if len(text) < self._minimum_length or not self._first.matches_at(text, 0):
            return False
        end = len(text) - self._last.length
        if not self._last.matches_at(text, end):
            return False
        position = self._first.length
        for segment in self._middle:
            found = segment.find(text, position, end)
            if found < 0:
                return False
            position = found + segment.length
        return True

    def __repr__(self) -> str:
        return f"compile_like({self.pattern!r}, {self.escape!r})"


@lru_cache(maxsize=4096)
def compile_like(pattern: str, escape: str | None = None) -> LikeMatcher:
    """Compile a LIKE pattern (cached: many selectors share a few patterns).

    >>> compile_like("eu-%", None).is_prefix_only, compile_like("eu-%", None).prefix
    (True, 'eu-')
    >>> compile_like("100!%", "!").matches("100%"), compile_like("100!%", "!").is_exact
    (True, True)
    """
    return LikeMatcher(pattern, escape)
