"""Match a whole batch of messages at once, with array operations instead of a loop over rows.

:meth:`SubscriptionIndex.match` answers one message at a time. A recorded dataset (a Spark
partition, a Parquet file, a list of dicts) arrives in batches of thousands of rows that repeat the
same few values again and again: the same symbols, exchanges and flags, prices in the same few
range buckets. :class:`BatchMatcher` exploits that:

1. **Classify each indexed field's column with array operations.** A string or boolean column is
   dictionary-encoded, and each distinct value is classified once. A numeric column is placed,
   with ``numpy.searchsorted``, among the sorted boundaries of every range and numeric equality
   the subscriptions test on that field: values between two neighbouring boundaries (or exactly on
   one) meet exactly the same criteria, so one representative decides for all of them. A value's
   *class* is then the set of conjunction columns it violates in that field (asked of the index's
   own slots, so the classification can never differ from :meth:`SubscriptionIndex.match`); equal
   sets share one class, and each class is kept as a row of packed bits.
2. **Resolve every row at once.** A row's surviving columns are the live columns minus the OR of
   its classes' bit rows (topic included): one numpy gather-and-OR per field over the whole batch,
   in chunks that keep the rows x columns bit matrix to a few MiB. The set bits left are the
   (row, column) candidates, found with ``nonzero``; columns map to their subscriptions.
3. **Check residuals row by row**, only for the (row, column) candidates whose column has tests no
   index can serve (comparisons between fields, ...; an arithmetic expression compared with
   constants is a derived field instead, whose values are computed row by row in step 1). The
   reference evaluator decides them on the row's own properties, exactly as
   :meth:`SubscriptionIndex.match` does.

The result for every row is exactly ``index.match(row_properties, topic)``; the tests check that
with hypothesis. Input is a ``pyarrow.RecordBatch`` or ``Table`` (one column per property,
structs for nested properties, nulls for NULL) or a plain sequence of property mappings. pyarrow
is only imported when an Arrow batch is given.

>>> from bitsift import Subscription, SubscriptionIndex
>>> index = SubscriptionIndex([
...     Subscription(id="cheap", selector="price < 50"),
...     Subscription(id="eu", selector="region = 'eu'", topic="fx.#"),
... ])
>>> matcher = BatchMatcher(index)
>>> rows = [{"price": 10, "region": "eu"}, {"price": 70, "region": "eu"}, {"region": "us"}]
>>> [sorted(ids) for ids in matcher.match(rows, topics=["fx.usd", "fx.eur", None])]
[['cheap', 'eu'], ['eu'], []]

The matcher reads the index under the index's lock for each batch, and notices when the index has
changed since the previous batch (its cached classifications are then dropped), so it stays
exact while subscriptions come and go.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy
from pyroaring import BitMap, FrozenBitMap

from bitsift.errors import MessageError
from bitsift.index.criteria import Equals, InRange, Kind, classify
from bitsift.selectors.evaluate import evaluate, value_of
from bitsift.selectors.values import lookup

if TYPE_CHECKING:
    import pyarrow

    from bitsift.index.columns import Column
    from bitsift.index.slots import FieldSlot
    from bitsift.index.subscriptions import SubscriptionIndex

__all__ = ["BatchMatcher", "MatchedPairs"]

IntArray: TypeAlias = "numpy.ndarray[Any, numpy.dtype[numpy.int64]]"
Rows: TypeAlias = "Sequence[Mapping[str, Any]]"
Batch: TypeAlias = "pyarrow.RecordBatch | pyarrow.Table | Sequence[Mapping[str, Any]]"

_CACHE_LIMIT = 200_000
"""Distinct values remembered per field between batches; past it the memory is dropped (at the
start of a batch) so that a stream of unique values cannot grow it without bound."""
_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
_CLASS_BYTES = 64 << 20
"""Packed class rows kept per field before the memory is dropped; a batch is also cut into slices
that cannot create more than this many bytes of new class rows per field."""
_LONGEST_CACHED = 1024
"""Longer strings and topics are answered but not remembered, so that a stream of huge distinct
values cannot fill memory (the count limit alone would allow 200,000 of any size)."""
_MATRIX_WORDS = 1 << 19
"""64-bit words in one chunk's rows x columns bit matrix (4 MiB)."""
_MISSING_KEY = ("missing",)
_NAN_KEY = ("nan",)
_OTHER_KEY = ("other",)


@dataclass(frozen=True)
class MatchedPairs:
    """The matches of a batch as two parallel arrays: ``rows[i]`` matched ``ids[subscriptions[i]]``.

    Pairs are sorted by row, each (row, subscription) appears once, and ``ids`` may hold more ids
    than the pairs use (it is shared across batches). This is the compact form the Spark pipeline
    writes; :meth:`per_row` turns it into one set per row.
    """

    row_count: int
    rows: IntArray
    subscriptions: IntArray
    ids: list[str]

    def __len__(self) -> int:
        return len(self.rows)

    def per_row(self) -> list[frozenset[str]]:
        """The matching subscription ids of each row, in row order."""
        found: list[set[str]] = [set() for _ in range(self.row_count)]
        ids = self.ids
        for row, subscription in zip(self.rows.tolist(), self.subscriptions.tolist(), strict=True):
            found[row].add(ids[subscription])
        return [frozenset(row) for row in found]


class _FieldClasses:
    """For one field: the violation set of each class, and the class of values already seen."""

    __slots__ = (
        "field",
        "boundaries",
        "float_bounds",
        "int_bounds",
        "classes",
        "class_of",
        "seen",
        "_matrix",
    )

    def __init__(self, field: str, boundaries: list[Any]) -> None:
        self.field = field
        self.boundaries = boundaries
        """Every number a criterion on this field compares with, sorted, exact."""
        self.float_bounds = numpy.array(sorted({_as_float(b) for b in boundaries}), numpy.float64)
        self.int_bounds = numpy.array(sorted({_as_int(b) for b in boundaries}), numpy.int64)
        self.classes: list[FrozenBitMap] = []
        self.class_of: dict[FrozenBitMap, int] = {}
        self.seen: dict[object, int] = {}
        self._matrix = numpy.zeros((0, 0), numpy.uint64)

    def forget_if_large(self, words: int) -> None:
        classes = len(self.classes)
        if (
            len(self.seen) > _CACHE_LIMIT
            or classes > _CACHE_LIMIT
            or classes * words * 8 > _CLASS_BYTES
        ):
            self.classes.clear()
            self.class_of.clear()
            self.seen.clear()
            self._matrix = numpy.zeros((0, 0), numpy.uint64)

    def matrix(self, words: int) -> Any:
        """The violated columns of every class as packed bits: one row of ``words`` per class."""
        matrix = self._matrix
        if len(matrix) < len(self.classes) or matrix.shape[1] != words:
            done = len(matrix) if matrix.shape[1] == words else 0
            more = [_packed(bitmap, words) for bitmap in self.classes[done:]]
            matrix = numpy.vstack([matrix[:done].reshape(done, words), *more])
            self._matrix = matrix
        return matrix

    def intern(self, violated: FrozenBitMap) -> int:
        number = self.class_of.get(violated)
        if number is None:
            number = self.class_of[violated] = len(self.classes)
            self.classes.append(violated)
        return number


_EMPTY_INTS: IntArray = numpy.zeros(0, numpy.int64)


def _numbers(bitmap: BitMap | FrozenBitMap) -> Any:
    return numpy.frombuffer(bitmap.to_array(), dtype=numpy.uint32).astype(numpy.int64)


def _packed(bitmap: BitMap | FrozenBitMap, words: int) -> Any:
    """A bitmap as ``words`` little-endian 64-bit words (bit ``n`` of the row is column ``n``)."""
    flags = numpy.zeros(words * 64, bool)
    flags[_numbers(bitmap)] = True
    return numpy.packbits(flags, bitorder="little").view(numpy.uint64)


def _as_float(bound: Any) -> float:
    """A float boundary that splits float values exactly as ``bound`` does (see ``_classes``)."""
    try:
        return float(bound)
    except OverflowError:
        return math.inf if bound > 0 else -math.inf


def _as_int(bound: Any) -> int:
    """An int64 boundary that splits int64 values exactly as ``bound`` does."""
    if isinstance(bound, float) and math.isinf(bound):
        return _LONG_MAX if bound > 0 else _LONG_MIN
    if isinstance(bound, Decimal) and bound.is_infinite():
        return _LONG_MAX if bound > 0 else _LONG_MIN
    # v < bound exactly when v < ceil(bound), for an integer v; equality only on integers.
    ceiling: int = math.ceil(bound)
    return min(max(ceiling, _LONG_MIN), _LONG_MAX)


def _is_usable_bound(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | Fraction):
        return False
    return not (value != value)  # NaN bounds compare with nothing


class BatchMatcher:
    """Match batches of messages against a :class:`~bitsift.SubscriptionIndex`; see the module."""

    def __init__(self, index: SubscriptionIndex) -> None:
        self.index = index
        self._snapshot: list[Column] = []
        self._words = 1
        self._fields: dict[str, _FieldClasses] = {}
        self._topic_classes = _FieldClasses("", [])
        self._id_numbers: dict[str, int] = {}
        self._ids: list[str] = []

    # -- public --------------------------------------------------------------------------------

    def match(
        self, batch: Batch, topics: Sequence[str | None] | None = None
    ) -> list[frozenset[str]]:
        """The matching subscription ids of each row: ``index.match(row, topic)`` for every row."""
        return self.match_pairs(batch, topics).per_row()

    def match_pairs(self, batch: Batch, topics: Any = None) -> MatchedPairs:
        """The matches of a batch as ``(row, subscription)`` pairs; see :class:`MatchedPairs`.

        ``batch`` holds message properties only (an Arrow batch or table, or a sequence of
        mappings); ``topics`` gives each row's topic (a sequence or Arrow array, ``None`` for no
        topic), or is ``None`` when no row has one.
        """
        row_count, column_of, rows_of = _reader(batch)
        topic_list = _topic_list(topics, row_count)
        index = self.index
        with index._lock:
            self._refresh()
            step = max(256, _CLASS_BYTES // (self._words * 8))
            if row_count <= step:
                return self._match(row_count, column_of, rows_of, topic_list)
            # Huge indexes: each distinct value may add a class row of words * 8 bytes, so
            # bound the rows matched at once (and thus the class rows they can add).
            parts = []
            for begin in range(0, row_count, step):
                end = min(row_count, begin + step)
                part = (
                    batch[begin:end]
                    if isinstance(batch, Sequence)
                    else batch.slice(begin, end - begin)
                )
                count, part_column_of, part_rows_of = _reader(part)
                part_topics = None if topic_list is None else topic_list[begin:end]
                pairs = self._match(count, part_column_of, part_rows_of, part_topics)
                parts.append((pairs.rows + begin, pairs.subscriptions))
            rows = numpy.concatenate([rows for rows, _ in parts])
            subscriptions = numpy.concatenate([numbers for _, numbers in parts])
            return self._pairs(row_count, rows, subscriptions)

    # -- the work ------------------------------------------------------------------------------

    def _refresh(self) -> None:
        """Drop every cached classification when the index's columns have changed."""
        columns = list(self.index._table.by_number.values())
        snapshot = self._snapshot
        if len(columns) == len(snapshot) and all(
            new is old for new, old in zip(columns, snapshot, strict=True)
        ):
            return
        # Holding the old Column objects keeps their ids from being reused, so identity is exact.
        self._snapshot = columns
        self._words = max(1, (max(self.index._table.by_number, default=0) + 64) // 64)
        boundaries: dict[str, set[Any]] = {}
        for column in columns:
            for _, test in column.field_tests:
                bounds = boundaries.setdefault(test.field, set())
                criterion = test.criterion
                if isinstance(criterion, InRange):
                    bounds.update(b for b in (criterion.low, criterion.high) if b is not None)
                elif isinstance(criterion, Equals):
                    bounds.update(key[1] for key in criterion.keys if key[0] == "n")
        self._fields = {
            field: _FieldClasses(field, sorted(b for b in bounds if _is_usable_bound(b)))
            for field, bounds in boundaries.items()
        }
        self._topic_classes = _FieldClasses("", [])

    def _match(
        self,
        row_count: int,
        column_of: Any,
        rows_of: Any,
        topics: list[str | None] | None,
    ) -> MatchedPairs:
        index = self.index
        live = index._live
        if not row_count or not live:
            return self._pairs(row_count, _EMPTY_INTS, _EMPTY_INTS)
        states: list[tuple[_FieldClasses, IntArray]] = []
        if index._with_topic:
            state = self._topic_classes
            state.forget_if_large(self._words)
            states.append((state, self._topic_codes(state, row_count, topics)))
        every_row: list[Mapping[str, Any]] | None = None
        for field, lanes in index._slots.items():
            state = self._fields[field]
            state.forget_if_large(self._words)
            expression = index._expressions.get(field)
            if expression is None:
                values = column_of(field)
            else:
                # A derived field (bitsift.index.derived): the expression's value on each row,
                # by the reference evaluator, as SubscriptionIndex.match computes it.
                if every_row is None:
                    every_row = rows_of(numpy.arange(row_count))
                values = [value_of(expression, row) for row in every_row]
            states.append((state, self._field_codes(state, lanes, values)))
        words = self._words
        survivors_of_live = _packed(live, words)
        # Rows in chunks, so the rows x columns bit matrix stays a few MiB however many columns.
        chunk = max(64, _MATRIX_WORDS // words)
        pair_rows: list[IntArray] = []
        pair_columns: list[IntArray] = []
        for begin in range(0, row_count, chunk):
            end = min(row_count, begin + chunk)
            violated = numpy.zeros((end - begin, words), numpy.uint64)
            for state, codes in states:
                violated |= state.matrix(words)[codes[begin:end]]
            survivors = survivors_of_live & ~violated
            rows, word_numbers = numpy.nonzero(survivors)
            if not len(rows):
                continue
            bits = numpy.unpackbits(
                survivors[rows, word_numbers].view(numpy.uint8).reshape(-1, 8),
                axis=1,
                bitorder="little",
            )
            hit, bit = numpy.nonzero(bits)
            pair_rows.append(rows[hit].astype(numpy.int64) + begin)
            pair_columns.append(word_numbers[hit].astype(numpy.int64) * 64 + bit)
        if not pair_rows:
            return self._pairs(row_count, _EMPTY_INTS, _EMPTY_INTS)
        rows = numpy.concatenate(pair_rows)
        columns = numpy.concatenate(pair_columns)
        with_residuals = index._with_residuals
        if with_residuals:
            checked = numpy.isin(columns, _numbers(with_residuals))
            if checked.any():
                keep = self._residuals_hold(rows[checked], columns[checked], rows_of)
                checked[checked] = ~keep
                rows, columns = rows[~checked], columns[~checked]
        return self._subscriptions_of(row_count, rows, columns)

    def _residuals_hold(self, rows: IntArray, columns: IntArray, rows_of: Any) -> Any:
        """For each (row, column) pair, whether the column's residual tests are TRUE on the row."""
        by_number = self.index._table.by_number
        distinct, position = numpy.unique(rows, return_inverse=True)
        messages = rows_of(distinct)
        result = numpy.empty(len(rows), bool)
        for pair, (message_number, column) in enumerate(
            zip(position.reshape(-1).tolist(), columns.tolist(), strict=True)
        ):
            message = messages[message_number]
            result[pair] = all(
                evaluate(residual.node, message) is residual.want
                for residual in by_number[column].residuals
            )
        return result

    def _subscriptions_of(self, row_count: int, rows: IntArray, columns: IntArray) -> MatchedPairs:
        """Turn (row, column) pairs into distinct (row, subscription) pairs."""
        if not len(rows):
            return self._pairs(row_count, _EMPTY_INTS, _EMPTY_INTS)
        by_number = self.index._table.by_number
        distinct_columns, column_position = numpy.unique(columns, return_inverse=True)
        numbers = self._id_numbers
        counts = []
        flat: list[int] = []
        for column in distinct_columns.tolist():
            subscribers = by_number[column].subscribers
            counts.append(len(subscribers))
            for subscription_id in subscribers:
                number = numbers.get(subscription_id)
                if number is None:
                    number = numbers[subscription_id] = len(self._ids)
                    self._ids.append(subscription_id)
                flat.append(number)
        count_array = numpy.array(counts, numpy.int64)
        offsets = numpy.concatenate(([0], numpy.cumsum(count_array)))
        subscriber_numbers = numpy.array(flat, numpy.int64)
        per_pair = count_array[column_position.reshape(-1)]
        expanded_rows = numpy.repeat(rows, per_pair)
        starts = numpy.repeat(offsets[column_position.reshape(-1)], per_pair)
        within = numpy.arange(len(expanded_rows)) - numpy.repeat(
            numpy.cumsum(per_pair) - per_pair, per_pair
        )
        subscriptions = subscriber_numbers[starts + within]
        # A subscription with several matching conjunctions appears once per row.
        key = numpy.sort(expanded_rows * (len(self._ids) + 1) + subscriptions)
        if len(key) > 1:
            key = key[numpy.concatenate(([True], key[1:] != key[:-1]))]
        return self._pairs(row_count, key // (len(self._ids) + 1), key % (len(self._ids) + 1))

    def _pairs(self, row_count: int, rows: IntArray, subscriptions: IntArray) -> MatchedPairs:
        return MatchedPairs(
            row_count,
            rows.astype(numpy.int64, copy=False),
            subscriptions.astype(numpy.int64, copy=False),
            self._ids,
        )

    def _topic_codes(
        self, state: _FieldClasses, row_count: int, topics: list[str | None] | None
    ) -> IntArray:
        index = self.index
        with_topic = index._with_topic
        if topics is None:
            code = state.intern(FrozenBitMap(with_topic))
            return numpy.full(row_count, code, numpy.int64)
        seen = state.seen
        codes = numpy.empty(row_count, numpy.int64)
        for row, topic in enumerate(topics):
            found = seen.get(topic)
            if found is not None:
                code = found
            else:
                if topic is None:
                    violated = FrozenBitMap(with_topic)
                else:
                    violated = FrozenBitMap(with_topic - index._topics.match(topic))
                code = state.intern(violated)
                if topic is None or len(topic) <= _LONGEST_CACHED:
                    seen[topic] = code
            codes[row] = code
        return codes

    def _field_codes(self, state: _FieldClasses, lanes: list[FieldSlot], values: Any) -> IntArray:
        """The class of every row's value of one field (see the module docstring)."""
        if isinstance(values, list):
            return self._object_codes(state, lanes, values)
        import pyarrow
        import pyarrow.compute

        kind = values.type
        if pyarrow.types.is_null(kind):
            code = self._class(state, lanes, _MISSING_KEY, None)
            return numpy.full(len(values), code, numpy.int64)
        if pyarrow.types.is_dictionary(kind) and (
            pyarrow.types.is_string(kind.value_type)
            or pyarrow.types.is_large_string(kind.value_type)
        ):
            return self._dictionary_codes(state, lanes, values)
        if (
            pyarrow.types.is_string(kind)
            or pyarrow.types.is_large_string(kind)
            or pyarrow.types.is_boolean(kind)
        ):
            return self._dictionary_codes(state, lanes, pyarrow.compute.dictionary_encode(values))
        if pyarrow.types.is_floating(kind) or (
            pyarrow.types.is_integer(kind) and kind.bit_width <= 32
        ):
            return self._number_codes(state, lanes, values.cast(pyarrow.float64()), floats=True)
        if pyarrow.types.is_signed_integer(kind):
            return self._number_codes(state, lanes, values.cast(pyarrow.int64()), floats=False)
        return self._object_codes(state, lanes, values.to_pylist())

    def _class(
        self, state: _FieldClasses, lanes: list[FieldSlot], key: object, value: object
    ) -> int:
        """The class number of a classified value whose cache key is ``key``."""
        code = state.seen.get(key)
        if code is None:
            kind, normalised = classify(value)
            if len(lanes) == 1:
                violated = lanes[0].violated(kind, normalised)
            else:
                violated = FrozenBitMap(
                    BitMap.union(*(slot.violated(kind, normalised) for slot in lanes))
                )
            code = state.intern(violated)
            if not isinstance(key, str) or len(key) <= _LONGEST_CACHED:
                state.seen[key] = code
        return code

    def _dictionary_codes(
        self, state: _FieldClasses, lanes: list[FieldSlot], encoded: Any
    ) -> IntArray:
        dictionary = encoded.dictionary.to_pylist()
        mapping = numpy.empty(len(dictionary) + 1, numpy.int64)
        for position, value in enumerate(dictionary):
            # Strings are their own cache keys (as in _object_codes); booleans are tagged.
            key = value if isinstance(value, str) else ("b", value)
            mapping[position] = self._class(state, lanes, key, value)
        mapping[len(dictionary)] = self._class(state, lanes, _MISSING_KEY, None)
        indices = encoded.indices.fill_null(len(dictionary))
        codes: IntArray = mapping[
            indices.to_numpy(zero_copy_only=False).astype(numpy.int64, copy=False)
        ]
        return codes

    def _number_codes(
        self, state: _FieldClasses, lanes: list[FieldSlot], values: Any, *, floats: bool
    ) -> IntArray:
        bounds = state.float_bounds if floats else state.int_bounds
        nulls = values.is_null().to_numpy(zero_copy_only=False)
        numbers = values.fill_null(0).to_numpy(zero_copy_only=False)
        # Elementary class: 2*i for the open gap below bounds[i], 2*i + 1 for bounds[i] itself.
        places = numpy.searchsorted(bounds, numbers, side="left")
        on_bound = numpy.zeros(len(numbers), bool)
        if len(bounds):
            inside = places < len(bounds)
            on_bound[inside] = bounds[places[inside]] == numbers[inside]
        elementary = places.astype(numpy.int64) * 2 + on_bound
        nan_code = 2 * len(bounds) + 2
        missing_code = nan_code + 1
        if floats:
            elementary[numpy.isnan(numbers)] = nan_code
        elementary[nulls] = missing_code
        distinct, first, inverse = numpy.unique(elementary, return_index=True, return_inverse=True)
        tag = "f" if floats else "i"
        mapping = numpy.empty(len(distinct), numpy.int64)
        for position, (code, row) in enumerate(zip(distinct.tolist(), first.tolist(), strict=True)):
            if code == missing_code:
                mapping[position] = self._class(state, lanes, _MISSING_KEY, None)
            elif code == nan_code:
                mapping[position] = self._class(state, lanes, _NAN_KEY, math.nan)
            else:
                value = float(numbers[row]) if floats else int(numbers[row])
                mapping[position] = self._class(state, lanes, (tag, code), value)
        return mapping[inverse.reshape(-1)]

    def _object_codes(
        self, state: _FieldClasses, lanes: list[FieldSlot], values: list[Any]
    ) -> IntArray:
        """Any Python values, one by one: exact for Decimal, huge ints, numpy scalars, junk.

        Cache keys: a string is its own key; a number outside NaN is the int ``2*i`` (inside the
        gap below boundary ``i``) or ``2*i + 1`` (on it); other values get tagged tuples.
        """
        codes = [0] * len(values)
        seen = state.seen
        bounds = state.boundaries
        bound_count = len(bounds)
        for row, value in enumerate(values):
            kind = type(value)
            if kind is str:
                code = seen.get(value)
                if code is None:
                    code = self._class(state, lanes, value, value)
            elif (kind is float or kind is int) and value == value:
                place = bisect_left(bounds, value)
                key = 2 * place + (place < bound_count and bounds[place] == value)
                code = seen.get(key)
                if code is None:
                    code = self._class(state, lanes, key, value)
            else:
                code = self._other_class(state, lanes, value)
            codes[row] = code
        return numpy.array(codes, numpy.int64)

    def _other_class(self, state: _FieldClasses, lanes: list[FieldSlot], value: object) -> int:
        kind, normalised = classify(value)
        key: object
        if kind is Kind.STRING:
            key = normalised
        elif kind is Kind.NUMBER:
            if normalised != normalised:
                key = _NAN_KEY
            else:
                bounds = state.boundaries
                place = bisect_left(bounds, normalised)
                key = 2 * place + (place < len(bounds) and bounds[place] == normalised)
        elif kind is Kind.BOOLEAN:
            key = ("b", normalised)
        elif kind is Kind.MISSING:
            key = _MISSING_KEY
        else:
            key = _OTHER_KEY
        return self._class(state, lanes, key, normalised)


def _topic_list(topics: Any, row_count: int) -> list[str | None] | None:
    if topics is None:
        return None
    if hasattr(topics, "to_pylist"):
        topics = topics.to_pylist()
    result = list(topics)
    if len(result) != row_count:
        raise MessageError(f"got {len(result)} topics for a batch of {row_count} messages")
    for row, topic in enumerate(result):
        if topic is not None and not isinstance(topic, str):
            raise MessageError(f"row {row}: a topic must be a str, not {type(topic).__name__}")
    return result


def _reader(batch: Batch) -> tuple[int, Any, Any]:
    """``(row count, column_of(field), rows_of(row numbers))`` for any supported batch."""
    if isinstance(batch, Sequence) and not isinstance(batch, str | bytes):
        rows = batch
        for row, message in enumerate(rows):
            if not isinstance(message, Mapping):
                raise MessageError(
                    f"row {row}: message properties must be a mapping of names to values, "
                    f"not {type(message).__name__}"
                )

        def rows_column(field: str) -> list[Any]:
            return [lookup(message, field) for message in rows]

        def rows_rows(numbers: IntArray) -> list[Mapping[str, Any]]:
            return [rows[number] for number in numbers.tolist()]

        return len(rows), rows_column, rows_rows
    import pyarrow

    if isinstance(batch, pyarrow.RecordBatch):
        table = pyarrow.Table.from_batches([batch])
    elif isinstance(batch, pyarrow.Table):
        table = batch
    else:
        raise MessageError(
            "a batch is a pyarrow RecordBatch or Table, or a sequence of property mappings; "
            f"not {type(batch).__name__}"
        )
    names = table.column_names
    if len(set(names)) != len(names):
        duplicates = sorted({name for name in names if names.count(name) > 1})
        raise MessageError(f"the batch has more than one column named {', '.join(duplicates)}")

    def arrow_column(field: str) -> Any:
        return _arrow_field(table, field)

    def arrow_rows(numbers: IntArray) -> list[Mapping[str, Any]]:
        rows: list[Mapping[str, Any]] = table.take(numbers).to_pylist()
        return rows

    return table.num_rows, arrow_column, arrow_rows


def _arrow_field(table: Any, field: str) -> Any:
    """The values ``lookup`` would give for ``field`` on each row of ``table``, as one Arrow array.

    A column named exactly ``field`` wins (its nulls are values present and NULL); otherwise a
    dotted name walks struct columns, and a row where any step is null, or not a struct, or lacks
    the next name, is missing.
    """
    import pyarrow
    import pyarrow.compute

    if field in table.column_names:
        return table.column(field).combine_chunks()
    segments = field.split(".")
    if len(segments) == 1 or segments[0] not in table.column_names:
        return pyarrow.nulls(table.num_rows)
    current = table.column(segments[0]).combine_chunks()
    for segment in segments[1:]:
        kind = current.type
        if not pyarrow.types.is_struct(kind) or kind.get_field_index(segment) < 0:
            return pyarrow.nulls(table.num_rows)
        # struct_field respects the parent's nulls: a null struct has null children.
        current = pyarrow.compute.struct_field(current, [kind.get_field_index(segment)])
    return current
