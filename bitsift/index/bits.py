"""Column sets as Python integers (bit ``c`` set: column ``c`` is in), for the match loop.

The index keeps its postings in roaring bitmaps (compact, incremental, fast to build from). But
the per-message loop intersects one cached answer per field with the candidates, and there
CPython's own integers win: ``a & b`` on two 12,000-bit integers costs about 80 ns, whatever the
bits, where pyroaring pays 300–600 ns for two bitset containers and, once the candidates thin out
into an *array* container, about a nanosecond per candidate plus a new Python object per result.
So cached answers are integers, and the candidates of a message are one integer.

Crossing between the two forms is the cost to watch, and it is paid only on a cache miss (a
roaring answer becomes an integer) and when a result is read (an integer becomes column numbers):

* :func:`to_int` reads roaring's portable serialization: a bitset container (more than 4,096
  columns in a 65,536-column chunk) *is* the integer's bytes for that chunk, so a dense answer
  converts in about a microsecond; sparse chunks are scattered with numpy or, when tiny, in Python;
* :func:`positions` finds the set bits: the integer's bytes as 64-bit words, the non-zero words
  (numpy), and their bits (a Python loop for a sparse result, numpy for a dense one).

>>> from pyroaring import BitMap
>>> to_int(BitMap([0, 3, 70000])) == (1 << 0) | (1 << 3) | (1 << 70000)
True
>>> positions(to_int(BitMap([5, 64, 65, 70000])))
[5, 64, 65, 70000]
>>> positions(0)
[]
"""

from __future__ import annotations

import struct
from typing import Any

from pyroaring import BitMap, FrozenBitMap

__all__ = [
    "to_int",
    "positions",
    "position_array",
    "from_positions",
    "to_bitmap",
    "small_to_bitmap",
    "bitmap_of",
]

_NO_RUNS = 12346
_WITH_RUNS = 12347
_NO_OFFSET_THRESHOLD = 4
_UNPACK_WORDS = 256
"""Non-zero 64-bit words past which numpy unpacks their bits faster than a Python loop."""
_SCATTER_IN_PYTHON = 48
"""Members of a sparse chunk up to which a Python loop beats numpy's fixed costs."""


def from_positions(columns: Any) -> int:
    """The integer with exactly these bits set (any iterable of non-negative ints)."""
    columns = list(columns)
    if not columns:
        return 0
    if len(columns) <= _SCATTER_IN_PYTHON:
        data = bytearray((max(columns) >> 3) + 1)
        for column in columns:
            data[column >> 3] |= 1 << (column & 7)
        return int.from_bytes(data, "little")
    import numpy

    values = numpy.asarray(columns, dtype=numpy.int64)
    bits = numpy.zeros(int(values.max()) + 1, numpy.uint8)
    bits[values] = 1
    return int.from_bytes(numpy.packbits(bits, bitorder="little").tobytes(), "little")


def _chunk_from_values(data: bytes, offset: int, count: int) -> int:
    """The 65,536-bit chunk whose members are ``count`` uint16 values at ``offset``."""
    if count <= _SCATTER_IN_PYTHON:
        return from_positions(struct.unpack_from(f"<{count}H", data, offset))
    import numpy

    values = numpy.frombuffer(data, "<u2", count=count, offset=offset)
    bits = numpy.zeros(int(values[-1]) + 1, numpy.uint8)  # values are sorted: the last is top
    bits[values] = 1
    return int.from_bytes(numpy.packbits(bits, bitorder="little").tobytes(), "little")


def to_int(bitmap: BitMap | FrozenBitMap) -> int:
    """The integer of a roaring bitmap, read from its portable serialization (see the module
    docstring for why this is fast for the dense answers the index caches)."""
    if not bitmap:
        return 0
    data = bitmap.serialize()
    top = bitmap.max()
    cookie = int.from_bytes(data[0:4], "little")
    run_flags: bytes | None
    if cookie & 0xFFFF == _WITH_RUNS:
        count = (cookie >> 16) + 1
        flag_bytes = (count + 7) // 8
        run_flags = data[4 : 4 + flag_bytes]
        offset = 4 + flag_bytes
        has_offsets = count >= _NO_OFFSET_THRESHOLD
    elif cookie == _NO_RUNS:
        count = int.from_bytes(data[4:8], "little")
        run_flags = None
        offset = 8
        has_offsets = True
    else:  # pragma: no cover - pyroaring always writes one of the two
        raise ValueError(f"unexpected roaring serialization cookie {cookie}")
    header = struct.unpack_from(f"<{2 * count}H", data, offset)
    offset += 4 * count
    if has_offsets:
        offset += 4 * count
    result = 0
    for number in range(count):
        key, cardinality = header[2 * number], header[2 * number + 1] + 1
        if run_flags is not None and run_flags[number >> 3] & (1 << (number & 7)):
            (runs,) = struct.unpack_from("<H", data, offset)
            bounds = struct.unpack_from(f"<{2 * runs}H", data, offset + 2)
            offset += 2 + 4 * runs
            chunk = 0
            for start, extra in zip(bounds[::2], bounds[1::2], strict=True):
                chunk |= ((1 << (extra + 1)) - 1) << start
        elif cardinality > 4096:
            # Only the bytes up to the highest member: an answer is as wide as the universe,
            # often far less than the 65,536 columns of its last chunk.
            used = ((top & 0xFFFF) >> 3) + 1 if key == top >> 16 else 8192
            chunk = int.from_bytes(data[offset : offset + used], "little")
            offset += 8192
        else:
            chunk = _chunk_from_values(data, offset, cardinality)
            offset += 2 * cardinality
        result |= chunk << (key << 16)
    return result


def positions(bits: int) -> list[int]:
    """The set bits of a non-negative integer, in increasing order."""
    if not bits:
        return []
    import numpy

    words = numpy.frombuffer(bits.to_bytes((bits.bit_length() + 63) // 64 * 8, "little"), "<u8")
    nonzero = words.nonzero()[0]
    if len(nonzero) > _UNPACK_WORDS:
        unpacked = numpy.unpackbits(words[nonzero].view(numpy.uint8), bitorder="little")
        hits = unpacked.nonzero()[0]
        many: list[int] = ((nonzero[hits >> 6] << 6) | (hits & 63)).tolist()
        return many
    found = []
    for word, base in zip(words[nonzero].tolist(), (nonzero << 6).tolist(), strict=True):
        if not word & (word - 1):  # one bit: the common case in a sparse result
            found.append(base + word.bit_length() - 1)
            continue
        while word:
            low = word & -word
            found.append(base + low.bit_length() - 1)
            word ^= low
    return found


def position_array(bits: int) -> Any:
    """:func:`positions` as a numpy ``int64`` array (no Python int per bit: for gathering).

    In a sparse result most non-zero words hold one bit, whose position is its exact base-2
    logarithm (powers of two are exact in float64); only words with several bits are unpacked.
    """
    import numpy

    if not bits:
        return numpy.zeros(0, numpy.int64)
    words = numpy.frombuffer(bits.to_bytes((bits.bit_length() + 63) // 64 * 8, "little"), "<u8")
    nonzero = words.nonzero()[0]
    values = words[nonzero]
    single = (values & (values - numpy.uint64(1))) == 0
    found = (nonzero[single] << 6) + numpy.log2(values[single]).astype(numpy.int64)
    if single.all():
        return found
    several = nonzero[~single]
    hits = numpy.unpackbits(values[~single].view(numpy.uint8), bitorder="little").nonzero()[0]
    more = (several[hits >> 6] << 6) | (hits & 63)
    return numpy.sort(numpy.concatenate([found, more]))


def to_bitmap(bits: int) -> FrozenBitMap:
    """The frozen roaring bitmap of an integer (for readers that want roaring, and tests)."""
    return FrozenBitMap(positions(bits))


_FILLER_START = 65536 - 4096
_FILLER_BYTES = b"\xff" * 512


def small_to_bitmap(bits: int) -> BitMap | None:
    """A roaring bitmap of an integer below 61,440 bits, built by roaring's own deserializer.

    roaring reads a container as a bitset only when it holds more than 4,096 members, so the
    unused top of the 65,536-column chunk is filled with 4,096 filler bits, the integer's bytes
    become the bitset payload as they are, and the filler is removed again: a few C calls,
    where finding each set bit from Python costs a call per bit. None when ``bits`` is zero or
    too wide.

    >>> list(small_to_bitmap((1 << 3) | (1 << 4000)))
    [3, 4000]
    """
    if not bits or bits >> _FILLER_START:
        return None
    header = struct.pack("<IIHHI", _NO_RUNS, 1, 0, bits.bit_count() + 4095, 16)
    bitmap = BitMap.deserialize(
        header + bits.to_bytes(_FILLER_START >> 3, "little") + _FILLER_BYTES
    )
    bitmap.remove_range(_FILLER_START, 65536)
    return bitmap


_SLICE_MASK = (1 << _FILLER_START) - 1


def bitmap_of(bits: int) -> BitMap:
    """A roaring bitmap of any non-negative integer: :func:`small_to_bitmap` on each 61,440-bit
    slice, shifted into place. Past 61,440 bits this is still a handful of C calls per slice,
    where :func:`positions` pays for numpy's fixed costs and a Python call per set bit.

    >>> list(bitmap_of((1 << 3) | (1 << 70000) | (1 << 200000)))
    [3, 70000, 200000]
    """
    result = BitMap()
    offset = 0
    while bits:
        part = small_to_bitmap(bits & _SLICE_MASK)
        if part is not None:
            result |= part.shift(offset) if offset else part
        bits >>= _FILLER_START
        offset += _FILLER_START
    return result
