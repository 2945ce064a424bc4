"""Selector text to :class:`~bitsift.Selector`: the entry point, the Lark LALR parser over
``selector.lark``, and a bounded cache of results.

The work is split three ways. The grammar file is the reference for the syntax;
:mod:`~bitsift.selectors.builder` holds the callbacks that build the tree during parsing and check
what a grammar cannot (static types, literal ranges, limits); :mod:`~bitsift.selectors.diagnostics`
words the errors. This module ties them together, so that every Lark exception is turned into
:class:`~bitsift.SelectorSyntaxError` here and none escapes.

Why a cache, and why bounded by characters as well as entries: a broker sees the same few
selector texts again and again (many subscriptions share one), so a repeated parse should be a
dictionary lookup; but selectors may come from untrusted clients, and 4,096 cached selectors of
64 KiB each would hold a quarter of a gibibyte. So the cache keeps at most :data:`CACHE_SIZE`
selectors and at most :data:`CACHE_CHARACTERS` characters of selector text, dropping the least
recently used first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from lark import Lark, Token
from lark.exceptions import LarkError, UnexpectedInput
from lark.lark import PostLex

from bitsift.errors import SelectorSyntaxError
from bitsift.selectors.ast import Node
from bitsift.selectors.builder import Builder, Part, Problem
from bitsift.selectors.diagnostics import end_offset, error_at, syntax_error
from bitsift.selectors.limits import DEFAULT_LIMITS, Limits, get_limits
from bitsift.selectors.selector import Selector

__all__ = ["parse", "clear_cache", "cache_info", "CACHE_SIZE", "CACHE_CHARACTERS"]

CACHE_SIZE = 4096
"""Distinct selectors :func:`parse` remembers at most."""
CACHE_CHARACTERS = 1 << 20
"""Characters of selector text the cache holds at most (about 1 MiB of text, and the trees)."""


class _ParseCache:
    """A least-recently-used map from ``(text, limits)`` to Selector, bounded in entries and in
    characters, safe to share between threads (a parse runs outside the lock)."""

    def __init__(self, entries: int, characters: int) -> None:
        self.entries, self.characters = entries, characters
        self._selectors: OrderedDict[tuple[str, Limits], Selector] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple[str, Limits]) -> Selector | None:
        with self._lock:
            selector = self._selectors.get(key)
            if selector is None:
                self.misses += 1
                return None
            self._selectors.move_to_end(key)
            self.hits += 1
            return selector

    def put(self, key: tuple[str, Limits], selector: Selector) -> None:
        size = len(key[0])
        if size > self.characters // 16:
            return  # one huge selector must not evict everything else
        with self._lock:
            if key in self._selectors:
                return
            self._selectors[key] = selector
            self._held += size
            while len(self._selectors) > self.entries or self._held > self.characters:
                (text, _), _ = self._selectors.popitem(last=False)
                self._held -= len(text)

    def clear(self) -> None:
        with self._lock:
            self._selectors.clear()
            self._held = 0
            self.hits = self.misses = 0

    def info(self) -> dict[str, int]:
        with self._lock:
            return {
                "hits": self.hits,
                "misses": self.misses,
                "entries": len(self._selectors),
                "characters": self._held,
            }


_cache = _ParseCache(CACHE_SIZE, CACHE_CHARACTERS)


@lru_cache(maxsize=1)
def _grammar() -> str:
    from importlib.resources import files

    return files("bitsift.selectors").joinpath("selector.lark").read_text(encoding="utf-8")


class _KeepForbidden(PostLex):
    """Keeps FORBIDDEN (``!=``, ``--``, ...) in the lexer although no rule uses it, so that the
    parser meets it as a token and the error can say what to write instead."""

    always_accept = ("FORBIDDEN",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return stream


@lru_cache(maxsize=8)
def _lalr(limits: Limits) -> Lark:
    """One parser per limits value: the callbacks know the limits, and building a Lark parser
    takes milliseconds, so it is done once and shared by every call and thread."""
    return Lark(
        _grammar(),
        parser="lalr",
        lexer="basic",
        postlex=_KeepForbidden(),
        maybe_placeholders=False,
        transformer=Builder(limits),
    )


def _build(text: str, limits: Limits) -> Node:
    try:
        part: Any = _lalr(limits).parse(text)
        assert isinstance(part, Part)
        Builder(limits).condition(part, "the whole selector")
        return part.node
    except Problem as problem:
        raise error_at(problem.reason, text, problem.offset) from None
    except UnexpectedInput as error:
        raise syntax_error(text, error) from None
    except LarkError as error:  # pragma: no cover - defensive: no other Lark error is expected
        raise error_at(f"not a selector: {error}", text, end_offset(text)) from None


def parse(text: str, *, limits: Limits | None = None) -> Selector:
    """Parse selector text; raises :class:`~bitsift.SelectorSyntaxError` for anything invalid.

    An empty or blank selector means "no selector" and matches every message. ``limits`` bounds
    the work one selector may cause (default: :func:`~bitsift.selectors.limits.get_limits`).
    Results are cached by text and limits, so parsing the same selector again is a lookup.

    >>> import bitsift
    >>> print(bitsift.parse("NOT region = 'eu' AND price BETWEEN 1 AND 5").ast)
    NOT region = 'eu' AND price BETWEEN 1 AND 5
    >>> bitsift.parse("a != 1")
    Traceback (most recent call last):
      ...
    bitsift.errors.SelectorSyntaxError: '!=' is not a selector operator: write '<>' for 'not equal' (line 1, column 3 of the selector)
        a != 1
          ^
    """  # noqa: E501
    if not isinstance(text, str):
        raise SelectorSyntaxError(
            f"a selector must be text (str), not {type(text).__name__}", "", 1, 1
        )
    if type(text) is not str:
        text = str.__str__(text)  # a str subclass could override hashing or equality
    if limits is None:
        limits = get_limits()
    elif not isinstance(limits, Limits):
        raise TypeError(f"limits must be a bitsift.Limits, not {type(limits).__name__}")
    key = (text, limits)
    selector = _cache.get(key)
    if selector is None:
        selector = _parse_uncached(text, limits)
        _cache.put(key, selector)
    return selector


def _parse_uncached(text: str, limits: Limits) -> Selector:
    if len(text) > limits.max_length:
        raise error_at(
            f"the selector is {len(text)} characters long; the limit is {limits.max_length} "
            "(Limits.max_length); the caret marks the first character past it",
            text,
            limits.max_length,
        )
    if not text.strip():
        return Selector(text, None, limits)
    return Selector(text, _build(text, limits), limits)


def reparse(text: str, limits: Limits = DEFAULT_LIMITS) -> Selector:
    """Parse ``text`` under ``limits``: how a pickled :class:`~bitsift.Selector` comes back."""
    return parse(text, limits=limits)


def clear_cache() -> None:
    """Forget every cached parse (used when the process-wide limits change)."""
    _cache.clear()


def cache_info() -> dict[str, int]:
    """Hits, misses, entries and characters held by the parse cache.

    >>> clear_cache(); _ = parse("a = 1"); _ = parse("a = 1"); cache_info()["hits"]
    1
    """
    return _cache.info()
