"""Limits on selector text, because selectors come from subscribers we may not trust.

A broker that accepts selectors from clients must bound the work one selector can cause: its
length, how deeply it nests, and how long its lists are. The defaults are generous for people and
tight for attackers; change them with :func:`set_limits` (process-wide) or by passing ``limits=`` to
:func:`bitsift.parse`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["Limits", "DEFAULT_LIMITS", "MAX_DEPTH_CEILING", "get_limits", "set_limits"]


MAX_DEPTH_CEILING = 200
"""The highest ``max_depth`` allowed. Printing, comparing, hashing and pickling a tree recurse once
or twice per level in Python, and the caller (a test runner, a Spark worker) has used part of
Python's default 1,000-frame stack already; 200 levels leave room for both."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds applied when parsing a selector; each is a positive integer.

    ``max_length`` (65,536): characters of selector text.
    ``max_depth`` (100, at most :data:`MAX_DEPTH_CEILING`): nesting of the syntax tree.
    Parentheses alone do not count, a chain of ``AND``/``OR`` terms counts once however long,
    and each NOT, comparison, arithmetic operator or unary minus adds a level.
    ``max_in_items`` (10,000): items in one ``IN (...)`` list.
    ``max_terms`` (10,000): ``AND``/``OR`` operands in one chain.

    >>> Limits(max_depth=500)
    Traceback (most recent call last):
      ...
    ValueError: Limits.max_depth must be at most 200, not 500
    """

    max_length: int = 65_536
    max_depth: int = 100
    max_in_items: int = 10_000
    max_terms: int = 10_000

    def __post_init__(self) -> None:
        for name in ("max_length", "max_depth", "max_in_items", "max_terms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive integer, not {value!r}")
        if self.max_depth > MAX_DEPTH_CEILING:
            raise ValueError(
                f"Limits.max_depth must be at most {MAX_DEPTH_CEILING}, not {self.max_depth}"
            )


DEFAULT_LIMITS = Limits()
_current = DEFAULT_LIMITS


def get_limits() -> Limits:
    """The limits :func:`bitsift.parse` applies when none are passed."""
    return _current


def set_limits(limits: Limits | None = None, **changes: int) -> Limits:
    """Replace the process-wide limits (or change some fields); returns the previous limits.

    >>> previous = set_limits(max_in_items=50)
    >>> get_limits().max_in_items
    50
    >>> _ = set_limits(previous)
    """
    global _current
    previous = _current
    _current = replace(limits or _current, **changes)
    # Cached selectors are keyed by their limits; those under the old limits are dead weight now.
    from bitsift.selectors.parser import clear_cache

    clear_cache()
    return previous
