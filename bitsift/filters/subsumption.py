"""Subsumption: which filter columns another column provably covers, so the filter can drop them.

A receiver filter only asks whether *some* subscription matches, so a column (one conjunction of a
subscription's selector, with its topic pattern) adds nothing when another column matches every
message it matches: ``forex.*`` covers ``forex.eur``, ``price > 10`` covers ``price > 20``, and
``region = 'eu'`` covers ``region = 'eu' AND price < 5``. Dropping covered columns makes the filter
smaller; it can never change an answer, **provided every "covers" we claim is true**. So this
module is deliberately incomplete: it answers ``True`` only through rules proved below, and
``False`` whenever it is unsure. Missing a subsumption costs a little speed; claiming a wrong one
would lose messages.

The rules, on the atoms of :mod:`bitsift.index.normalize` (whose meaning is exact in three-valued
logic: a :class:`~bitsift.index.criteria.FieldTest` holds for a value or it does not, and
"present and not C" already excludes NULL, so UNKNOWN needs no extra case):

* a column covers another when its topic pattern covers the other's (or it has none) and each of
  its atoms is implied by one atom of the other column (a conjunction covers its supersets);
* a residual atom (arithmetic, comparisons between fields, ...) is implied only by an identical
  residual, compared by canonical text too, because ``a / 0.0`` and ``a / -0.0`` are equal syntax
  trees with opposite answers;
* between two tests on one field, implication is set inclusion of the values they accept, decided
  per criterion kind below (typed keys, numeric intervals with exact mixed-type bounds, prefixes,
  types). NaN is in no interval and equals nothing, exactly as in :mod:`~bitsift.index.criteria`;
* topic patterns (same syntax only) are compared token against token: a literal only covers the
  same literal, a single-word wildcard covers a literal or a single-word wildcard, ``#`` covers
  any run of tokens. An MQTT filter starting with a wildcard never covers one whose first level
  is a literal starting with ``$`` (MQTT 4.7.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from bitsift.index.criteria import (
    Criterion,
    Equals,
    FieldTest,
    HasPrefix,
    InRange,
    Key,
    Kind,
    Missing,
    OfType,
    Residual,
)
from bitsift.index.normalize import Conjunction
from bitsift.selectors.topics import TopicPattern, Wildcard

__all__ = [
    "Column",
    "column_covers",
    "conjunction_covers",
    "field_test_implies",
    "topic_covers",
    "drop_covered",
]

Column = tuple["TopicPattern | None", Conjunction]
"""A filter column: the topic pattern (or None) and one conjunction of atoms."""

_TAG_KIND = {"b": Kind.BOOLEAN, "n": Kind.NUMBER, "s": Kind.STRING}


def exact_number(value: object) -> int | float | Fraction:
    """A number that compares exactly with int, float and Fraction and never touches a decimal
    context (a caller's context may trap mixed Decimal/float comparisons)."""
    if isinstance(value, Decimal):
        if value.is_infinite():
            return float("inf") if value > 0 else float("-inf")
        return Fraction(value)
    return value  # type: ignore[return-value]


def _is_empty_range(criterion: InRange) -> bool:
    if criterion.low is None or criterion.high is None:
        return False
    low, high = exact_number(criterion.low), exact_number(criterion.high)
    if low > high:
        return True
    return low == high and not (criterion.low_inclusive and criterion.high_inclusive)


def _accepts_nothing(criterion: Criterion) -> bool:
    """True when no value at all meets the criterion (so a positive test on it never holds)."""
    if isinstance(criterion, Equals):
        return not criterion.keys
    if isinstance(criterion, InRange):
        return _is_empty_range(criterion)
    return False


def _in_range(number: object, criterion: InRange) -> bool:
    value = exact_number(number)
    if criterion.low is not None:
        low = exact_number(criterion.low)
        if value < low or (value == low and not criterion.low_inclusive):
            return False
    if criterion.high is not None:
        high = exact_number(criterion.high)
        if value > high or (value == high and not criterion.high_inclusive):
            return False
    return True


def _range_within(inner: InRange, outer: InRange) -> bool:
    """Every number in ``inner`` is in ``outer`` (``inner`` is known to be non-empty)."""
    if outer.low is not None:
        if inner.low is None:
            return False
        inner_low, outer_low = exact_number(inner.low), exact_number(outer.low)
        if inner_low < outer_low:
            return False
        if inner_low == outer_low and inner.low_inclusive and not outer.low_inclusive:
            return False
    if outer.high is not None:
        if inner.high is None:
            return False
        inner_high, outer_high = exact_number(inner.high), exact_number(outer.high)
        if inner_high > outer_high:
            return False
        if inner_high == outer_high and inner.high_inclusive and not outer.high_inclusive:
            return False
    return True


def _key_meets(key: Key, criterion: Criterion) -> bool:
    """Whether the value behind a typed key meets the criterion (keys are never NaN)."""
    tag, value = key
    if isinstance(criterion, Missing):
        return False
    if isinstance(criterion, Equals):
        return key in criterion.keys
    if isinstance(criterion, OfType):
        return _TAG_KIND[tag] is criterion.kind
    if isinstance(criterion, InRange):
        return tag == "n" and _in_range(value, criterion)
    return tag == "s" and value.startswith(criterion.prefix)  # type: ignore[union-attr]


def criterion_implies(narrow: Criterion, wide: Criterion) -> bool:
    """Every *present* value meeting ``narrow`` meets ``wide`` (proved case by case; else False).

    >>> criterion_implies(InRange(20, False, None, False), InRange(10, False, None, False))
    True
    >>> criterion_implies(HasPrefix("eu"), Equals(frozenset([("s", "eu")])))
    False
    """
    if _accepts_nothing(narrow) or isinstance(narrow, Missing):
        return True  # no present value meets it
    if isinstance(narrow, Equals):
        return all(_key_meets(key, wide) for key in narrow.keys)
    if isinstance(wide, Missing) or _accepts_nothing(wide):
        return False
    if isinstance(narrow, OfType):
        return isinstance(wide, OfType) and wide.kind is narrow.kind
    if isinstance(narrow, InRange):
        if isinstance(wide, OfType):
            return wide.kind is Kind.NUMBER
        return isinstance(wide, InRange) and _range_within(narrow, wide)
    # narrow is HasPrefix
    if isinstance(wide, OfType):
        return wide.kind is Kind.STRING
    return isinstance(wide, HasPrefix) and narrow.prefix.startswith(wide.prefix)


def _disjoint(first: Criterion, second: Criterion) -> bool:
    """No present value meets both criteria (proved case by case; else False)."""
    if _accepts_nothing(first) or _accepts_nothing(second):
        return True
    if isinstance(first, Missing) or isinstance(second, Missing):
        return True  # Missing holds for no present value
    if isinstance(second, Equals):
        first, second = second, first
    if isinstance(first, Equals):
        return not any(_key_meets(key, second) for key in first.keys)
    kinds = {_kind_of(first), _kind_of(second)}
    if len(kinds) == 2 and None not in kinds:
        return True  # they accept values of different types
    if isinstance(first, InRange) and isinstance(second, InRange):
        return _ranges_disjoint(first, second)
    if isinstance(first, HasPrefix) and isinstance(second, HasPrefix):
        return not (
            first.prefix.startswith(second.prefix) or second.prefix.startswith(first.prefix)
        )
    return False


def _kind_of(criterion: Criterion) -> Kind | None:
    if isinstance(criterion, OfType):
        return criterion.kind
    if isinstance(criterion, InRange):
        return Kind.NUMBER
    if isinstance(criterion, HasPrefix):
        return Kind.STRING
    return None


def _ranges_disjoint(first: InRange, second: InRange) -> bool:
    # Disjoint when one ends before the other starts.
    for left, right in ((first, second), (second, first)):
        if left.high is not None and right.low is not None:
            high, low = exact_number(left.high), exact_number(right.low)
            if high < low or (high == low and not (left.high_inclusive and right.low_inclusive)):
                return True
    return False


def field_test_implies(narrow: FieldTest, wide: FieldTest) -> bool:
    """Whenever ``narrow`` holds for a message, ``wide`` holds too (both test one field).

    The value sets: a plain test accepts the values meeting its criterion (NULL only for
    ``missing``); a negated test accepts the present values not meeting it.

    >>> price_over = lambda n: FieldTest("price", InRange(n, False, None, False))
    >>> wide, narrow = price_over(10), price_over(20)
    >>> field_test_implies(narrow, wide), field_test_implies(wide, narrow)
    (True, False)
    """
    if narrow.field != wide.field:
        return False
    if not narrow.negated:
        if _accepts_nothing(narrow.criterion):
            return True
        if not wide.negated:
            if isinstance(narrow.criterion, Missing):
                return isinstance(wide.criterion, Missing)
            return criterion_implies(narrow.criterion, wide.criterion)
        # wide is "present and not C": narrow must accept only present values, none meeting C.
        if isinstance(narrow.criterion, Missing):
            return False
        return _disjoint(narrow.criterion, wide.criterion)
    if not wide.negated:
        return False  # "present and not C" includes values of every type: too wide to prove
    # present and not C_narrow  =>  present and not C_wide   iff   C_wide (present) within C_narrow
    return criterion_implies(wide.criterion, narrow.criterion)


def _same_residual(first: Residual, second: Residual) -> bool:
    return first == second and str(first.node) == str(second.node)


def conjunction_covers(general: Conjunction, specific: Conjunction) -> bool:
    """Every message meeting all atoms of ``specific`` meets all atoms of ``general``.

    >>> from bitsift.index.normalize import to_dnf
    >>> from bitsift.selectors.parser import parse
    >>> [wide], [narrow] = to_dnf(parse("price > 10").ast), to_dnf(parse("price > 20 AND b").ast)
    >>> conjunction_covers(wide, narrow), conjunction_covers(narrow, wide)
    (True, False)
    """
    tests: dict[str, list[FieldTest]] = {}
    residuals: list[Residual] = []
    for atom in specific:
        if isinstance(atom, Residual):
            residuals.append(atom)
        else:
            tests.setdefault(atom.field, []).append(atom)
    for atom in general:
        if isinstance(atom, Residual):
            if not any(_same_residual(atom, other) for other in residuals):
                return False
        elif not any(field_test_implies(test, atom) for test in tests.get(atom.field, ())):
            return False
    return True


@lru_cache(maxsize=65_536)
def topic_covers(general: TopicPattern | None, specific: TopicPattern | None) -> bool:
    """Every topic ``specific`` matches, ``general`` matches (None: no topic condition at all).

    >>> topic_covers(TopicPattern("forex.*"), TopicPattern("forex.eur"))
    True
    >>> topic_covers(TopicPattern("forex.*"), TopicPattern("forex.#"))
    False
    """
    if general is None:
        return True
    if specific is None or general.syntax != specific.syntax:
        return False
    if general.skips_dollar_topics and not specific.skips_dollar_topics:
        first = specific.tokens[0]
        if isinstance(first, str) and first.startswith("$"):
            return False
    return _tokens_cover(general.tokens, specific.tokens)


def _tokens_cover(general: Sequence[object], specific: Sequence[object]) -> bool:
    # reached[i] after reading j specific tokens: the first i general tokens can stand for them.
    # Each specific token stands for a set of word runs; a general token may consume it only if it
    # accepts every run it stands for. This is sound (each rule is an inclusion) but not complete.
    size = len(general)
    reached = _close({0}, general)
    for token in specific:
        advanced: set[int] = set()
        for position in reached:
            if position == size:
                continue
            want = general[position]
            if want is Wildcard.MANY:
                advanced.add(position)  # '#' swallows the token and may swallow more
            elif want is Wildcard.ONE:
                if token is not Wildcard.MANY:
                    advanced.add(position + 1)
            elif want == token:
                advanced.add(position + 1)
        reached = _close(advanced, general)
        if not reached:
            return False
    return size in reached


def _close(positions: set[int], general: Sequence[object]) -> set[int]:
    """Add the positions reached by letting each '#' stand for zero words."""
    result = set(positions)
    pending = list(positions)
    while pending:
        position = pending.pop()
        if position < len(general) and general[position] is Wildcard.MANY:
            if position + 1 not in result:
                result.add(position + 1)
                pending.append(position + 1)
    return result


def column_covers(general: Column, specific: Column) -> bool:
    """The column ``general`` matches every message the column ``specific`` matches."""
    return topic_covers(general[0], specific[0]) and conjunction_covers(general[1], specific[1])


def _fields(column: Column) -> frozenset[str]:
    return frozenset(atom.field for atom in column[1] if isinstance(atom, FieldTest))


def drop_covered(columns: Sequence[Column], budget: int = 100_000) -> list[int]:
    """Positions of the columns to keep: each dropped one is covered by a kept one.

    Columns are tried from the most general (fewest atoms) on; a column is dropped when a column
    already kept covers it. A covering column tests a subset of the fields, so only kept columns
    whose field set is a subset are tried. ``budget`` bounds the number of pairwise checks (about
    a second at the default), so a large set of look-alike subscriptions (a thousand intervals
    on one field) costs bounded time; past it, the remaining columns are kept (still correct,
    just less reduced).
    """
    order = sorted(
        range(len(columns)),
        key=lambda position: (len(columns[position][1]), columns[position][0] is not None),
    )
    kept: list[int] = []
    kept_by_fields: dict[frozenset[str], list[int]] = {}
    for position in order:
        column = columns[position]
        fields = _fields(column)
        covered = False
        if budget > 0:
            for group_fields, group in kept_by_fields.items():
                if not group_fields <= fields:
                    continue
                for other in group:
                    budget -= 1
                    if column_covers(columns[other], column):
                        covered = True
                        break
                if covered or budget <= 0:
                    break
        if not covered:
            kept.append(position)
            kept_by_fields.setdefault(fields, []).append(position)
    return sorted(kept)
