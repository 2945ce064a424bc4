"""Every error bitsift raises, under one root.

Callers catch :class:`BitsiftError` to handle anything bitsift reports. Each specific error also
inherits the builtin that fits (``ValueError`` for bad text, ``KeyError`` for an unknown id), so
that code written for the builtins, and pydantic validators, treat it naturally.

Errors about a position in some text carry ``line`` and ``column`` (both 1-based) as attributes,
and their message shows the offending line with a caret under the spot, because the person reading
it at 3 a.m. should not have to count characters.
"""

from __future__ import annotations

__all__ = [
    "BitsiftError",
    "PositionedError",
    "SelectorSyntaxError",
    "TopicPatternError",
    "TopicNameError",
    "UnknownSubscriptionError",
    "IndexFileError",
    "MessageError",
    "SubscriptionFileError",
    "caret_excerpt",
]


class BitsiftError(Exception):
    """The root of every error bitsift raises."""


def caret_excerpt(text: str, line: int, column: int, width: int = 100) -> str:
    """Return the given line of ``text`` with a caret under ``column`` (both 1-based).

    Long lines are cut to a window of about ``width`` characters around the spot, so that a
    64 KiB selector on one line still gives a readable message.

    >>> print(caret_excerpt("price > 'a'", 1, 9))
        price > 'a'
                ^
    """
    lines = text.splitlines() or [""]
    line = min(max(line, 1), len(lines))
    source = lines[line - 1].replace("\t", " ")
    column = min(max(column, 1), len(source) + 1)
    start = 0
    if len(source) > width:
        start = max(0, column - 1 - width // 2)
        source = source[start : start + width]
        prefix = "..." if start else ""
        suffix = "..." if start + width < len(lines[line - 1]) else ""
        source = prefix + source + suffix
        start -= len(prefix)
    return f"    {source}\n    {' ' * (column - 1 - start)}^"


class PositionedError(BitsiftError, ValueError):
    """An error at a known place in some text: carries ``text``, ``line`` and ``column``.

    The message is ``reason`` followed by where it happened and the line with a caret.
    """

    what = "text"

    def __init__(self, reason: str, text: str, line: int, column: int) -> None:
        self.reason = reason
        self.text = text
        self.line = line
        self.column = column
        super().__init__(
            f"{reason} (line {line}, column {column} of the {self.what})\n"
            f"{caret_excerpt(text, line, column)}"
        )

    def __reduce__(self) -> tuple[object, ...]:
        # Exceptions pickle by their args; ours are built from four fields instead.
        return (type(self), (self.reason, self.text, self.line, self.column))


class SelectorSyntaxError(PositionedError):
    """A selector that is not valid text of the selector language.

    >>> import bitsift
    >>> try:
    ...     bitsift.parse("price > 'cheap'")
    ... except bitsift.SelectorSyntaxError as error:
    ...     print(error.line, error.column)
    1 9
    """

    what = "selector"


class TopicPatternError(PositionedError):
    """An AMQP binding pattern or MQTT topic filter that the protocol does not allow."""

    what = "topic pattern"


class TopicNameError(PositionedError):
    """A message topic (AMQP routing key or MQTT topic name) that the protocol does not allow."""

    what = "topic name"


class UnknownSubscriptionError(BitsiftError, KeyError):
    """A subscription id that the index does not hold."""

    def __str__(self) -> str:
        # KeyError quotes its argument; we want a sentence.
        return str(self.args[0]) if self.args else "unknown subscription"


class MessageError(BitsiftError, TypeError):
    """A message that is not a mapping of property names to values."""


class IndexFileError(BitsiftError, ValueError):
    """A saved index file that cannot be loaded: truncated, corrupted or of another version."""


class SubscriptionFileError(BitsiftError, ValueError):
    """A subscription file with one or more bad entries; ``problems`` lists every one of them."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        listing = "\n".join(f"  - {problem}".replace("\n", "\n    ") for problem in problems)
        count = len(problems)
        super().__init__(f"{path}: {count} bad subscription{'s' if count != 1 else ''}\n{listing}")
