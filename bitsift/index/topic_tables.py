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

Each row is kept twice. The :class:`pyroaring.BitMap` rows are the truth and scale to any number
of patterns. While the rows fit in ``bitset_budget`` bytes as uncompressed bitsets (a Python int
per row, one bit per pattern, as OpenAMQ kept its bitmaps), the tables keep those too: ANDing two
ints of 10,000 bits is one branch-free C loop over 1.3 KB, many times cheaper than a roaring AND
of two arrays of random columns, whose merge mispredicts a branch on every other element. Bits
are numbered by *slot*, densely, so the ints are as narrow as the number of patterns here (the
caller's columns may be spread over both syntaxes and over subscriptions without a topic); a
column takes the slot of its own number when that is free, or past the end while the ints stay
at most twice as wide as the patterns here, so that columns added in order get ``slot == column``
even when literal patterns take some of the numbers.

The int rows answer. A result of a few columns is read bit by bit. A larger one, when every slot
is its column's number, becomes a bitmap in one step by handing the int's bytes to roaring's
portable serialization format (see :func:`_bitmap_from_bits`); otherwise the roaring rows
compute it, because reading many bits one at a time in Python costs more.

The budget bounds memory whatever the patterns: bitsets cost (rows x slots / 8) bytes, and a
stream of patterns with distinct words makes the rows grow with the patterns. Before an add that
could pass the budget the tables drop their bitsets and carry on with the roaring rows alone,
whose size is proportional to the patterns; the bitsets come back once the tables are empty.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Sequence

from pyroaring import BitMap, FrozenBitMap

from bitsift.selectors.topics import Token, Wildcard

__all__ = ["BITSET_BUDGET", "PositionTables", "normal_form", "positional_form"]

BITSET_BUDGET = 16 * 2**20
"""Default bytes the uncompressed bitsets of one syntax's tables may take (16 MiB)."""
_INT_OVERHEAD = 32
"""Bytes a Python int costs beyond its digits, roughly: the budget's per-row charge."""
SPARSE_RESULT = 40
"""Up to this many matches, the result is read bit by bit; past it, in one step."""
LOOP_RESULT = 128
"""When slots are not column numbers, up to this many matches are still read bit by bit."""
BITSET_COLUMNS = 61_440
"""Results are deserialized only below this column: the rest of roaring's first container pads."""
_PAD = b"\xff" * ((65_536 - BITSET_COLUMNS) // 8)
_HEADER = struct.Struct("<IIHHI")
"""Roaring's portable format without run containers: cookie 12346, one container, its key (0)
and cardinality - 1, and the container's offset (16, right after this header)."""


def _bitmap_from_bits(bits: int, count: int) -> BitMap:
    """A bitmap of the set bits of ``bits`` (``count`` of them, all below BITSET_COLUMNS).

    Roaring's portable format stores a container of more than 4,096 values as a plain 8 KiB
    bitset, and an int's ``to_bytes`` is exactly that. So the bits, padded with 4,096 set bits
    above BITSET_COLUMNS to make the container a bitset one, are deserialized in one C call, and
    the padding is removed in another (which turns a small result back into an array container).
    Two C calls instead of a Python loop over every match.

    >>> list(_bitmap_from_bits(0b100101, 3))
    [0, 2, 5]
    """
    header = _HEADER.pack(12346, 1, 0, count + 4096 - 1, _HEADER.size)
    result = BitMap.deserialize(header + bits.to_bytes(BITSET_COLUMNS // 8, "little") + _PAD)
    result.remove_range(BITSET_COLUMNS, 65_536)
    return result


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


class _BitRows(dict[str, int]):
    """Word -> uncompressed row at one position; a word no pattern uses there reads ``other``.

    ``rows[word]`` is one dictionary subscript in C whether or not the word is known, which is
    what the match loop wants: no method call, no attribute lookup for the default.
    """

    __slots__ = ("other",)

    def __init__(self, other: int) -> None:
        super().__init__()
        self.other = other

    def __missing__(self, word: str) -> int:
        return self.other


class _Position:
    """The table for one constituent position; see the module docstring for what each row holds."""

    __slots__ = ("rows", "other", "null", "literal_users", "bit_rows", "bit_null")

    def __init__(self, null: BitMap, other: BitMap, bit_null: int, bit_other: int) -> None:
        self.rows: dict[str, BitMap] = {}
        self.literal_users: Counter[str] = Counter()
        self.other = other
        self.null = null
        self.bit_rows = _BitRows(bit_other)
        self.bit_null = bit_null

    def add_literal(self, word: str, column: int, bit: int) -> None:
        row = self.rows.get(word)
        if row is None:
            # A new word here is a word every wildcard here accepts: it starts as ``other``.
            row = self.rows[word] = BitMap(self.other)
            self.bit_rows[word] = self.bit_rows.other
        row.add(column)
        self.bit_rows[word] |= bit
        self.literal_users[word] += 1

    def remove_literal(self, word: str, column: int, bit: int) -> None:
        self.literal_users[word] -= 1
        if self.literal_users[word]:
            self.rows[word].discard(column)
            self.bit_rows[word] &= ~bit
        else:
            del self.literal_users[word], self.rows[word], self.bit_rows[word]

    def set_everywhere(self, column: int, bit: int, *, null: bool) -> None:
        self.other.add(column)
        for row in self.rows.values():
            row.add(column)
        if bit:
            bit_rows = self.bit_rows
            bit_rows.other |= bit
            for word, value in bit_rows.items():
                bit_rows[word] = value | bit
        if null:
            self.null.add(column)
            self.bit_null |= bit

    def clear_everywhere(self, column: int, bit: int, *, null: bool) -> None:
        self.other.discard(column)
        for row in self.rows.values():
            row.discard(column)
        if bit:
            bit_rows = self.bit_rows
            bit_rows.other &= ~bit
            for word, value in bit_rows.items():
                bit_rows[word] = value & ~bit
        if null:
            self.null.discard(column)
            self.bit_null &= ~bit

    def forget_bits(self) -> None:
        self.bit_rows.other = self.bit_null = 0
        for word in self.bit_rows:
            self.bit_rows[word] = 0


class PositionTables:
    """The tables for one syntax. Columns are added and removed one at a time; nothing rebuilds.

    ``bitset_budget``: the bytes the uncompressed bitsets may take (see the module docstring);
    past it they are dropped, and come back only once the tables are empty again (so nothing is
    ever rebuilt). 0 never keeps them.
    """

    __slots__ = (
        "_positions",
        "_lookups",
        "_with_hash",
        "_without_hash",
        "_leading_wildcard",
        "_lengths",
        "_exact_lengths",
        "_longest_exact",
        "_bitset_budget",
        "_row_count",
        "_bit_tables",
        "_keeps_bits",
        "_slot_of",
        "_column_of",
        "_free_slots",
        "_renumbered",
        "_bit_with_hash",
        "_bit_without_hash",
        "_singles",
    )

    def __init__(self, bitset_budget: int = BITSET_BUDGET) -> None:
        self._positions: list[_Position] = []
        self._lookups: list[tuple[dict[str, BitMap], BitMap]] = []
        """``(rows, other)`` per position: what ``match`` reads, without attribute lookups."""
        self._bit_tables: list[_BitRows] = []
        """The uncompressed rows of each position, likewise."""
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
        self._bitset_budget = bitset_budget
        self._row_count = 0
        """How many int rows the positions hold (each word row, ``other`` and ``null``)."""
        self._keeps_bits = bitset_budget > 0
        self._slot_of: dict[int, int] = {}
        """Column -> its bit in the uncompressed rows."""
        self._column_of: list[int] = []
        """Slot -> column (-1 for a free slot)."""
        self._free_slots: set[int] = set()
        self._renumbered = 0
        """How many live slots differ from their column's number (0: one-step results work)."""
        self._bit_with_hash = self._bit_without_hash = 0
        self._singles: dict[int, FrozenBitMap] = {}
        """Slot -> the frozen bitmap of its column alone, made when first returned."""

    def __len__(self) -> int:
        return len(self._with_hash) + len(self._without_hash)

    @property
    def leading_wildcard(self) -> BitMap:
        """Columns whose pattern starts with a wildcard. Read only."""
        return self._leading_wildcard

    @property
    def keeps_bitsets(self) -> bool:
        """Whether the uncompressed rows are kept (see the class docstring)."""
        return self._keeps_bits

    def add(self, column: int, fixed: Sequence[Token], ends_in_many: bool) -> None:
        """Set ``column``'s bits for the pattern ``fixed`` (+ ``#`` if ``ends_in_many``)."""
        length = len(fixed)
        bit = 0
        if self._keeps_bits:
            # At most two rows per new position and one per literal word: if that could pass the
            # budget, drop the bitsets before making any of them.
            new_rows = 2 * max(0, length - len(self._positions)) + length
            # The widest the ints can get with this column (see _take_slot): on the safe side.
            slots = max(len(self._column_of) + 1, min(column + 1, 2 * (len(self._slot_of) + 1)))
            row_bytes = (slots + 7) // 8 + _INT_OVERHEAD
            if (self._row_count + new_rows + 2) * row_bytes > self._bitset_budget:
                self._forget_bits()
            else:
                bit = 1 << self._take_slot(column)
        while len(self._positions) < length:
            self._grow()
        for position, token in zip(self._positions, fixed, strict=False):
            if token is Wildcard.ONE:
                position.set_everywhere(column, bit, null=False)
            else:
                assert isinstance(token, str)
                if token not in position.rows:
                    self._row_count += 1
                position.add_literal(token, column, bit)
        for position in self._positions[length:]:
            if ends_in_many:
                position.set_everywhere(column, bit, null=True)
            else:
                position.null.add(column)
                position.bit_null |= bit
        if ends_in_many:
            self._with_hash.add(column)
            self._bit_with_hash |= bit
        else:
            self._without_hash.add(column)
            self._bit_without_hash |= bit
            self._exact_lengths[length] += 1
            self._longest_exact = max(self._longest_exact, length)
        first = fixed[0] if fixed else (Wildcard.MANY if ends_in_many else "")
        if isinstance(first, Wildcard):
            self._leading_wildcard.add(column)
        self._lengths[length] += 1

    def remove(self, column: int, fixed: Sequence[Token], ends_in_many: bool) -> None:
        """Clear every bit :meth:`add` set for ``column`` with the same arguments."""
        bit = 0
        if self._keeps_bits:
            bit = 1 << self._release_slot(column)
        length = len(fixed)
        for position, token in zip(self._positions, fixed, strict=False):
            if token is Wildcard.ONE:
                position.clear_everywhere(column, bit, null=False)
            else:
                assert isinstance(token, str)
                position.remove_literal(token, column, bit)
                if token not in position.rows:
                    self._row_count -= 1
        for position in self._positions[length:]:
            if ends_in_many:
                position.clear_everywhere(column, bit, null=True)
            else:
                position.null.discard(column)
                position.bit_null &= ~bit
        if ends_in_many:
            self._with_hash.discard(column)
            self._bit_with_hash &= ~bit
        else:
            self._without_hash.discard(column)
            self._bit_without_hash &= ~bit
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
            for dropped in self._positions[longest:]:
                self._row_count -= 2 + len(dropped.rows)
            del self._positions[longest:], self._lookups[longest:], self._bit_tables[longest:]
        if not self._lengths:
            # Empty: whatever made the bitsets go no longer holds, and slots can start afresh.
            self._keeps_bits = self._bitset_budget > 0
            self._slot_of, self._column_of, self._free_slots = {}, [], set()
            self._renumbered, self._singles = 0, {}

    def _take_slot(self, column: int) -> int:
        """A free slot for ``column``: its own number if that is free, next, or a little past
        the end (the ints then stay at most twice as wide as the patterns), else any."""
        column_of = self._column_of
        end = len(column_of)
        if column == end or column in self._free_slots:
            slot = column
        elif end < column < 2 * (len(self._slot_of) + 1):
            # Columns of literal or trie patterns leave gaps: keep their numbers as free slots.
            self._free_slots.update(range(end, column))
            column_of.extend([-1] * (column - end))
            slot = column
        elif self._free_slots:
            slot = self._free_slots.pop()
        else:
            slot = len(column_of)
        self._free_slots.discard(slot)
        if slot == len(column_of):
            column_of.append(column)
        else:
            column_of[slot] = column
        self._slot_of[column] = slot
        self._renumbered += slot != column
        return slot

    def _release_slot(self, column: int) -> int:
        slot = self._slot_of.pop(column)
        self._column_of[slot] = -1
        self._free_slots.add(slot)
        self._renumbered -= slot != column
        self._singles.pop(slot, None)
        return slot

    def _forget_bits(self) -> None:
        self._keeps_bits = False
        self._slot_of, self._column_of, self._free_slots = {}, [], set()
        self._renumbered, self._singles = 0, {}
        self._bit_with_hash = self._bit_without_hash = 0
        for position in self._positions:
            position.forget_bits()

    def _grow(self) -> None:
        """Add the table for the next position, holding the columns already present.

        Every present pattern ends at or before the new position, so each '#' column covers it
        (every row, ``null`` included) and each other column wants no word there (``null``).
        """
        position = _Position(
            null=self._without_hash | self._with_hash,
            other=BitMap(self._with_hash),
            bit_null=self._bit_without_hash | self._bit_with_hash,
            bit_other=self._bit_with_hash,
        )
        self._positions.append(position)
        self._lookups.append((position.rows, position.other))
        self._bit_tables.append(position.bit_rows)
        self._row_count += 2

    def match(self, words: Sequence[str]) -> BitMap | FrozenBitMap | None:
        """The columns whose patterns match a topic of these words, or ``None`` for none.

        The result is new: a :class:`FrozenBitMap` when read from the bitsets, else a bitmap the
        caller may change.
        """
        if not self._keeps_bits:
            return self._match_bitmaps(words)
        # The uncompressed rows first: the same steps as _match_bitmaps, on ints.
        count = len(words)
        bits = -1  # every column
        if count > self._longest_exact:
            bits = self._bit_with_hash
            if not bits:
                return None
        # zip(strict=False) costs twice a plain zip here, and the lengths differ on purpose.
        for word, rows in zip(words, self._bit_tables):  # noqa: B905
            bits &= rows[word]
            if not bits:
                return None
        positions = self._positions
        if count < len(positions):
            bits &= positions[count].bit_null
            if not bits:
                return None
        elif bits == -1:
            bits = self._bit_without_hash | self._bit_with_hash
            if not bits:
                return None
        matched = bits.bit_count()
        if matched == 1:
            # One match, the commonest non-empty answer: a frozen bitmap can be shared.
            slot = bits.bit_length() - 1
            single = self._singles.get(slot)
            if single is None:
                column = self._column_of[slot]
                single = self._singles[slot] = FrozenBitMap((column,), optimize=False)
            return single
        if matched > SPARSE_RESULT:
            if not self._renumbered and len(self._column_of) <= BITSET_COLUMNS:
                return _bitmap_from_bits(bits, matched)  # slots are columns
            if matched > LOOP_RESULT:
                return self._match_bitmaps(words)
        column_of = self._column_of
        found = []
        while bits:
            slot = bits.bit_length() - 1
            found.append(column_of[slot])
            bits ^= 1 << slot
        return FrozenBitMap(found, optimize=False)

    def _match_bitmaps(self, words: Sequence[str]) -> BitMap | None:
        count = len(words)
        result: BitMap | None = None
        if count > self._longest_exact:
            # Longer than every pattern without a trailing '#': only those with one can match.
            if not self._with_hash:
                return None
            result = BitMap(self._with_hash, optimize=False)
        for word, (rows, other) in zip(words, self._lookups):  # noqa: B905 (see match)
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
