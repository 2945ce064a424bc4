"""Which filter columns to try first: a prior guess of how often each matches, then observed hits.

The filter stops at the first column that matches, so the columns that match most messages should
be tried first. Before any message arrives we only have the seeds' heuristic ("the more wildcards
in the subscription, the larger the set of messages it matches"), made a little more general:
each atom gets a guessed probability of holding and a column's guess is their product.

* topic: a literal word keeps 1/10 of the topics, a wildcard keeps all; ``#`` alone is 1;
* ``missing`` 1/2, "present and not C" 4/5 (it excludes one value or one set), a type test 3/5;
* equality with k keys: k/20, at most 1; a prefix: 1/5;
* a numeric interval: the share of the field's span that it covers, where the span runs from the
  smallest to the largest bound any column uses on that field (so ``price > 900`` is narrow and
  ``price < 900`` wide when the other bounds lie between 0 and 1000);
* a residual: 1/2.

While running, :class:`HitRates` counts which column ended each accepted message's search; the
filter re-ranks from those counts (with the guess as a prior) at growing intervals. Ranking only
decides the order of work, never the answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from bitsift.filters.subsumption import Column, exact_number
from bitsift.index.criteria import Equals, FieldTest, HasPrefix, InRange, Missing, OfType
from bitsift.selectors.topics import Wildcard

__all__ = ["guess_hit_rates", "HitRates"]

_LITERAL_WORD = 0.1
_FLOOR = 1e-4


def _spans(columns: Sequence[Column]) -> dict[str, tuple[float, float]]:
    """Per field, the smallest and largest finite bound any interval uses."""
    bounds: dict[str, list[float]] = {}
    for _, conjunction in columns:
        for atom in conjunction:
            if isinstance(atom, FieldTest) and isinstance(atom.criterion, InRange):
                for bound in (atom.criterion.low, atom.criterion.high):
                    if bound is not None:
                        number = float(exact_number(bound))
                        if number == number and abs(number) != float("inf"):
                            bounds.setdefault(atom.field, []).append(number)
    return {field: (min(values), max(values)) for field, values in bounds.items()}


def _interval_share(criterion: InRange, span: tuple[float, float] | None) -> float:
    if span is None or span[0] == span[1]:
        return 0.5 if criterion.low is None or criterion.high is None else 0.2
    low_end, high_end = span
    width = high_end - low_end
    low = low_end if criterion.low is None else max(low_end, float(exact_number(criterion.low)))
    high = (
        high_end if criterion.high is None else min(high_end, float(exact_number(criterion.high)))
    )
    return max(0.0, high - low) / width


def _atom_guess(atom: object, spans: dict[str, tuple[float, float]]) -> float:
    if not isinstance(atom, FieldTest):
        return 0.5  # residual
    criterion = atom.criterion
    if isinstance(criterion, Missing):
        return 0.8 if atom.negated else 0.5
    if atom.negated:
        return 0.8
    if isinstance(criterion, Equals):
        return min(1.0, len(criterion.keys) / 20)
    if isinstance(criterion, OfType):
        return 0.6
    if isinstance(criterion, HasPrefix):
        return 0.2
    return _interval_share(criterion, spans.get(atom.field))


def guess_hit_rates(columns: Sequence[Column]) -> list[float]:
    """A prior guess, per column, of the share of messages it matches (see the module docstring).

    >>> from bitsift.index.normalize import to_dnf
    >>> from bitsift.selectors.parser import parse
    >>> from bitsift.selectors.topics import TopicPattern
    >>> columns = [(TopicPattern(t), c) for t, s in [("forex.eur", "price > 900"),
    ...            ("forex.*", "price < 900")] for c in to_dnf(parse(s).ast)]
    >>> narrow, wide = guess_hit_rates(columns)
    >>> narrow < wide
    True
    """
    spans = _spans(columns)
    guesses = []
    for topic, conjunction in columns:
        guess = 1.0
        if topic is not None:
            for token in topic.tokens:
                if not isinstance(token, Wildcard):
                    guess *= _LITERAL_WORD
        for atom in conjunction:
            guess *= _atom_guess(atom, spans)
        guesses.append(max(guess, _FLOOR))
    return guesses


class HitRates:
    """Observed hits per column, blended with the prior guess into a ranking.

    The score of a column is ``(hits + weight * guess) / (trials + weight)``: with few
    observations the guess dominates, with many the observed rate does. After each ranking the
    counts are halved, so the ranking follows a stream whose mix changes.
    """

    __slots__ = ("guesses", "hits", "trials", "weight", "scores")

    def __init__(self, guesses: Sequence[float], weight: float = 64.0) -> None:
        self.guesses = list(guesses)
        self.hits = [0.0] * len(self.guesses)
        self.trials = 0.0
        self.weight = weight
        self.scores = list(self.guesses)
        """The blended score of each column at the last ranking (the guesses before any)."""

    def ranking(self, current: Sequence[int]) -> list[int]:
        """Column positions, most likely first; ties keep the ``current`` order (stable)."""
        weight, trials = self.weight, self.trials
        scores = [
            (hits + weight * guess) / (trials + weight)
            for hits, guess in zip(self.hits, self.guesses, strict=True)
        ]
        self.scores = scores
        rank = sorted(current, key=lambda position: -scores[position])
        self.hits = [hits / 2 for hits in self.hits]
        self.trials /= 2
        return rank
