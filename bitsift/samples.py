"""The W3 workload of shared/BENCHMARKS.md: realistic market-data messages and JMS subscriptions.

Benchmarks (W3, W5, W6), the Spark demo and the tests all need the same data, and numbers measured
on different machines are only comparable when the data is identical. So everything here is a
pure function of ``(count, seed)``: the random streams come from ``numpy.random.RandomState``
(whose streams numpy has frozen forever) and ``random.Random`` (Mersenne Twister, stable across
platforms), never from the global generators, never from the clock, and never from hash order.

Messages carry ``symbol`` (5,000 tickers, Zipf-distributed, so a few are very hot), ``exchange``
(10 values), ``side`` (``buy``/``sell``), ``price`` (a float with two decimals in [0, 1000)),
``qty`` (an int in [1, 10000]), ``urgent`` (a bool, absent from half of the messages) and
``region`` (20 values). Their topic is ``<exchange>.<region>.<symbol>``.

Subscriptions mix equality, ``IN``, ``BETWEEN``, ``<``/``>``, ``LIKE 'prefix%'``, ``IS [NOT]
NULL``, ``NOT``, an ``OR`` of two conjunctions and an optional AMQP topic pattern; 5% carry a term
no index can serve (``price * qty > 100000``). Each one matches a small fraction of messages (about
0.1% to 2% on average), as real subscriptions do.

>>> topic, properties = next(w3_messages(1, seed=7))
>>> topic == f"{properties['exchange']}.{properties['region']}.{properties['symbol']}"
True
>>> [subscription.id for subscription in w3_subscriptions(2, seed=7)]
['w3-000000', 'w3-000001']
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy

if TYPE_CHECKING:
    from bitsift.models import Subscription

__all__ = [
    "EXCHANGES",
    "REGIONS",
    "SIDES",
    "SYMBOL_COUNT",
    "symbols",
    "w3_arrow_schema",
    "w3_messages",
    "w3_records",
    "w3_subscriptions",
    "w3_selector_texts",
    "write_w3_messages",
    "write_w3_subscriptions",
]

SYMBOL_COUNT = 5_000
ZIPF_EXPONENT = 1.1
EXCHANGES = ("nyse", "nasdaq", "lse", "tse", "hkex", "sse", "euronext", "tsx", "asx", "bse")
REGIONS = (
    "us", "ca", "mx", "br", "ar", "gb", "fr", "de", "it", "es",
    "nl", "ch", "se", "jp", "cn", "hk", "sg", "in", "au", "za",
)  # fmt: skip
SIDES = ("buy", "sell")
_CHUNK = 65_536
"""Messages are drawn in fixed chunks, so the first N messages of a seed never depend on how many
are asked for."""
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_TERM_FIELDS = (
    "symbol", "symbol", "exchange", "exchange", "side", "price", "price",
    "qty", "region", "symbol", "urgent", "urgent", "region", "exchange",
)  # fmt: skip
"""The field each kind of term of :meth:`_SelectorMaker.term` tests."""


def symbols() -> tuple[str, ...]:
    """The 5,000 ticker symbols, most popular first: four capital letters each, all distinct.

    >>> symbols()[:3], len(set(symbols()))
    (('VGSA', 'KZDB', 'ZRPB'), 5000)
    """
    result = []
    for rank in range(SYMBOL_COUNT):
        # 7919 is coprime with 26**4, so this walks distinct codes in a scrambled order.
        code = (rank * 7919 + 12_345) % 26**4
        letters = []
        for _ in range(4):
            code, letter = divmod(code, 26)
            letters.append(_LETTERS[letter])
        result.append("".join(letters))
    return tuple(result)


def _zipf_cumulative() -> numpy.ndarray[Any, numpy.dtype[numpy.float64]]:
    weights = 1.0 / numpy.arange(1, SYMBOL_COUNT + 1, dtype=numpy.float64) ** ZIPF_EXPONENT
    cumulative = numpy.cumsum(weights)
    result: numpy.ndarray[Any, numpy.dtype[numpy.float64]] = cumulative / cumulative[-1]
    return result


def _message_chunk(state: numpy.random.RandomState) -> dict[str, list[Any]]:
    """One chunk of message columns, as Python values (numpy scalars would leak into dicts)."""
    size = _CHUNK
    symbol_table = numpy.array(symbols(), dtype=object)
    ranks = numpy.searchsorted(_zipf_cumulative(), state.random_sample(size), side="right")
    ranks = numpy.minimum(ranks, SYMBOL_COUNT - 1)
    exchange = state.randint(0, len(EXCHANGES), size)
    region = state.randint(0, len(REGIONS), size)
    side = state.randint(0, 2, size)
    cents = state.randint(0, 100_000, size)
    qty = state.randint(1, 10_001, size)
    urgent = state.randint(0, 4, size)  # 0, 1: absent; 2: False; 3: True
    return {
        "symbol": symbol_table[ranks].tolist(),
        "exchange": [EXCHANGES[i] for i in exchange.tolist()],
        "region": [REGIONS[i] for i in region.tolist()],
        "side": [SIDES[i] for i in side.tolist()],
        "price": (cents / 100.0).tolist(),
        "qty": qty.tolist(),
        "urgent": urgent.tolist(),
    }


def w3_messages(count: int, seed: int = 0) -> Iterator[tuple[str, dict[str, Any]]]:
    """``count`` W3 messages as ``(topic, properties)`` pairs, the same for the same seed.

    ``urgent`` is absent (not ``None``) from about half of the messages.

    >>> [sorted(properties) for _, properties in w3_messages(1, seed=1)]
    [['exchange', 'price', 'qty', 'region', 'side', 'symbol']]
    """
    if count < 0:
        raise ValueError(f"count must be 0 or more, not {count}")
    state = numpy.random.RandomState(seed)
    produced = 0
    while produced < count:
        chunk = _message_chunk(state)
        for index in range(min(_CHUNK, count - produced)):
            properties: dict[str, Any] = {
                "symbol": chunk["symbol"][index],
                "exchange": chunk["exchange"][index],
                "side": chunk["side"][index],
                "price": chunk["price"][index],
                "qty": chunk["qty"][index],
                "region": chunk["region"][index],
            }
            urgent = chunk["urgent"][index]
            if urgent >= 2:
                properties["urgent"] = urgent == 3
            topic = f"{properties['exchange']}.{properties['region']}.{properties['symbol']}"
            yield topic, properties
        produced += _CHUNK


def w3_records(count: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """W3 messages as flat records: ``id`` (``m0000000``...), ``topic``, then the properties.

    This is the row layout of the Spark pipeline's input (one column per property).

    >>> sorted(next(w3_records(1)))[:3]
    ['exchange', 'id', 'price']
    """
    for number, (topic, properties) in enumerate(w3_messages(count, seed)):
        yield {"id": f"m{number:07d}", "topic": topic, **properties}


def w3_arrow_schema(*, with_id_and_topic: bool = True) -> Any:
    """The Arrow schema of :func:`w3_records` (or of the properties alone), for tables and
    Parquet files of W3 data. Imports pyarrow, which only the ``spark`` extra installs.

    >>> w3_arrow_schema(with_id_and_topic=False).names
    ['symbol', 'exchange', 'side', 'price', 'qty', 'region', 'urgent']
    """
    import pyarrow

    fields = [
        ("symbol", pyarrow.string()),
        ("exchange", pyarrow.string()),
        ("side", pyarrow.string()),
        ("price", pyarrow.float64()),
        ("qty", pyarrow.int64()),
        ("region", pyarrow.string()),
        ("urgent", pyarrow.bool_()),
    ]
    if with_id_and_topic:
        fields = [("id", pyarrow.string()), ("topic", pyarrow.string()), *fields]
    return pyarrow.schema(fields)


def write_w3_messages(path: str | Path, count: int, seed: int = 0) -> Path:
    """Write ``count`` W3 records as JSON lines to ``path`` (atomically) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as output:
        for record in w3_records(count, seed):
            output.write(json.dumps(record, separators=(",", ":")))
            output.write("\n")
    temporary.replace(target)
    return target


# -- subscriptions -----------------------------------------------------------------------------


class _SelectorMaker:
    """Draws selector terms; each term's comment gives its rough share of matching messages."""

    def __init__(self, randomness: random.Random) -> None:
        self.random = randomness
        self.symbols = symbols()
        self.cumulative = _zipf_cumulative().tolist()

    def symbol(self) -> str:
        # Subscribers follow the market: they ask for popular symbols more often.
        rank = min(self._bisect(self.random.random()), SYMBOL_COUNT - 1)
        return self.symbols[rank]

    def _bisect(self, value: float) -> int:
        from bisect import bisect_right

        return bisect_right(self.cumulative, value)

    def term(self, choice: int) -> tuple[str, float]:
        """One indexable term of kind ``choice`` and roughly the share of messages it accepts."""
        r = self.random
        if choice == 0:
            return f"symbol = '{self.symbol()}'", 0.03
        if choice == 1:
            picked = sorted({self.symbol() for _ in range(r.randint(2, 4))})
            return "symbol IN (" + ", ".join(f"'{s}'" for s in picked) + ")", 0.08
        if choice == 2:
            return f"exchange = '{r.choice(EXCHANGES)}'", 0.1
        if choice == 3:
            picked = sorted(r.sample(EXCHANGES, r.randint(2, 3)))
            return "exchange IN (" + ", ".join(f"'{e}'" for e in picked) + ")", 0.25
        if choice == 4:
            return f"side = '{r.choice(SIDES)}'", 0.5
        if choice == 5:
            low = r.randrange(0, 950)
            width = r.choice((5, 10, 25, 50, 100))
            return f"price BETWEEN {low} AND {low + width}", width / 1000
        if choice == 6:
            limit = r.randrange(10, 300)
            return f"price < {limit}.5", limit / 1000
        if choice == 7:
            limit = r.randrange(500, 9990)
            return f"qty > {limit}", (10_000 - limit) / 10_000
        if choice == 8:
            picked = sorted(r.sample(REGIONS, r.randint(1, 3)))
            if len(picked) == 1:
                return f"region = '{picked[0]}'", 0.05
            return "region IN (" + ", ".join(f"'{g}'" for g in picked) + ")", 0.1
        if choice == 9:
            return f"symbol LIKE '{r.choice(_LETTERS)}%'", 0.04
        if choice == 10:
            return r.choice(("urgent IS NULL", "urgent IS NOT NULL")), 0.5
        if choice == 11:
            return r.choice(("urgent", "urgent = FALSE", "NOT urgent")), 0.25
        if choice == 12:
            picked = sorted(r.sample(REGIONS, r.randint(1, 2)))
            return "NOT region IN (" + ", ".join(f"'{g}'" for g in picked) + ")", 0.9
        return f"NOT exchange = '{r.choice(EXCHANGES)}'", 0.9

    def conjunction(self, target: float) -> str:
        """Terms ANDed until the estimated share of matching messages drops under ``target``."""
        terms: list[str] = []
        share = 1.0
        kinds = list(range(len(_TERM_FIELDS)))
        self.random.shuffle(kinds)
        used: set[str] = set()
        for kind in kinds:
            if terms and (share <= target or len(terms) >= 4):
                break
            if _TERM_FIELDS[kind] in used:  # one term per field: no contradictions
                continue
            used.add(_TERM_FIELDS[kind])
            text, accepted = self.term(kind)
            terms.append(text)
            share *= accepted
        return " AND ".join(terms)

    def selector(self) -> str:
        r = self.random
        target = 10 ** r.uniform(-3.2, -1.7)
        kind = r.random()
        if kind < 0.05:
            # A term no index can serve: the residual check must decide it.
            threshold = r.choice((100_000, 1_000_000, 5_000_000))
            return f"{self.conjunction(target)} AND price * qty > {threshold}"
        if kind < 0.2:
            return f"({self.conjunction(target / 2)}) OR ({self.conjunction(target / 2)})"
        return self.conjunction(target)

    def topic(self) -> str | None:
        r = self.random
        kind = r.random()
        if kind < 0.7:
            return None
        if kind < 0.8:
            return f"{r.choice(EXCHANGES)}.#"
        if kind < 0.9:
            return f"*.{r.choice(REGIONS)}.*"
        return f"#.{self.symbol()}"


def w3_selector_texts(count: int, seed: int = 0) -> list[tuple[str, str | None]]:
    """``count`` W3 ``(selector text, AMQP topic pattern or None)`` pairs; see the module doc.

    >>> w3_selector_texts(1, seed=3) == w3_selector_texts(1, seed=3)
    True
    """
    if count < 0:
        raise ValueError(f"count must be 0 or more, not {count}")
    maker = _SelectorMaker(random.Random(seed))
    result = []
    for _ in range(count):
        topic = maker.topic()
        result.append((maker.selector(), topic))
    return result


def w3_subscriptions(count: int, seed: int = 0, *, clients: int = 50) -> list[Subscription]:
    """``count`` W3 subscriptions with ids ``w3-000000``..., spread over ``clients`` consumers.

    ``clients=0`` gives subscriptions without a client.

    >>> first = w3_subscriptions(1, seed=5)[0]
    >>> first.client, first.parsed_selector is not None
    ('desk-36', True)
    """
    from bitsift.models import Subscription

    pairs = w3_selector_texts(count, seed)
    owners = random.Random(seed + 1)
    return [
        Subscription(
            id=f"w3-{number:06d}",
            selector=selector,
            topic=topic,
            client=f"desk-{owners.randrange(clients):02d}" if clients else None,
        )
        for number, (selector, topic) in enumerate(pairs)
    ]


def write_w3_subscriptions(path: str | Path, count: int, seed: int = 0) -> Path:
    """Write ``count`` W3 subscriptions as a subscription file (JSON or YAML by suffix)."""
    from bitsift.subscription_files import save_subscriptions

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    save_subscriptions(w3_subscriptions(count, seed), target)
    return target
