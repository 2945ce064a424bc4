"""The receiver filter: does ANY local subscription want this message? Answered early.

On a multicast or broadcast feed every receiver gets every message and drops the ones no local
subscription wants (the Malamute paper's subscriber-side matching). That question is smaller than
matching: the index (:class:`bitsift.SubscriptionIndex`) computes the whole set of matching
subscriptions, the filter stops at the first one. The seeds' filtering section says how to make
that pay, and this module does all three things it suggests:

1. **Subsumption** (:mod:`~bitsift.filters.subsumption`): each selector is rewritten into its
   conjunctions (:func:`bitsift.index.normalize.to_dnf`, exact in three-valued logic); identical
   conjunctions are kept once and a conjunction another one provably covers is dropped.
2. **Ordering** (:mod:`~bitsift.filters.ordering`): the conjunctions most likely to match go first,
   by the seeds' heuristic at first and by observed hit rates once messages flow.
3. **Left-to-right blocks with early exit** (:mod:`~bitsift.filters.plan`): the columns are cut into
   blocks (64, then 1,024 columns) of int bitmaps; a block stops at its first complete hit.

Topic-only subscriptions (a pattern and no selector) are answered first by one topic-table walk
with a result cache (:class:`bitsift.index.TopicIndex`), so a filter made only of topic patterns
costs one cache lookup per repeated topic.

None of this changes an answer: the filter accepts a message exactly when some subscription
matches it by the reference (:meth:`bitsift.Subscription.matches`: selector TRUE and, if the
subscription has a pattern, a topic the pattern matches; a topic that is not valid in the
pattern's syntax matches nothing). The tests check that with hypothesis, through re-rankings.

A filter is not thread-safe (its counters, caches and ranking change as it runs): give each
receiving thread its own.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from bitsift.errors import MessageError
from bitsift.filters.ordering import HitRates, guess_hit_rates
from bitsift.filters.plan import BLOCK, FIRST_BLOCK, Plan
from bitsift.filters.subsumption import Column, drop_covered
from bitsift.filters.wire import Message
from bitsift.index.criteria import Residual
from bitsift.index.normalize import MAX_CONJUNCTIONS, Conjunction, to_dnf
from bitsift.index.topics import TopicIndex
from bitsift.selectors.ast import FloatLiteral
from bitsift.selectors.selector import Selector
from bitsift.selectors.topics import TopicPattern, Wildcard

__all__ = ["ReceiverFilter", "FilterCounters", "SubscriptionLike"]

log = logging.getLogger("bitsift.filters")

_REFINE_CEILING = 65_536
"""The longest interval, in messages, between two re-rankings."""

T = TypeVar("T")


class SubscriptionLike(Protocol):
    """What the filter reads from a subscription (:class:`bitsift.Subscription` has it all)."""

    @property
    def id(self) -> str: ...

    @property
    def parsed_selector(self) -> Selector: ...

    @property
    def parsed_topic(self) -> TopicPattern | None: ...


@dataclass(frozen=True, slots=True)
class FilterCounters:
    """How many messages a filter has seen, and what became of them.

    ``seen == accepted + dropped + malformed`` always holds.
    """

    seen: int
    accepted: int
    dropped: int
    malformed: int

    def __str__(self) -> str:
        return (
            f"seen {self.seen:,}, accepted {self.accepted:,}, dropped {self.dropped:,}, "
            f"malformed {self.malformed:,}"
        )


def _conjunctions(selector: Selector, max_conjunctions: int) -> list[Conjunction]:
    """The selector as conjunctions (``to_dnf``), or as one residual when that would be lossy.

    Syntax trees compare ``0.0`` and ``-0.0`` literals as equal (``0.0 == -0.0``), so ``to_dnf``
    may merge ``a / 0.0 > 1`` with ``a / -0.0 > 1``, whose answers differ (+inf and -inf). A
    selector with a ``-0.0`` literal is therefore left whole to the reference evaluator."""
    ast = selector.ast
    if ast is not None and _has_negative_zero(ast):
        return [(Residual(ast, True),)]
    return to_dnf(ast, max_conjunctions)


def _has_negative_zero(node: object) -> bool:
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, FloatLiteral):
            if item.value == 0 and math.copysign(1.0, item.value) < 0:
                return True
        elif isinstance(item, tuple):
            pending.extend(item)
        elif dataclasses.is_dataclass(item):
            pending.extend(getattr(item, field.name) for field in dataclasses.fields(item))
    return False


def _column_key(topic: TopicPattern | None, conjunction: Conjunction) -> tuple[object, ...]:
    # Residuals are compared by canonical text too: ``a / 0.0`` and ``a / -0.0`` are equal trees
    # (0.0 == -0.0) with different answers, and must not share a column.
    texts = tuple(str(atom.node) for atom in conjunction if isinstance(atom, Residual))
    return (topic, conjunction, texts)


class ReceiverFilter:
    """Accepts a message when at least one of the given subscriptions matches it.

    ``subsume`` (default on) drops conjunctions another one covers; ``refine`` (default on)
    re-ranks the conjunctions from observed hits, first after ``refine_after`` messages and then at
    doubling intervals (at most every 65,536). Neither changes any answer.

    >>> from bitsift import Subscription
    >>> receiver = ReceiverFilter([
    ...     Subscription(id="cheap", selector="price < 10"),
    ...     Subscription(id="cheaper", selector="price < 5 AND region = 'eu'"),
    ...     Subscription(id="fx", topic="forex.*"),
    ... ])
    >>> receiver.accepts({"price": 7}), receiver.accepts({"price": 70})
    (True, False)
    >>> receiver.accepts({"price": 70}, topic="forex.eur")
    True
    >>> [message["price"] for message in receiver.filter([{"price": 1}, {"price": 99}])]
    [1]
    >>> print(receiver.counters)
    seen 5, accepted 3, dropped 2, malformed 0
    >>> receiver.subsumed  # 'price < 5 AND ...' is covered by 'price < 10'
    1
    """

    def __init__(
        self,
        subscriptions: Iterable[SubscriptionLike],
        *,
        subsume: bool = True,
        refine: bool = True,
        refine_after: int = 1024,
        max_conjunctions: int = MAX_CONJUNCTIONS,
        first_block: int = FIRST_BLOCK,
        block: int = BLOCK,
        topic_cache_size: int = 4096,
    ) -> None:
        if refine_after < 1:
            raise ValueError(f"refine_after must be at least 1, not {refine_after!r}")
        if first_block < 1 or block < 1:
            raise ValueError("block sizes must be at least 1")
        self._first_block = first_block
        self._block = block
        self._topic_cache_size = topic_cache_size
        self._refine = refine
        self._refine_interval = refine_after
        self._next_refine = refine_after
        self._seen = self._accepted = self._dropped = self._malformed = 0
        self._last_refine_seen = 0
        self.malformed_reasons: Counter[str] = Counter()
        """Malformed messages per reason (``bad JSON``, ``oversize``, ...)."""

        unique: dict[tuple[object, ...], Column] = {}
        self.subscription_count = 0
        for subscription in subscriptions:
            self.subscription_count += 1
            topic = subscription.parsed_topic
            for conjunction in _conjunctions(subscription.parsed_selector, max_conjunctions):
                unique.setdefault(_column_key(topic, conjunction), (topic, conjunction))
        columns = list(unique.values())
        kept = drop_covered(columns) if subsume else list(range(len(columns)))
        self.subsumed = len(columns) - len(kept)
        """Conjunctions dropped because another one covers them."""
        self._accept_all = False
        topic_only: list[TopicPattern] = []
        rest: list[Column] = []
        for position in kept:
            topic, conjunction = columns[position]
            if conjunction:
                rest.append((topic, conjunction))
            elif topic is None:
                self._accept_all = True  # no selector condition and no topic: every message
            else:
                topic_only.append(topic)
        self._topic_only: TopicIndex | None = None
        if topic_only and not self._accept_all:
            self._topic_only = TopicIndex(cache_size=topic_cache_size)
            for number, pattern in enumerate(topic_only):
                self._topic_only.add(number, pattern)
        self._topic_only_patterns = tuple(topic_only)
        self._columns: list[Column] = [] if self._accept_all else rest
        self._rates = HitRates(guess_hit_rates(self._columns))
        self._plan = Plan(self._columns)
        initial = sorted(
            range(len(self._columns)), key=lambda position: -self._rates.guesses[position]
        )
        self._install(initial)

    # -- the plan -----------------------------------------------------------------------------

    def _install(self, order: list[int]) -> None:
        """Cut the blocks for the columns in ``order`` (most likely first)."""
        self._order = order
        self._plan.arrange(order, self._rates.scores, self._first_block, self._block)

    def _refine_ranking(self) -> None:
        rates = self._rates
        rates.trials += self._seen - self._last_refine_seen
        self._last_refine_seen = self._seen
        self._refine_interval = min(self._refine_interval * 2, _REFINE_CEILING)
        self._next_refine = self._seen + self._refine_interval
        order = rates.ranking(self._order)
        self._plan.fuse()  # the stages have seen traffic by now
        self._install(order)

    # -- questions ----------------------------------------------------------------------------

    def accepts(self, properties: Mapping[str, Any], topic: str | None = None) -> bool:
        """Whether at least one subscription matches the message; counts it as seen."""
        if not isinstance(properties, Mapping):
            raise MessageError(
                "message properties must be a mapping of names to values, "
                f"not {type(properties).__name__}"
            )
        if topic is not None and not isinstance(topic, str):
            raise MessageError(f"a message topic must be a str or None, not {type(topic).__name__}")
        self._seen += 1
        if self._wanted(properties, topic):
            self._accepted += 1
            accepted = True
        else:
            self._dropped += 1
            accepted = False
        if self._refine and self._seen >= self._next_refine:
            self._refine_ranking()
        return accepted

    def _wanted(self, properties: Mapping[str, Any], topic: str | None) -> bool:
        if self._accept_all:
            return True
        if topic is not None and self._topic_only is not None and self._topic_only.match(topic):
            return True
        if self._columns:
            column = self._plan.first_hit(properties, topic)
            if column >= 0:
                self._rates.hits[column] += 1
                return True
        return False

    def filter(self, messages: Iterable[T]) -> Iterator[T]:
        """Yield the messages some subscription wants, unchanged and in order.

        Each item is a :class:`~bitsift.filters.wire.Message`, a ``(properties, topic)`` pair, or
        a mapping of properties (no topic). Anything else is counted as malformed and skipped.
        """
        for item in messages:
            if isinstance(item, Message):
                properties, topic = item.properties, item.topic
            elif isinstance(item, Mapping):
                properties, topic = item, None
            elif isinstance(item, tuple) and len(item) == 2:
                properties, topic = item
            else:
                self.record_malformed("wrong shape", f"cannot filter a {type(item).__name__}")
                continue
            if not isinstance(properties, Mapping) or not (topic is None or isinstance(topic, str)):
                self.record_malformed(
                    "wrong shape", "expected (properties mapping, topic str or None)"
                )
                continue
            if self.accepts(properties, topic):
                yield item

    def record_malformed(self, reason: str, detail: str = "") -> None:
        """Count a message that could not be decoded, and log why (rate-limited)."""
        self._seen += 1
        self._malformed += 1
        self.malformed_reasons[reason] += 1
        count = self.malformed_reasons[reason]
        # The first ten of each reason, then one at every power of ten: a flood stays readable.
        if count <= 10 or _is_power_of_ten(count):
            log.warning("dropped a malformed message (%s, %d so far): %s", reason, count, detail)

    # -- what the filter holds ----------------------------------------------------------------

    @property
    def counters(self) -> FilterCounters:
        return FilterCounters(self._seen, self._accepted, self._dropped, self._malformed)

    @property
    def seen(self) -> int:
        return self._seen

    @property
    def accepted(self) -> int:
        return self._accepted

    @property
    def dropped(self) -> int:
        return self._dropped

    @property
    def malformed(self) -> int:
        return self._malformed

    @property
    def column_count(self) -> int:
        """Conjunctions the filter evaluates (after subsumption, topic-only ones included)."""
        return len(self._columns) + len(self._topic_only_patterns) + int(self._accept_all)

    @property
    def accepts_everything(self) -> bool:
        return self._accept_all

    def ranking(self) -> list[Column]:
        """The evaluated conjunctions (topic-only ones aside), in the order they are tried."""
        return [self._columns[position] for position in self._order]

    def topic_prefixes(self) -> list[str] | None:
        """Topic prefixes every wanted message starts with (for ZeroMQ's byte-prefix
        subscriptions), or None when some wanted message may have any topic or none.

        >>> from bitsift import Subscription
        >>> ReceiverFilter([Subscription(id="a", topic="forex.*"),
        ...                 Subscription(id="b", topic="forex.eur.#", selector="x > 1"),
        ...                 Subscription(id="c", topic="bonds")]).topic_prefixes()
        ['bonds', 'forex.']
        """
        if self._accept_all or any(topic is None for topic, _ in self._columns):
            return None
        prefixes = set()
        for topic in [*self._topic_only_patterns, *(topic for topic, _ in self._columns)]:
            assert topic is not None
            prefix = _topic_prefix(topic)
            if not prefix:
                return None
            prefixes.add(prefix)
        shortest: list[str] = []
        for prefix in sorted(prefixes):
            if not any(prefix.startswith(other) for other in shortest):
                shortest.append(prefix)
        return shortest

    def __repr__(self) -> str:
        return (
            f"<ReceiverFilter of {self.subscription_count} subscriptions: "
            f"{self.column_count} conjunctions ({len(self._topic_only_patterns)} topic-only, "
            f"{self.subsumed} subsumed), {len(self._plan.blocks)} blocks; {self.counters}>"
        )


def _topic_prefix(pattern: TopicPattern) -> str:
    """The text every topic the pattern matches starts with ('' when it may start anyhow)."""
    separator = "." if pattern.syntax == "amqp" else "/"
    words: list[str] = []
    following: object = None
    for token in pattern.tokens:
        if isinstance(token, Wildcard):
            following = token
            break
        words.append(token)
    if not words:
        return ""
    prefix = separator.join(words)
    if following is Wildcard.ONE:
        prefix += separator  # exactly one more word follows, after a separator
    return prefix


def _is_power_of_ten(number: int) -> bool:
    while number % 10 == 0:
        number //= 10
    return number == 1


def reference_accepts(
    subscriptions: Sequence[SubscriptionLike], properties: Mapping[str, Any], topic: str | None
) -> bool:
    """The reference answer the filter must always give: some subscription matches.

    A subscription matches when its selector is TRUE and, if it has a topic pattern, the message
    has a topic that the pattern matches (a topic invalid in the pattern's syntax matches nothing).
    """
    from bitsift.errors import TopicNameError

    for subscription in subscriptions:
        pattern = subscription.parsed_topic
        if pattern is not None:
            if topic is None:
                continue
            try:
                if not pattern.matches(topic):
                    continue
            except TopicNameError:
                continue
        if subscription.parsed_selector.matches(properties):
            return True
    return False
