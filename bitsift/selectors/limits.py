"""Limits on selector text, because selectors come from subscribers we may not trust.

A broker that accepts selectors from clients must bound the work one selector can cause: its
length, how deeply it nests, and how long its lists are. The defaults are generous for people and
tight for attackers; change them with :func:`set_limits` (process-wide) or by passing ``limits=`` to
:func:`bitsift.parse`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["Limits", "DEFAULT_LIMITS", "get_limits", "set_limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds applied when parsing a selector.

    ``max_length``: characters of selector text.
    ``max_depth``: nesting of the syntax tree (parentheses alone do not count; a chain of
    ``AND``/``OR`` terms counts once, however long).
    ``max_in_items``: items in one ``IN (...)`` list.
    ``max_terms``: ``AND``/``OR`` operands in one chain.
    """

    max_length: int = 65_536
    max_depth: int = 200
    max_in_items: int = 10_000
    max_terms: int = 10_000

    def __post_init__(self) -> None:
        for name in ("max_length", "max_depth", "max_in_items", "max_terms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive integer, not {value!r}")
        if self.max_depth > 900:
            # The evaluator and printer recurse once per level; stay well inside Python's stack.
            raise ValueError("Limits.max_depth must be at most 900")


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
    from bitsift.selectors.parser import clear_cache  # the cache holds results under old limits

    clear_cache()
    return previous
