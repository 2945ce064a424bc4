"""The topic index: which of many AMQP and MQTT patterns match a topic, at a cost per topic.

A broker routes every message on its topic first, against every subscription's pattern. Testing
each pattern in turn costs time in proportion to the number of subscriptions; this index answers
with a few dictionary lookups and bitmap ANDs instead (the inverted-bitmap technique of the
seeds), however many patterns it holds. Its answers equal a loop of
:meth:`TopicPattern.matches <bitsift.TopicPattern.matches>` over the same patterns, which the tests
check with hypothesis.

Each syntax has its own structures, because a topic means different words in each (``a.b/c`` is
two AMQP words and two MQTT levels, not the same two):

* patterns without wildcards: a dict from topic to columns (WSO2's point: the common case is one
  hash lookup);
* patterns of words and single-word wildcards, perhaps ending in ``#`` (every MQTT filter and most
  AMQP patterns): per-position bitmap tables (:mod:`~bitsift.index.topic_tables`);
* AMQP patterns with a ``#`` before a literal word: a word trie
  (:mod:`~bitsift.index.topic_trie`), because such a word has no fixed position for the tables.

``match`` never raises for a topic that one syntax rejects: a string that is not a valid topic in
a syntax (an MQTT name with ``+``, an empty MQTT name, an AMQP key over 255 bytes) just matches
none of that syntax's patterns. One message goes to subscribers of both kinds, and a key such as
``stock.#`` that is fine for AMQP must not stop AMQP routing because MQTT would refuse it; the
answer also never depends on which other patterns happen to be indexed. Callers that want to
reject bad topics call :func:`bitsift.selectors.topics.check_topic_name` first.

A bounded cache maps recent topics to their results (OpenAMQ and NATS keep one too), so a
repeated topic costs one dictionary lookup. It evicts first in, first out: a hit then does no
bookkeeping at all (an LRU's move-to-end costs a third of a hit), and a hot topic that falls out
is recomputed once and cached again. Topics over 1,024 characters are never cached, so the cache
holds at most ``cache_size`` x 1 KiB of keys plus their results, whatever the stream. Adding or
removing a literal pattern evicts just its topic; any other change empties the cache. Results are
:class:`pyroaring.FrozenBitMap`, shared with the cache, so callers cannot change them by accident.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyroaring import BitMap, FrozenBitMap

from bitsift.errors import UnknownSubscriptionError
from bitsift.index.topic_tables import BITSET_BUDGET, PositionTables, normal_form, positional_form
from bitsift.index.topic_trie import PatternTrie
from bitsift.selectors.topics import (
    AMQP_MAX_BYTES,
    MQTT_MAX_BYTES,
    TopicPattern,
    TopicSyntax,
    is_topic_name,
)

__all__ = ["TopicIndex"]

_EMPTY = FrozenBitMap()
_LARGEST_CACHED_TOPIC = 1024
"""Longer topics are matched but not cached, so the cache's memory stays bounded."""
_MAX_COLUMN = 2**32 - 1


class _Side:
    """Everything indexed for one syntax."""

    __slots__ = ("exact", "tables", "trie", "in_trie", "count")

    def __init__(self, bitset_budget: int) -> None:
        self.exact: dict[str, BitMap] = {}
        self.tables = PositionTables(bitset_budget)
        self.trie = PatternTrie()
        self.in_trie = 0
        """How many patterns the trie holds (a plain int: no ``__len__`` call per topic)."""
        self.count = 0

    def add(self, column: int, pattern: TopicPattern) -> None:
        if pattern.is_literal:
            self.exact.setdefault(pattern.filter, BitMap()).add(column)
        else:
            form = positional_form(pattern.tokens)
            if form is None:
                self.trie.add(column, normal_form(pattern.tokens))
                self.in_trie += 1
            else:
                self.tables.add(column, *form)
        self.count += 1

    def remove(self, column: int, pattern: TopicPattern) -> None:
        if pattern.is_literal:
            columns = self.exact[pattern.filter]
            columns.discard(column)
            if not columns:
                del self.exact[pattern.filter]
        else:
            form = positional_form(pattern.tokens)
            if form is None:
                self.trie.remove(column, normal_form(pattern.tokens))
                self.in_trie -= 1
            else:
                self.tables.remove(column, *form)
        self.count -= 1


def _with_exact(result: BitMap | FrozenBitMap | None, hit: BitMap) -> BitMap | FrozenBitMap:
    """``result`` plus the columns of a literal pattern equal to the topic."""
    if result is None:
        return FrozenBitMap(hit, optimize=False)
    if isinstance(result, FrozenBitMap):
        result = BitMap(result, optimize=False)
    result |= hit
    return result


class _AmqpSide(_Side):
    __slots__ = ()

    def match(self, topic: str) -> BitMap | FrozenBitMap | None:
        """The matching AMQP columns (a new bitmap), or ``None``."""
        if len(topic) > AMQP_MAX_BYTES or not topic.isascii():
            if not is_topic_name(topic, "amqp"):
                return None
        words = topic.split(".") if topic else []
        result = self.tables.match(words)
        if self.in_trie:
            more = self.trie.match(words)
            if more is not None:
                if result is None:
                    result = more
                else:
                    if isinstance(result, FrozenBitMap):
                        result = BitMap(result, optimize=False)
                    result |= more
        hit = self.exact.get(topic)
        return result if hit is None else _with_exact(result, hit)


class _MqttSide(_Side):
    __slots__ = ()

    def match(self, topic: str) -> BitMap | FrozenBitMap | None:
        """The matching MQTT columns (a new bitmap), or ``None``."""
        if not topic or "+" in topic or "#" in topic or "\x00" in topic:
            return None
        if not topic.isascii() or len(topic) > MQTT_MAX_BYTES:
            if not is_topic_name(topic, "mqtt"):
                return None
        result = self.tables.match(topic.split("/"))
        if result is not None and topic[0] == "$":
            # MQTT 4.7.2: a filter starting with a wildcard never matches a '$' topic.
            result = result - self.tables.leading_wildcard
            if not result:
                result = None
        hit = self.exact.get(topic)
        return result if hit is None else _with_exact(result, hit)


def _union(parts: Iterable[BitMap | FrozenBitMap | None]) -> FrozenBitMap:
    """The union of the parts that are not ``None``, as a new frozen bitmap (or the empty one)."""
    found = [part for part in parts if part is not None]
    if not found:
        return _EMPTY
    if len(found) == 1:
        (only,) = found
        return only if isinstance(only, FrozenBitMap) else FrozenBitMap(only, optimize=False)
    return FrozenBitMap(found[0].union(*found[1:]), optimize=False)


class TopicIndex:
    """AMQP and MQTT topic patterns under column numbers; ``match`` finds the columns for a topic.

    The caller chooses the column numbers (the subscription index reuses freed ones). A column
    holds one pattern; adding to a taken column replaces its pattern. ``cache_size`` bounds the
    result cache (0 turns it off). ``bitset_budget`` is how many bytes per syntax the tables may
    spend on uncompressed bitsets beside the compressed rows (0 never keeps them; see
    :mod:`~bitsift.index.topic_tables`): within it matching is faster, past it memory stays
    proportional to the patterns.

    >>> from bitsift.selectors.topics import TopicPattern
    >>> index = TopicIndex()
    >>> index.add(0, TopicPattern("forex.*"))
    >>> index.add(1, TopicPattern("forex.#"))
    >>> index.add(2, TopicPattern("sport/+/player1", syntax="mqtt"))
    >>> list(index.match("forex")), list(index.match("forex.usd"))
    ([1], [0, 1])
    >>> list(index.match("sport/tennis/player1"))
    [2]
    >>> index.remove(1)
    TopicPattern('forex.#', syntax='amqp')
    >>> list(index.match("forex"))
    []
    """

    __slots__ = ("_patterns", "_amqp", "_mqtt", "_sides", "_cache", "_cache_size", "_bitset_budget")

    def __init__(self, cache_size: int = 4096, *, bitset_budget: int = BITSET_BUDGET) -> None:
        for name, value in (("cache_size", cache_size), ("bitset_budget", bitset_budget)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
        self._patterns: dict[int, TopicPattern] = {}
        self._bitset_budget = bitset_budget
        self._amqp = _AmqpSide(bitset_budget)
        self._mqtt = _MqttSide(bitset_budget)
        self._sides: tuple[_AmqpSide | _MqttSide, ...] = ()
        """The sides holding at least one pattern: the others cost nothing per topic."""
        self._cache_size = cache_size
        self._cache: dict[str, FrozenBitMap] | None = {} if cache_size else None

    def __len__(self) -> int:
        return len(self._patterns)

    def __contains__(self, column: object) -> bool:
        return column in self._patterns

    def get(self, column: int) -> TopicPattern | None:
        """The pattern held by ``column``, or ``None``."""
        return self._patterns.get(column)

    @property
    def cache_size(self) -> int:
        """The most results the cache keeps; 0 when it is off."""
        return self._cache_size

    @property
    def cached(self) -> int:
        """How many topic results the cache holds now."""
        return len(self._cache) if self._cache is not None else 0

    def clear_cache(self) -> None:
        if self._cache is not None:
            self._cache.clear()

    def add(self, column: int, pattern: TopicPattern) -> None:
        """Index ``pattern`` under ``column``, replacing whatever the column held."""
        if not isinstance(column, int) or isinstance(column, bool):
            raise TypeError(f"a column must be an int, not {type(column).__name__}")
        if not 0 <= column <= _MAX_COLUMN:
            raise ValueError(f"a column must be between 0 and {_MAX_COLUMN}, not {column}")
        if not isinstance(pattern, TopicPattern):
            raise TypeError(f"expected a TopicPattern, not {type(pattern).__name__}")
        if column in self._patterns:
            self.remove(column)
        self._side(pattern.syntax).add(column, pattern)
        self._patterns[column] = pattern
        self._changed(pattern)

    def remove(self, column: int) -> TopicPattern:
        """Remove and return the pattern held by ``column``."""
        pattern = self._patterns.pop(column, None)
        if pattern is None:
            raise UnknownSubscriptionError(f"topic index column {column!r} holds no pattern")
        self._side(pattern.syntax).remove(column, pattern)
        self._changed(pattern)
        return pattern

    def match(self, topic: str) -> FrozenBitMap:
        """The columns whose patterns match ``topic``, each under its own syntax's rules."""
        cache = self._cache
        if cache is not None:
            try:
                cached = cache.get(topic)
            except TypeError:  # unhashable: reported just below
                cached = None
            if cached is not None:
                return cached
        if not isinstance(topic, str):
            raise TypeError(f"a topic must be a str, not {type(topic).__name__}")
        sides = self._sides
        if len(sides) == 1:  # the usual case, kept free of the union's steps
            part = sides[0].match(topic)
            if part is None:
                result = _EMPTY
            elif isinstance(part, FrozenBitMap):
                result = part
            else:
                result = FrozenBitMap(part, optimize=False)
        else:
            result = _union(side.match(topic) for side in sides)
        if cache is not None and len(topic) <= _LARGEST_CACHED_TOPIC:
            cache[topic] = result
            if len(cache) > self._cache_size:
                del cache[next(iter(cache))]  # the oldest entry
        return result

    def _side(self, syntax: TopicSyntax) -> _AmqpSide | _MqttSide:
        return self._amqp if syntax == "amqp" else self._mqtt

    def _changed(self, pattern: TopicPattern) -> None:
        self._sides = tuple(side for side in (self._amqp, self._mqtt) if side.count)
        if self._cache is not None:
            if pattern.is_literal:
                self._cache.pop(pattern.filter, None)  # only that one topic's result changed
            else:
                self._cache.clear()

    def __reduce__(self) -> tuple[object, ...]:
        state = (self._cache_size, self._bitset_budget, list(self._patterns.items()))
        return (_rebuild, state)


def _rebuild(
    cache_size: int, bitset_budget: int, patterns: list[tuple[int, TopicPattern]]
) -> TopicIndex:
    index = TopicIndex(cache_size, bitset_budget=bitset_budget)
    for column, pattern in patterns:
        index.add(column, pattern)
    return index
