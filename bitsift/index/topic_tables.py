"""Per-position bitmap tables: the seeds' inverted-bitmap topic matcher (OpenAMQ, WSO2).

Every pattern here is a run of fixed tokens (literal words and single-word wildcards) optionally
followed by one trailing ``#``. That is every MQTT filter, and every AMQP pattern whose ``#``s
(after :func:`positional_form`) all sit at the end. For those, "does the topic match?" splits into
one independent question per position, which is what lets bitmaps answer it for all patterns at
once.

Position ``i`` has a table with one row per word some pattern uses there, plus ``other`` (a word no
pattern uses there) and ``null`` (the topic has no word there). A column's bit is set in:

* the row of its literal word at ``i``;
* every row but ``null`` if it has a single-word wildcard at ``i``;
* every row *including* ``null`` from the position of its trailing ``#`` on;
* ``null`` from its last position on, if it has no ``#`` (it wants no more words).

Matching ANDs one row per position of the topic, stopping at an empty result. ``null`` rows only
grow from one position to the next, so of the trailing null positions only the first is ANDed
(the seed's "skip the second and later nulls"). Positions past the last table need no row: only a
pattern with a trailing ``#`` can match a topic longer than every pattern without one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pyroaring import BitMap

from bitsift.selectors.topics import Token, Wildcard

__all__ = ["PositionTables", "normal_form", "positional_form"]


def normal_form(tokens: Sequence[Token]) -> tuple[Token, ...]:
    """The same pattern with each run of wildcards written as its ``*``s, then at most one ``#``.

    Inside a run of wildcards only the number of ``*`` and whether there is a ``#`` matter:
    ``#.*.#`` means "one word or more", exactly as ``*.#`` does.

    >>> normal_form(["a", Wildcard.MANY, Wildcard.ONE, Wildcard.MANY, "b"])
    ('a', Wildcard.ONE, Wildcard.MANY, 'b')
    """
    normal: list[Token] = []
    run_has_many = False
    for token in tokens:
        if token is Wildcard.MANY:
            run_has_many = True
            continue
        if run_has_many and token is not Wildcard.ONE:
            normal.append(Wildcard.MANY)
            run_has_many = False
        normal.append(token)
    if run_has_many:
        normal.append(Wildcard.MANY)
    return tuple(normal)


def positional_form(tokens: Sequence[Token]) -> tuple[tuple[Token, ...], bool] | None:
    """``(fixed tokens, ends in '#')`` when the tables can hold the pattern, else ``None``.

    >>> positional_form(["a", Wildcard.MANY, Wildcard.ONE, Wildcard.MANY])
    (('a', Wildcard.ONE), True)
    >>> positional_form([Wildcard.MANY, "b"]) is None
    True
    """
    normal = normal_form(tokens)
    ends_in_many = bool(normal) and normal[-1] is Wildcard.MANY
    fixed = normal[:-1] if ends_in_many else normal
    if Wildcard.MANY in fixed:
        return None
    return fixed, ends_in_many


class _Position:
    """The table for one constituent position; see the module docstring for what each row holds."""

    __slots__ = ("rows", "other", "null", "one", "cover", "literal_users")

    def __init__(self, null: BitMap, cover: BitMap) -> None:
        self.rows: dict[str, BitMap] = {}
        self.literal_users: Counter[str] = Counter()
        self.one = BitMap()
        """Columns with a single-word wildcard here."""
        self.cover = cover
        """Columns whose trailing '#' starts here or earlier."""
        self.other = BitMap(cover)
        self.null = null

    def set_everywhere(self, column: int, *, null: bool) -> None:
        self.other.add(column)
        for row in self.rows.values():
            row.add(column)
        if null:
            self.null.add(column)

    def clear_everywhere(self, column: int, *, null: bool) -> None:
        self.other.discard(column)
        for row in self.rows.values():
            row.discard(column)
        if null:
            self.null.discard(column)


class PositionTables:
    """The tables for one syntax. Columns are added and removed one at a time; nothing rebuilds."""

    __slots__ = (
        "_positions",
        "_lookups",
        "_with_hash",
        "_without_hash",
        "_leading_wildcard",
        "_lengths",
        "_exact_lengths",
        "_longest_exact",
    )

    def __init__(self) -> None:
        self._positions: list[_Position] = []
        self._lookups: list[tuple[dict[str, BitMap], BitMap]] = []
        """``(rows, other)`` per position: what ``match`` reads, without attribute lookups."""
        self._with_hash = BitMap()
        """Columns whose pattern ends in '#'."""
        self._without_hash = BitMap()
        self._leading_wildcard = BitMap()
        """Columns whose first token is a wildcard (MQTT's rule for ``$`` topics needs them)."""
        self._lengths: Counter[int] = Counter()
        """How many patterns have each number of fixed tokens; the largest is the table count."""
        self._exact_lengths: Counter[int] = Counter()
        """The same, for patterns without a trailing '#' only."""
        self._longest_exact = -1

    def __len__(self) -> int:
        return len(self._with_hash) + len(self._without_hash)

    @property
    def leading_wildcard(self) -> BitMap:
        """Columns whose pattern starts with a wildcard. Read only."""
        return self._leading_wildcard

    def add(self, column: int, fixed: Sequence[Token], ends_in_many: bool) -> None:
        """Set ``column``'s bits for the pattern ``fixed`` (+ ``#`` if ``ends_in_many``)."""
        length = len(fixed)
        while len(self._positions) < length:
            self._grow()
        for position, token in zip(self._positions, fixed, strict=False):
            if token is Wildcard.ONE:
                position.one.add(column)
                position.set_everywhere(column, null=False)
            else:
                assert isinstance(token, str)
                row = position.rows.get(token)
                if row is None:
                    # A new word: it is a word every wildcard here accepts, like ``other``.
                    row = position.rows[token] = BitMap(position.other)
                row.add(column)
                position.literal_users[token] += 1
        for position in self._positions[length:]:
            if ends_in_many:
                position.cover.add(column)
                position.set_everywhere(column, null=True)
            else:
                position.null.add(column)
        if ends_in_many:
            self._with_hash.add(column)
        else:
            self._without_hash.add(column)
            self._exact_lengths[length] += 1
            self._longest_exact = max(self._longest_exact, length)
        first = fixed[0] if fixed else (Wildcard.MANY if ends_in_many else "")
        if isinstance(first, Wildcard):
            self._leading_wildcard.add(column)
        self._lengths[length] += 1

    def remove(self, column: int, fixed: Sequence[Token], ends_in_many: bool) -> None:
        """Clear every bit :meth:`add` set for ``column`` with the same arguments."""
        length = len(fixed)
        for position, token in zip(self._positions, fixed, strict=False):
            if token is Wildcard.ONE:
                position.one.discard(column)
                position.clear_everywhere(column, null=False)
            else:
                assert isinstance(token, str)
                position.rows[token].discard(column)
                position.literal_users[token] -= 1
                if not position.literal_users[token]:
                    del position.literal_users[token], position.rows[token]
        for position in self._positions[length:]:
            if ends_in_many:
                position.cover.discard(column)
                position.clear_everywhere(column, null=True)
            else:
                position.null.discard(column)
        if ends_in_many:
            self._with_hash.discard(column)
        else:
            self._without_hash.discard(column)
            self._exact_lengths[length] -= 1
            if not self._exact_lengths[length]:
                del self._exact_lengths[length]
                self._longest_exact = max(self._exact_lengths, default=-1)
        self._leading_wildcard.discard(column)
        self._lengths[length] -= 1
        if not self._lengths[length]:
            del self._lengths[length]
            # Tables past the longest remaining pattern would only cost ANDs: drop them.
            longest = max(self._lengths, default=0)
            del self._positions[longest:], self._lookups[longest:]

    def _grow(self) -> None:
        """Add the table for the next position, holding the columns already present.

        Every present pattern ends at or before the new position, so each '#' column covers it
        (every row, ``null`` included) and each other column wants no word there (``null``).
        """
        position = _Position(
            null=self._without_hash | self._with_hash, cover=BitMap(self._with_hash)
        )
        self._positions.append(position)
        self._lookups.append((position.rows, position.other))

    def match(self, words: Sequence[str]) -> BitMap | None:
        """The columns whose patterns match a topic of these words: a new bitmap, or ``None``."""
        count = len(words)
        result: BitMap | None = None
        if count > self._longest_exact:
            # Longer than every pattern without a trailing '#': only those with one can match.
            if not self._with_hash:
                return None
            result = BitMap(self._with_hash, optimize=False)
        for word, (rows, other) in zip(words, self._lookups, strict=False):
            row = rows.get(word, other)
            if result is None:
                result = BitMap(row, optimize=False)
            else:
                result &= row
                if not result:
                    return None
        if count < len(self._positions):
            null = self._positions[count].null  # later null rows are supersets: skip them
            if result is None:
                result = BitMap(null, optimize=False)
            else:
                result &= null
        elif result is None:
            # No table was consulted: there are none, so every pattern is empty or "#" alone,
            # and the topic has no words.
            result = self._without_hash | self._with_hash
        return result if result else None
