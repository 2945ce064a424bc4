"""The subscription index: which of many subscriptions does a message match?

The flow (docs/architecture.md draws it): each subscription's selector is parsed, rewritten into
an OR of conjunctions (:mod:`~bitsift.index.normalize`), and each distinct conjunction gets a
column (:mod:`~bitsift.index.columns`). Every field test of a column is posted into the slot for
its field (:mod:`~bitsift.index.slots`); its topic pattern, if any, goes into the topic index.

To match a message, the index starts from the live columns the topic allows and intersects, field by
field, the columns the message's value allows (cached answers, as Python integers:
:mod:`~bitsift.index.bits`); an arithmetic expression compared with constants is a field of its own
(:mod:`~bitsift.index.derived`). A message whose values several fields have not seen is swept
instead (:mod:`~bitsift.index.sweep`), without building answers it would not reuse. What survives
satisfies every indexed test of its conjunction. Columns that also carry residual tests (comparisons
between fields, ...) are then decided by the reference evaluator, one by one; there are few of them
by then. The result (:mod:`~bitsift.index.results`) is the union of the subscribers of the surviving
columns, looked up when first read. The work per message grows with the number of fields the
subscriptions test and the width of the column sets, never with a Python loop over subscriptions.

Thread safety: one lock guards the index. ``match`` and every change take it, so a match always
sees one consistent state, and a change waits for running matches. We chose a lock over
copy-on-write snapshots because the index's bitmaps are large and mutable in place; a snapshot
per change would copy them all.
"""

from __future__ import annotations

import gc
import threading
import weakref
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from operator import itemgetter
from typing import Any

from pyroaring import BitMap, FrozenBitMap

from bitsift.errors import MessageError, UnknownSubscriptionError
from bitsift.index.bits import (
    bitmap_of,
    from_positions,
    position_array,
    positions,
    small_to_bitmap,
    to_int,
)
from bitsift.index.columns import Column, ColumnTable
from bitsift.index.criteria import FieldTest
from bitsift.index.derived import Evaluator, compile_expression, derive, explain
from bitsift.index.fields import _FALSE_KEY, _MISSING_KEY, _TRUE_KEY, AnswerCache, FieldIndex
from bitsift.index.normalize import MAX_CONJUNCTIONS, to_dnf
from bitsift.index.results import EMPTY, Matches
from bitsift.index.slots import FieldSlot
from bitsift.index.sweep import WIDE, Pending, WidePending, settle, settle_wide
from bitsift.index.topics import TopicIndex
from bitsift.models import Subscription
from bitsift.selectors.ast import Node
from bitsift.selectors.evaluate import evaluate, truth, value_of
from bitsift.selectors.values import Value, compare, lookup

__all__ = ["SubscriptionIndex"]

_STEP = 4096
"""The universe grows by at least this many columns (and by an eighth of itself) at a time."""
_GROWTH = 8
"""The universe grows by ``1 / _GROWTH`` of itself at least. Every answer is as wide as the
universe, so its slack above the highest column is read by every intersection: an eighth keeps
it under 12.5% (6% on average), at the price of emptying the answer caches once per eighth of
growth. A bulk load fits the universe to its columns instead (``_fit_universe``)."""
_UNCACHED_FIELDS = 3
"""Cache misses in one message from which it is swept (``_sweep``) rather than answered field
by field: a miss answered costs a roaring answer plus its conversion and a cache entry, worth it
for a value that comes again, while a sweep narrows by coarse masks and tests a few survivors."""
_PRUNE_AT = 1024
"""Pending result references kept before the dead ones are pruned (see ``_pending``)."""


_Step = tuple[str, FieldIndex, AnswerCache, Evaluator | None, bool]
"""One field of the match loop (see ``SubscriptionIndex._make_plan``)."""


def _universe(size: int) -> FrozenBitMap:
    """Every column number below ``size``, in bitset containers (``range`` would give run
    containers, which make every intersection with them about ten times slower)."""
    return FrozenBitMap(array("I", range(size)), optimize=False)


def _operand(
    known: dict[int, list[tuple[Node, Value]]],
    node: Node,
    hashed: int,
    properties: Mapping[str, Any],
) -> Value:
    """The value of one comparison operand, remembered in ``known`` for the rest of the message
    (keyed by the node's precomputed hash, confirmed by equality)."""
    entries = known.get(hashed)
    if entries is None:
        entries = known[hashed] = []
    else:
        for seen, value in entries:
            if seen is node or seen == node:
                return value
    value = value_of(node, properties)
    entries.append((node, value))
    return value


class SubscriptionIndex:
    """Subscriptions indexed for fast matching.

    >>> from bitsift import Subscription, SubscriptionIndex
    >>> index = SubscriptionIndex()
    >>> index.add(Subscription(id="eu-cheap", selector="region = 'eu' AND price < 50"))
    >>> index.add(Subscription(id="fx", topic="forex.#", client="desk-7"))
    >>> sorted(index.match({"region": "eu", "price": 20}, topic="forex.usd"))
    ['eu-cheap', 'fx']
    >>> sorted(index.match_clients({"region": "us"}, topic="forex"))
    ['desk-7']
    """

    def __init__(
        self,
        subscriptions: Iterable[Subscription] = (),
        *,
        topic_cache_size: int = 4096,
        cache_bytes: int | None = None,
        max_conjunctions: int = MAX_CONJUNCTIONS,
    ) -> None:
        if cache_bytes is not None and (
            not isinstance(cache_bytes, int) or isinstance(cache_bytes, bool) or cache_bytes < 0
        ):
            raise ValueError(
                "cache_bytes must be a non-negative integer (bytes of cached answers per field), "
                f"or None for the automatic budget; not {cache_bytes!r}"
            )
        self._lock = threading.RLock()
        self._topic_cache_size = topic_cache_size
        self._cache_bytes = cache_bytes
        self._max_conjunctions = max_conjunctions
        self._subscriptions: dict[str, Subscription] = {}
        self._columns_of: dict[str, tuple[Column, ...]] = {}
        self._by_client: dict[str, set[str]] = {}
        self._table = ColumnTable()
        self._live = BitMap()
        self._with_residuals = BitMap()
        self._with_topic = BitMap()
        self._topics = TopicIndex(cache_size=topic_cache_size)
        self._slots: dict[str, list[FieldSlot]] = {}
        """Each tested field's lanes (read directly by the batch matcher)."""
        self._fields: dict[str, FieldIndex] = {}
        """Each tested field's lanes again (the same lists), with boundaries and answer cache."""
        self._sole: list[str | None] = []
        """By column number: its subscriber when it has exactly one (the common case)."""
        self._names: Any = None
        """``_sole`` again as a numpy object array, for gathering a result's ids in one call;
        built at the first read of a result, then kept in step (None: rebuild)."""
        self._shared = BitMap()
        """Columns with two or more subscribers: their ids come from ``Column.subscribers``."""
        self._universe = _universe(_STEP)
        """Every column number below a bound that grows with the columns: the fields' answers are
        complements against it, so they stay exact while columns come and go below it."""
        self._start: int | None = None
        """The live columns without a topic pattern, as an integer (bits.py): where a message
        without a topic starts (None: rebuild after a change)."""
        self._topic_starts = AnswerCache()
        """Per topic, ``_start`` plus the columns whose pattern matches it (same budget as a
        field's answers)."""
        self._topic_starts.resize(len(self._universe), cache_bytes)
        self._checked: tuple[int, int] | None = None
        """``(columns with residuals, columns with several subscribers)`` as integers."""
        self._expressions: dict[str, Node] = {}
        """Each derived field's expression (:mod:`~bitsift.index.derived`), by derived name."""
        self._plan: list[_Step] | None = None
        """The fields in matching order, each with its expression if derived (None: rebuild)."""
        self._pending: list[weakref.ref[Matches]] = []
        """Weak references to results handed out since the last change, resolved before the next
        one (results.py). Not a WeakSet: that would hash the results, and a result's hash is its
        ids' (it equals a frozenset of them), which is the lookup this defers. No callbacks
        either: dead references are pruned when the list doubles, so it holds at most twice the
        results still alive and unread, plus 1,024."""
        self._prune_at = _PRUNE_AT
        # A bulk load allocates hundreds of thousands of small objects and frees almost none, so
        # the cyclic garbage collector would rescan a growing heap again and again (half of the
        # build time at 10k subscriptions). The index makes no reference cycles, so the collector
        # is paused for the load and restored after it.
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        # The loaded field tests are posted per field and lane at the end (FieldIndex.add_many:
        # each bitmap updated once), not one by one; nothing reads them before.
        self._deferred: dict[tuple[str, int], tuple[list[int], list[FieldTest]]] | None = {}
        try:
            for subscription in subscriptions:
                self.add(subscription)
            self._post_deferred()
            # Sort the loaded range bounds and build their checkpoints now, with the collector
            # still paused, rather than in the first match (ranges.py: bulk loads sort once).
            for lanes in self._slots.values():
                for lane in lanes:
                    lane.prepare()
            self._fit_universe()
        finally:
            self._deferred = None
            if collecting:
                gc.enable()

    # -- changes -------------------------------------------------------------------------------

    def add(self, subscription: Subscription) -> None:
        """Index a subscription; one with the same id is replaced."""
        if not isinstance(subscription, Subscription):
            raise TypeError(
                f"add() takes a bitsift.Subscription, not {type(subscription).__name__}"
            )
        conjunctions = []
        expressions: dict[str, Node] = {}
        for conjunction in to_dnf(subscription.parsed_selector.ast, self._max_conjunctions):
            conjunction, found = derive(conjunction)
            conjunctions.append(conjunction)
            expressions.update(found)
        topic = subscription.parsed_topic
        with self._lock:
            self._settle_pending()
            for name, expression in expressions.items():
                self._expressions.setdefault(name, expression)
            if subscription.id in self._subscriptions:
                self._remove(subscription.id)
            self._subscriptions[subscription.id] = subscription
            if subscription.client is not None:
                self._by_client.setdefault(subscription.client, set()).add(subscription.id)
            columns = []
            for conjunction in conjunctions:
                column, new = self._table.acquire((topic, conjunction))
                if new:
                    self._post(column)
                self._subscribe(column, subscription.id)
                columns.append(column)
            self._columns_of[subscription.id] = tuple(columns)  # 48 bytes, not 88

    def remove(self, subscription_id: str) -> None:
        """Remove one subscription; raises :class:`~bitsift.UnknownSubscriptionError` if absent."""
        with self._lock:
            if subscription_id not in self._subscriptions:
                raise UnknownSubscriptionError(
                    f"no subscription with id {subscription_id!r} in this index"
                )
            self._settle_pending()
            self._remove(subscription_id)

    def remove_client(self, client: str) -> int:
        """Remove every subscription of one consumer (the RFC's *cancel*); returns how many."""
        with self._lock:
            self._settle_pending()
            ids = list(self._by_client.get(client, ()))
            for subscription_id in ids:
                self._remove(subscription_id)
            return len(ids)

    def _remove(self, subscription_id: str) -> None:
        subscription = self._subscriptions.pop(subscription_id)
        if subscription.client is not None:
            owned = self._by_client[subscription.client]
            owned.discard(subscription_id)
            if not owned:
                del self._by_client[subscription.client]
        for column in self._columns_of.pop(subscription_id):
            if not self._unsubscribe(column, subscription_id):
                self._unpost(column)
                self._table.release(column)

    def _subscribe(self, column: Column, subscription_id: str) -> None:
        count = column.subscribe(subscription_id)
        sole = self._sole
        number = column.number
        if len(sole) <= number:
            sole.extend([None] * (number + 1 - len(sole)))
        if count == 1:
            sole[number] = subscription_id
        else:
            sole[number] = None
            self._shared.add(number)
            self._checked = None
        self._rename(number)

    def _unsubscribe(self, column: Column, subscription_id: str) -> int:
        """Remove one subscriber; returns how many the column has left."""
        left = column.unsubscribe(subscription_id)
        number = column.number
        sole = self._sole
        if left == 1:
            sole[number] = next(iter(column.subscriber_ids()))
            self._shared.discard(number)
            self._checked = None
        elif not left:
            sole[number] = None
            # Trim freed numbers at the end (a None there may also be a shared column: keep it).
            shared = self._shared
            while sole and sole[-1] is None and len(sole) - 1 not in shared:
                sole.pop()
        if number < len(sole):
            self._rename(number)
        return left

    def _names_of(self, numbers: Any) -> list[str | None]:
        """Each column's sole subscriber (None for a shared column), gathered by numpy."""
        names = self._names
        if names is None:
            import numpy

            sole = self._sole
            names = self._names = numpy.empty(len(sole) + len(sole) // 4 + 64, object)
            names[: len(sole)] = sole
        found: list[str | None] = names[numbers].tolist()
        return found

    def _rename(self, number: int) -> None:
        """Keep ``_names`` in step with ``_sole[number]``."""
        names = self._names
        if names is not None:
            if number < len(names):
                names[number] = self._sole[number]
            else:
                self._names = None

    def _post(self, column: Column) -> None:
        number = column.number
        if number >= len(self._universe):
            size = len(self._universe)
            self._set_universe(max(size + max(_STEP, size // _GROWTH), number + 1))
        self._live.add(number)
        self._changed()
        if column.residuals:
            self._with_residuals.add(number)
        if column.topic is not None:
            self._with_topic.add(number)
            self._topics.add(number, column.topic)
        fields = self._fields
        lanes = column.lanes  # None: every lane is 0 (the usual column, and no list to make)
        deferred = self._deferred
        for place, test in enumerate(column.tests):
            found = fields.get(test.field)
            if found is None:
                found = fields[test.field] = FieldIndex(
                    test.field, [], self._universe, self._cache_bytes
                )
                self._slots[test.field] = found.lanes
                self._plan = None
            lane = 0 if lanes is None else lanes[place]
            if deferred is None:
                found.add(lane, number, test)
            else:
                waiting = deferred.get((test.field, lane))
                if waiting is None:
                    deferred[(test.field, lane)] = ([number], [test])
                else:
                    waiting[0].append(number)
                    waiting[1].append(test)

    def _set_universe(self, size: int) -> None:
        """Take every column number below ``size`` as the universe (above every live column);
        the answer caches and the topics' starting sets start again at the new width (the
        rest of what ``_changed`` drops is derived from the live columns, not the width)."""
        self._universe = _universe(size)
        self._topic_starts.resize(size, self._cache_bytes)
        for field in self._fields.values():
            field.set_universe(self._universe)

    def _fit_universe(self) -> None:
        """After a bulk load, shrink the universe to the highest live column: the load grew it in
        steps of at least 4,096 columns, which leave slack above the last one (4,096 columns for
        1,129 at W3's 1k, 122,070 for 114,003 at 100k when the steps were a quarter), read by
        every intersection until the index grows again."""
        size = self._live.max() + 1 if self._live else _STEP
        if size < len(self._universe):
            self._set_universe(size)

    def _post_deferred(self) -> None:
        """Post the field tests a bulk load left waiting (before anything reads or removes)."""
        deferred = self._deferred
        if deferred:
            self._deferred = {}
            fields = self._fields
            for (field, lane), (numbers, tests) in deferred.items():
                fields[field].add_many(lane, numbers, tests)

    def _unpost(self, column: Column) -> None:
        if self._deferred:  # a bulk load replacing a subscription it loaded
            self._post_deferred()
        number = column.number
        self._live.discard(number)
        self._changed()
        self._with_residuals.discard(number)
        if column.topic is not None:
            self._with_topic.discard(number)
            self._topics.remove(number)
        fields = self._fields
        for lane, test in column.field_tests:
            field = fields[test.field]
            field.remove(lane, number, test)
            if not field:
                del fields[test.field], self._slots[test.field]
                self._expressions.pop(test.field, None)
                self._plan = None

    def _changed(self) -> None:
        """Drop what is derived from the live columns (rebuilt at the next match)."""
        self._start = None
        self._checked = None
        if self._topic_starts:
            self._topic_starts.clear()

    # -- questions -----------------------------------------------------------------------------

    def match(self, properties: Mapping[str, Any], topic: str | None = None) -> Matches:
        """The ids of the subscriptions the message matches, as a read-only set.

        A subscription with a topic pattern matches only a message with a topic the pattern
        matches; its selector is then evaluated on ``properties``. The ids are looked up when the
        result is first read (:class:`~bitsift.index.results.Matches`), but always as they were
        at the match.
        """
        with self._lock:
            columns = self._matching_columns(properties, topic)
            if not columns:
                return EMPTY
            result = Matches(self, columns)
            pending = self._pending
            pending.append(weakref.ref(result))
            if len(pending) >= self._prune_at:
                pending[:] = [
                    ref for ref in pending if (alive := ref()) is not None and alive._ids is None
                ]
                self._prune_at = max(_PRUNE_AT, 2 * len(pending))
            return result

    def _resolve(self, result: Matches) -> frozenset[str]:
        """The ids of a pending result (see :mod:`bitsift.index.results`)."""
        with self._lock:
            ids = result._ids
            if ids is None:
                assert result._columns is not None
                ids = self._ids(result._columns)
                result._settle(ids)
            return ids

    def _settle_pending(self) -> None:
        """Resolve every result not read yet, before a change moves the columns-to-ids tables."""
        pending = self._pending
        if pending:
            for reference in pending:
                result = reference()
                if result is not None and result._ids is None and result._columns is not None:
                    result._settle(self._ids(result._columns))
            pending.clear()
            self._prune_at = _PRUNE_AT

    def match_clients(
        self, properties: Mapping[str, Any], topic: str | None = None
    ) -> frozenset[str]:
        """Each client with at least one matching subscription, once (the RFC's unique list).

        Subscriptions without a client are not represented here; use :meth:`match` for them.
        """
        with self._lock:
            subscriptions = self._subscriptions
            return frozenset(
                client
                for subscription_id in self._ids(self._matching_columns(properties, topic))
                if (client := subscriptions[subscription_id].client) is not None
            )

    def _matching_columns(self, properties: Mapping[str, Any], topic: str | None) -> int:
        """The matching columns, under the lock, as an integer (bit ``c``: column ``c``)."""
        plain = type(properties) is dict  # dict.get cannot fail; any other mapping might
        if not plain and not isinstance(properties, Mapping):  # (an ABC check costs ~0.3 µs)
            raise MessageError(
                "message properties must be a mapping of names to values, "
                f"not {type(properties).__name__}"
            )
        # Hit counting as intersections: a column survives when every field allows it. Start
        # from the live columns without a topic pattern plus those whose pattern the topic
        # matches, then AND each field's answer for the message's value.
        candidates = self._start
        if candidates is None:
            candidates = self._start = to_int(self._live - self._with_topic)
        if topic is not None and self._with_topic:
            candidates = self._topic_start(topic, candidates)
        plan = self._plan
        if plan is None:
            plan = self._plan = self._make_plan()
        # The hot loop, inlined (``_field_value`` and ``FieldIndex._key`` as code, not calls: a
        # call per field is a tenth of the loop): for the common values (a str, None, a bool,
        # an int or float that is not NaN) the cached answer is found with one dict lookup,
        # after one bisection for a number; anything else, and every miss, is a miss.
        value: object
        key: object
        misses: list[tuple[FieldIndex, object, object]] = []
        for field, index, cache, compute, dotted in plan:
            if compute is not None:
                value = compute(properties)
            elif plain and not dotted:
                value = properties.get(field)
            else:
                value = lookup(properties, field)
            kind = type(value)
            if kind is str:
                key = value
            elif value is None:
                key = _MISSING_KEY
            elif kind is bool:
                key = _TRUE_KEY if value else _FALSE_KEY
            elif (kind is int or kind is float) and value == value:
                ordered = index._sorted
                if ordered is None:
                    key = None
                else:
                    place = bisect_right(ordered, value)
                    key = 2 * place - 1 if place and ordered[place - 1] == value else 2 * place
            else:
                key = None
            answer = None if key is None else cache.get(key)
            if answer is None:
                misses.append((index, value, key))
            else:
                candidates &= answer
        if misses:
            if len(misses) >= _UNCACHED_FIELDS:
                candidates = self._sweep(candidates, misses)
            else:
                for index, value, _key in misses:
                    candidates &= index.answer(value)
        if candidates:
            checked = self._checked
            if checked is None:
                checked = self._checked = (to_int(self._with_residuals), to_int(self._shared))
            residual = candidates & checked[0]
            if residual:
                candidates = self._check_residuals(candidates, residual, properties)
        return candidates

    def _intersected(self, properties: Mapping[str, Any], topic: str | None = None) -> list[int]:
        """The integers ``_matching_columns`` intersects for this message, in its order: where
        it starts (the topic's), then each field's answer (cached by ``FieldIndex.answer``).

        For the W3 benchmark's account of where the time goes (benchmarks/w3_selectors.py): it
        replays exactly these intersections, once as read from the caches and once from a few
        messages' answers that stay in the CPU's caches. Not a match path: it always answers
        field by field (never sweeps) and leaves residuals out.
        """
        with self._lock:
            self._matching_columns(properties, topic)  # builds the start and the plan
            assert self._start is not None and self._plan is not None
            start = self._start
            if topic is not None and self._with_topic:
                start = self._topic_start(topic, start)
            found = [start]
            for field, index, _cache, compute, _dotted in self._plan:
                found.append(
                    index.answer(compute(properties) if compute else lookup(properties, field))
                )
            return found

    def _sweep(self, candidates: int, misses: list[tuple[FieldIndex, object, object]]) -> int:
        """``candidates`` narrowed by the fields whose values missed their caches, when several
        did (the academic W2 stream: 20 fresh numbers per event): each field either builds and
        caches its answer (its misses repeat: see ``FieldIndex.remember``) or narrows the
        candidates without building one (:mod:`~bitsift.index.sweep`): by coarse integer masks
        and an exact test of the few survivors, or, in a universe of :data:`~sweep.WIDE` columns
        or more, by the range index's exact checkpoints on a roaring bitmap."""
        rest = []
        for index, value, key in misses:
            answer = index.remember(key, value)
            if answer is None:
                rest.append((index, value))
            else:
                candidates &= answer
        if not candidates:
            return 0
        if len(self._universe) >= WIDE:
            survivors = bitmap_of(candidates)
            wide: WidePending = []
            for index, value in rest:
                index.narrow_bitmap(survivors, value, wide)
                if not survivors:
                    return 0
            settle_wide(survivors, wide)
            return from_positions(survivors) if survivors else 0
        pending: Pending = []
        for index, value in rest:
            candidates = index.narrow(candidates, value, pending)
            if not candidates:
                return 0
        return settle(candidates, pending)

    def _topic_start(self, topic: str, start: int) -> int:
        """``start`` plus the columns whose topic pattern matches ``topic``, remembered."""
        found = self._topic_starts.get(topic)
        if found is None:
            found = start | to_int(self._topics.match(topic))
            if len(topic) <= 1024:  # an untrusted stream of long topics is answered, not kept
                self._topic_starts.put(topic, found)
        return found

    def _make_plan(self) -> list[_Step]:
        """The fields in matching order: each with its FieldIndex, the index's answer cache (the
        same dict for the index's lifetime), the compiled expression of a derived field, and
        whether the name has a dot (a nested lookup)."""
        plan = []
        for field, index in self._fields.items():
            expression = self._expressions.get(field)
            compute = None if expression is None else compile_expression(expression)
            plan.append((field, index, index._cache, compute, "." in field))
        return plan

    def _check_residuals(self, candidates: int, checked: int, properties: Mapping[str, Any]) -> int:
        """``candidates`` without the columns whose residual tests the reference evaluator does
        not find as wanted (``checked``: the candidates that have some)."""
        rejected = self._rejected(positions(checked), properties)
        if rejected:
            candidates &= ~from_positions(rejected)
        return candidates

    def _rejected(self, checked: Iterable[int], properties: Mapping[str, Any]) -> list[int]:
        """The columns among ``checked`` whose residual tests the reference evaluator does not
        find as wanted; each distinct residual is evaluated once per message."""
        table = self._table.by_number
        answers: dict[int, bool] = {}  # by id(): equal residuals are one object (ColumnTable)
        operands: dict[int, list[tuple[Node, Value]]] = {}  # each operand's value, by its hash
        rejected = []
        for number in checked:
            for residual in table[number].residuals:
                holds = answers.get(id(residual))
                if holds is None:
                    parts = residual.operands
                    if parts is None:
                        verdict = evaluate(residual.node, properties)
                    else:
                        # Exactly what the evaluator does for a comparison, with each operand's
                        # value computed once per message.
                        verdict = truth(
                            compare(
                                parts[0],
                                _operand(operands, parts[1], parts[2], properties),
                                _operand(operands, parts[3], parts[4], properties),
                            )
                        )
                    holds = answers[id(residual)] = verdict is residual.want
                if not holds:
                    rejected.append(number)
                    break
        return rejected

    def _ids(self, columns: int) -> frozenset[str]:
        """The subscription ids of the columns (called by ``Matches`` when first read)."""
        sole = self._sole
        checked = self._checked
        shared = to_int(self._shared) if checked is None else checked[1]
        several = columns & shared
        small = small_to_bitmap(columns)  # None past 61,440 columns: numpy then
        found: list[str | None]
        if small is None:
            found = self._names_of(position_array(columns))
        else:
            numbers = small.to_array()
            found = (
                list(itemgetter(*numbers)(sole)) if len(numbers) > 1 else [sole[n] for n in numbers]
            )
        if not several:
            return frozenset(found)  # type: ignore[arg-type]
        # Columns with two or more subscribers have None in ``names``: add their subscribers.
        ids = set(found)
        ids.discard(None)
        table = self._table.by_number
        for number in positions(several):
            ids.update(table[number].subscriber_ids())
        return frozenset(ids)  # type: ignore[arg-type]

    def explain(self, subscription_id: str) -> str:
        """How the index sees one subscription's selector: a line per conjunction."""
        with self._lock:
            if subscription_id not in self._subscriptions:
                raise UnknownSubscriptionError(f"no subscription with id {subscription_id!r}")
            node = self._subscriptions[subscription_id].parsed_selector.ast
        return explain(node, self._max_conjunctions)

    def __len__(self) -> int:
        return len(self._subscriptions)

    def __contains__(self, subscription_id: object) -> bool:
        return subscription_id in self._subscriptions

    def __iter__(self) -> Iterator[Subscription]:
        with self._lock:
            return iter(list(self._subscriptions.values()))

    def get(self, subscription_id: str) -> Subscription | None:
        return self._subscriptions.get(subscription_id)

    @property
    def column_count(self) -> int:
        """Distinct conjunctions indexed (shared between identical subscriptions)."""
        return len(self._table)

    # -- persistence ---------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {
                "subscriptions": [
                    subscription.model_dump() for subscription in self._subscriptions.values()
                ],
                "topic_cache_size": self._topic_cache_size,
                "cache_bytes": self._cache_bytes,
                "max_conjunctions": self._max_conjunctions,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Rebuilt from validated subscriptions rather than from raw bitmaps: a pickle can then
        # never smuggle in an index the parser would have refused.
        self.__init__(  # type: ignore[misc]
            (Subscription.model_validate(entry) for entry in state["subscriptions"]),
            topic_cache_size=state["topic_cache_size"],
            cache_bytes=state.get("cache_bytes"),
            max_conjunctions=state["max_conjunctions"],
        )

    def save(self, path: str) -> None:
        """Write the index to ``path`` atomically (see :mod:`bitsift.index.storage`)."""
        from bitsift.index.storage import save_index

        save_index(self, path)

    @classmethod
    def load(cls, path: str) -> SubscriptionIndex:
        """Read an index written by :meth:`save`; raises :class:`~bitsift.IndexFileError`."""
        from bitsift.index.storage import load_index

        return load_index(path)
