"""Rewrite a selector into an OR of conjunctions of criteria (DNF) with the same TRUE-set.

A subscription matches only when its selector is TRUE, so the index needs, for every node, the
exact set of messages where it is TRUE. ``NOT`` is pushed inward by also computing where each node
is FALSE, which keeps three-valued logic exact: ``NOT x`` is TRUE exactly where ``x`` is FALSE, and
De Morgan's laws hold for Kleene logic when read that way (``a AND b`` is FALSE where ``a`` is
FALSE or ``b`` is FALSE). UNKNOWN never matches, so it never needs representing.

Two JMS rules shape the FALSE-sets and are the reason negated field tests mean "present and not":

* comparing values of unlike types is FALSE, so ``NOT (name = 5)`` is TRUE for a string ``name``;
* a missing field makes a comparison UNKNOWN, so ``NOT (name = 5)`` is not TRUE when it is absent.

Distributing AND over OR can multiply terms, so each node's DNF is capped
(:data:`MAX_CONJUNCTIONS`): a node whose expansion would exceed the cap becomes a single
:class:`~bitsift.index.criteria.Residual` test that the reference evaluator decides. The cap
trades index precision for bounded memory; results stay exact either way.

Building an index normalises every subscription, so this runs once per subscription and its cost
is a large part of the build. Three things keep it cheap without changing a single result:

* One bottom-up pass. Each node reports its DNF *and* whether it reads no message property, so a
  constant ``AND``/``OR`` is decided from its operands (Kleene logic) instead of by re-walking it.
* Leaves (``symbol = 'IBM'``, ``side = 'buy'``, ...) recur across thousands of subscriptions, so
  the result of each small leaf is remembered, keyed by a flat tuple of its names and values
  (hashed and compared in C, unlike the syntax nodes). Remembered leaves also hand out the same
  atom objects again, which the index's dictionaries then compare by identity. The cache is
  bounded for untrusted selectors: two generations of :data:`LEAF_CACHE_LIMIT` leaves per
  polarity (a leaf in use moves to the newer one, a full newer one replaces the older), none
  heavier than :data:`LEAF_CACHE_MAX_WEIGHT` (heavier ones are not remembered): about 21 MiB
  at worst. Threads share it safely: lookups and insertions are single dictionary operations,
  atomic in CPython, and a lost entry only costs recomputation.
* Conjunctions are sorted canonically by the text of their atoms, which is slow to produce. For
  field tests on names with no character at or below the space (U+0000 to U+0020), that order
  is the order of field names, then of texts within one field (each text is the field name, a
  space, then the rest). So when no field is tested by two of the conjunctions being combined,
  each already in order, a stable sort by field name gives the canonical order without building
  any text.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Sequence
from itertools import product
from operator import attrgetter

from bitsift.index.criteria import (
    MISSING,
    Atom,
    Equals,
    FieldTest,
    HasPrefix,
    InRange,
    Key,
    Kind,
    Missing,
    OfType,
    Residual,
    classify,
    key_of,
)
from bitsift.selectors.ast import (
    And,
    Arithmetic,
    Between,
    BooleanLiteral,
    Comparison,
    FloatLiteral,
    Identifier,
    In,
    IntegerLiteral,
    IsNull,
    Like,
    Negate,
    Node,
    Not,
    Or,
    StringLiteral,
)
from bitsift.selectors.evaluate import evaluate, identifiers
from bitsift.selectors.like import compile_like

__all__ = [
    "Conjunction",
    "MAX_CONJUNCTIONS",
    "LEAF_CACHE_LIMIT",
    "LEAF_CACHE_MAX_WEIGHT",
    "to_dnf",
    "explain",
    "clear_caches",
]

Conjunction = tuple[Atom, ...]
"""Atoms that must all hold, sorted canonically so that equal conjunctions compare equal."""
DNF = list[Conjunction]
_Terms = tuple[Conjunction, ...]
_Result = tuple[_Terms, bool]
"""A node's conjunctions, and whether the node reads no message property (a constant)."""

MAX_CONJUNCTIONS = 64
"""Most conjunctions one node may expand to before it is checked as a residual instead."""
LEAF_CACHE_LIMIT = 1 << 11
"""Leaves in one generation of the cache, per polarity (TRUE, FALSE); two generations are kept."""
LEAF_CACHE_MAX_WEIGHT = 128
"""Heaviest leaf remembered, in :func:`_leaf_weight` units: eight per syntax node (an ``IN`` item
is one) plus one per character of names, strings and patterns. ``symbol = 'IBM'`` weighs about
33, a W3 ``IN`` of four symbols 70; an ``IN`` of 15 numbers or more is never remembered. Filled
with the heaviest leaves it remembers, the cache holds about 21 MiB (both generations and both
polarities, measured with tracemalloc); the atom-order cache adds at most 4,096 short texts."""
_NODE_WEIGHT = 8
_ORDER_CACHE_LIMIT = 1 << 12
_ORDER_CACHE_MAX_TEXT = 128

_ALWAYS: _Terms = ((),)
_NEVER: _Terms = ()
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_LOGICAL = frozenset([And, Or, Not])
_NUMBER_LITERALS = frozenset([IntegerLiteral, FloatLiteral])
_LITERALS = (StringLiteral, IntegerLiteral, FloatLiteral, BooleanLiteral)
_VALUE_NODES = (
    Identifier,
    StringLiteral,
    IntegerLiteral,
    FloatLiteral,
    BooleanLiteral,
    Negate,
    Arithmetic,
)

_RECENT: list[dict[Hashable, _Result]] = [{}, {}]
"""Leaf results remembered lately, for ``want`` FALSE (index 0) and TRUE (index 1)."""
_EARLIER: list[dict[Hashable, _Result]] = [{}, {}]
"""The generation before: a leaf found here moves back to :data:`_RECENT`, so leaves in use
survive while the one-off ones (a random ``BETWEEN``) age out two generations later."""
_ORDER_CACHE: dict[Atom, tuple[Atom, tuple[int, str]]] = {}
_PLAIN_NAMES: set[str] = set()
"""Field names known to hold no character at or below the space (see :func:`_conjoin`)."""
_PLAIN_NAMES_LIMIT = 1 << 12
_PLAIN_NAME_MAX_LENGTH = 128
_SPACE_OR_CONTROL = re.compile(r"[\x00- ]")
_field_of = attrgetter("field")


def to_dnf(node: Node | None, max_conjunctions: int = MAX_CONJUNCTIONS) -> DNF:
    """The conjunctions whose union is exactly where ``node`` is TRUE.

    >>> from bitsift import parse
    >>> for conjunction in to_dnf(parse("NOT (a = 1 OR b IS NULL)").ast):
    ...     print(" AND ".join(str(atom) for atom in conjunction))
    a present and not in {1} AND b present
    """
    if node is None:
        return list(_ALWAYS)
    return list(_truth(node, True, max_conjunctions)[0])


def explain(node: Node | None) -> str:
    """How the index sees a selector: one line per conjunction, atoms joined by AND."""
    lines = [
        " AND ".join(str(atom) for atom in conjunction) or "TRUE" for conjunction in to_dnf(node)
    ]
    return "\n".join(lines) if lines else "never TRUE"


def clear_caches() -> None:
    """Forget every remembered leaf and atom order (tests use it to compare cold and warm runs)."""
    for generation in (*_RECENT, *_EARLIER):
        generation.clear()
    _ORDER_CACHE.clear()
    _PLAIN_NAMES.clear()


def _truth(node: Node, want: bool, cap: int) -> _Result:
    """Conjunctions for where ``node`` evaluates to ``want`` (TRUE or FALSE), and its constancy."""
    kind = type(node)
    while kind is Not:
        node = node.operand  # type: ignore[union-attr]
        want = not want
        kind = type(node)
    if kind is not And and kind is not Or:
        key = _leaf_key(node)
        return _RECENT[want].get(key) or _remember(node, want, key)
    # TRUE of AND and FALSE of OR need every operand; the other two need any one.
    needs_all = (kind is And) is want
    recent = _RECENT[want]
    parts: list[_Terms] = []
    constant = True
    for operand in node.operands:  # type: ignore[union-attr]
        if type(operand) in _LOGICAL:
            terms, operand_constant = _truth(operand, want, cap)
        else:  # a leaf, looked up here: most operands are leaves, and a call costs
            key = _leaf_key(operand)
            terms, operand_constant = recent.get(key) or _remember(operand, want, key)
        parts.append(terms)
        constant = constant and operand_constant
    if constant:
        # Reads nothing: decided from the operands' answers, as Kleene logic (and the evaluator)
        # combines them, whatever the cap.
        holds = all(parts) if needs_all else any(parts)
        return (_ALWAYS if holds else _NEVER), True
    if needs_all:
        for part in parts:
            if len(part) != 1:
                combined = _product(parts, cap)
                break
        else:  # the common case, an AND of single conjunctions: no product to take
            return (_conjoin([part[0] for part in parts]),), False
    else:
        combined = _union(parts, cap)
    if combined is None:
        return ((Residual(node, want),),), False
    return combined, False


def _remember(node: Node, want: bool, key: Hashable) -> _Result:
    """The result for a leaf not remembered lately, remembered now when the leaf is small."""
    result = _EARLIER[want].get(key)
    if result is None:
        result = _leaf_result(node, want)
        if type(key) is tuple:
            # About two elements per node (see _leaf_key), so about _leaf_weight(node).
            weight = _NODE_WEIGHT // 2 * len(key)
            for part in key:
                if type(part) is str:
                    weight += len(part)
        else:
            weight = _leaf_weight(node)
        if weight > LEAF_CACHE_MAX_WEIGHT:
            return result
    recent = _RECENT[want]
    if len(recent) >= LEAF_CACHE_LIMIT:
        # A new generation; the oldest is dropped. Another thread may still add a few entries
        # to the one it holds, which only delays them.
        _EARLIER[want] = recent
        recent = _RECENT[want] = {}
    recent[key] = result
    return result


def _leaf_result(node: Node, want: bool) -> _Result:
    if _reads_no_field(node):
        # Constant: decide once with the reference evaluator.
        return (_ALWAYS if evaluate(node, {}) is want else _NEVER), True
    dnf = _leaf(node, want)
    if dnf is None:
        return (_residual(node, want),), False
    return tuple(dnf), False


def _reads_no_field(node: Node) -> bool:
    kind = type(node)
    if kind is Identifier:
        return False
    if kind is Comparison:
        if type(node.left) is Identifier or type(node.right) is Identifier:  # type: ignore[union-attr]
            return False
    elif kind is Between or kind is In or kind is Like or kind is IsNull:
        if type(node.operand) is Identifier:  # type: ignore[union-attr]
            return False
    return not identifiers(node)


def _leaf_key(node: Node) -> Hashable:
    """A key equal for equal leaves, made of strings and numbers where the leaf is simple.

    Syntax nodes hash and compare field by field in Python, several calls per node; a flat tuple
    is hashed and compared in C. The node's class leads every tuple, so no two shapes collide.
    Zero floats keep the node as their key, since ``0.0 == -0.0`` but the two print differently.
    """
    kind = type(node)
    if kind is Comparison:
        left, right = node.left, node.right  # type: ignore[union-attr]
        if type(left) is Identifier:
            value_type = type(right)
            if value_type in _LITERALS and (value_type is not FloatLiteral or right.value):  # type: ignore[union-attr]
                return (kind, node.operator, left.name, value_type, right.value)  # type: ignore[union-attr]
        elif type(right) is Identifier:
            value_type = type(left)
            if value_type in _LITERALS and (value_type is not FloatLiteral or left.value):  # type: ignore[union-attr]
                return (kind, node.operator, value_type, left.value, right.name)  # type: ignore[union-attr]
        return node
    if kind is In:
        parts: list[object] = [kind, node.negated, node.operand.name]  # type: ignore[union-attr]
        for item in node.items:  # type: ignore[union-attr]
            value_type = type(item)
            if value_type is FloatLiteral and not item.value:
                return node
            parts.append(value_type)
            parts.append(item.value)
        return tuple(parts)
    if kind is Between:
        low, high = node.low, node.high  # type: ignore[union-attr]
        low_type, high_type = type(low), type(high)
        if (
            type(node.operand) is Identifier  # type: ignore[union-attr]
            and low_type in _LITERALS
            and high_type in _LITERALS
            and (low_type is not FloatLiteral or low.value)  # type: ignore[union-attr]
            and (high_type is not FloatLiteral or high.value)  # type: ignore[union-attr]
        ):
            name = node.operand.name  # type: ignore[union-attr]
            return (kind, node.negated, name, low_type, low.value, high_type, high.value)  # type: ignore[union-attr]
        return node
    if kind is IsNull:
        return (kind, node.negated, node.operand.name)  # type: ignore[union-attr]
    if kind is Like:
        return (kind, node.negated, node.operand.name, node.pattern, node.escape)  # type: ignore[union-attr]
    if kind is Identifier:
        return (kind, node.name)  # type: ignore[union-attr]
    return node


def _leaf_weight(node: Node) -> int:
    """How much memory remembering ``node`` would roughly hold (see :data:`LEAF_CACHE_MAX_WEIGHT`).

    Counting stops soon after passing the limit, so a huge leaf costs no more to weigh than a
    small one.
    """
    weight = 0
    pending: list[Node] = [node]
    while pending and weight <= LEAF_CACHE_MAX_WEIGHT:
        item = pending.pop()
        kind = type(item)
        weight += _NODE_WEIGHT
        if kind is Identifier:
            weight += len(item.name)  # type: ignore[union-attr]
        elif kind is StringLiteral:
            weight += len(item.value)  # type: ignore[union-attr, arg-type]
        elif kind is Comparison or kind is Arithmetic:
            pending += (item.left, item.right)  # type: ignore[union-attr]
        elif kind is Between:
            pending += (item.operand, item.low, item.high)  # type: ignore[union-attr]
        elif kind is In:
            items = item.items  # type: ignore[union-attr]
            pending.append(item.operand)  # type: ignore[union-attr]
            if _NODE_WEIGHT * len(items) > LEAF_CACHE_MAX_WEIGHT:
                weight += _NODE_WEIGHT * len(items)  # too heavy already: not worth walking
            else:
                pending += items
        elif kind is Like:
            pending.append(item.operand)  # type: ignore[union-attr]
            weight += len(item.pattern) + len(item.escape or "")  # type: ignore[union-attr]
        elif kind is IsNull or kind is Not or kind is Negate:
            pending.append(item.operand)  # type: ignore[union-attr]
        elif kind is And or kind is Or:
            operands = item.operands  # type: ignore[union-attr]
            if _NODE_WEIGHT * len(operands) > LEAF_CACHE_MAX_WEIGHT:
                weight += _NODE_WEIGHT * len(operands)
            else:
                pending += operands
    return weight + _NODE_WEIGHT * len(pending)


def _union(parts: list[_Terms], cap: int) -> _Terms | None:
    seen = dict.fromkeys([conjunction for part in parts for conjunction in part])
    if () in seen:
        return _ALWAYS
    return tuple(seen) if len(seen) <= cap else None


def _product(parts: list[_Terms], cap: int) -> _Terms | None:
    size = 1
    for part in parts:
        size *= len(part)
        if size > cap:
            return None
    if size == 1:  # the common case: an AND of single conjunctions
        return (_conjoin([part[0] for part in parts]),)
    if not size:
        return _NEVER
    return tuple(dict.fromkeys([_conjoin(combination) for combination in product(*parts)]))


def _conjoin(parts: Sequence[Conjunction]) -> Conjunction:
    """The conjunction of ``parts``, each a canonical conjunction (as every one made here is)."""
    atoms = [atom for part in parts for atom in part]
    if len(atoms) < 2:
        return tuple(atoms)
    try:
        by_field = {atom.field: atom for atom in atoms}  # type: ignore[union-attr]
    except AttributeError:  # a residual: the general rule
        return _canonical(atoms)
    if by_field.keys() <= _PLAIN_NAMES or _all_plain(by_field):
        # Plain names: sorting by text is sorting by field name, then by text within a field
        # (see the module docstring).
        if len(by_field) == len(atoms):
            return tuple([by_field[name] for name in sorted(by_field)])
        fields_per_part = [len({atom.field for atom in part}) for part in parts]  # type: ignore[union-attr]
        if sum(fields_per_part) == len(by_field):
            # No field in two parts, so nothing to drop, and the tests of each field come from
            # one canonical part, already in order: a stable sort by field keeps them so.
            atoms.sort(key=_field_of)
            return tuple(atoms)
    return _canonical(atoms)


def _all_plain(names: Iterable[str]) -> bool:
    """Whether no name holds a character at or below the space; short plain names are remembered."""
    for name in names:
        if name not in _PLAIN_NAMES:
            if _SPACE_OR_CONTROL.search(name):
                return False
            if len(name) <= _PLAIN_NAME_MAX_LENGTH:
                if len(_PLAIN_NAMES) >= _PLAIN_NAMES_LIMIT:
                    _PLAIN_NAMES.clear()
                _PLAIN_NAMES.add(name)
    return True


def _canonical(atoms: list[Atom]) -> Conjunction:
    """The conjunction of any ``atoms``: duplicates and implied presence tests dropped, sorted by
    kind (field tests before residuals), then text. :func:`_conjoin` gives the same, faster."""
    atoms = list(dict.fromkeys(atoms))
    # "f present" adds nothing beside another test on f that only a present value can pass,
    # which is every field test but "missing" and "present".
    tested = {
        atom.field
        for atom in atoms
        if type(atom) is FieldTest and type(atom.criterion) is not Missing
    }
    if tested:
        atoms = [atom for atom in atoms if not (_is_presence(atom) and atom.field in tested)]  # type: ignore[union-attr]
    atoms.sort(key=_atom_order)
    return tuple(atoms)


def _atom_order(atom: Atom) -> tuple[int, str]:
    # The same atoms recur across thousands of subscriptions, so short sort keys are remembered.
    # Equal atoms may print differently when they hold numbers (1 == 1.0, 0.0 == -0.0) or an
    # expression: a remembered key is used for those only when it was made for this very atom,
    # so the order never depends on what was normalised before.
    entry = _ORDER_CACHE.get(atom)
    if entry is not None and (entry[0] is atom or _spelled_alike(atom)):
        return entry[1]
    order = (1 if type(atom) is Residual else 0, str(atom))
    if len(order[1]) <= _ORDER_CACHE_MAX_TEXT:
        if len(_ORDER_CACHE) >= _ORDER_CACHE_LIMIT:
            _ORDER_CACHE.clear()
        _ORDER_CACHE[atom] = (atom, order)
    return order


def _spelled_alike(atom: Atom) -> bool:
    """Whether every atom equal to ``atom`` prints as it does: a field test holding no number."""
    if type(atom) is not FieldTest:
        return False
    criterion = atom.criterion
    kind = type(criterion)
    if kind is InRange:
        return False
    if kind is Equals:
        return all([key[0] != "n" for key in criterion.keys])  # type: ignore[union-attr]
    return True


def _is_presence(atom: Atom) -> bool:
    return type(atom) is FieldTest and atom.negated and type(atom.criterion) is Missing


def _residual(node: Node, want: bool) -> Conjunction:
    atoms: list[Atom] = [Residual(node, want)]
    if want:
        # A comparison of values is TRUE only when every value in it is present: saying so
        # lets the index narrow the candidates before the evaluator runs.
        atoms.extend(FieldTest(name, MISSING, True) for name in _required_fields(node))
    return _canonical(atoms)


def _leaf(node: Node, want: bool) -> DNF | None:
    """DNF for a condition on one field, or None when it needs the evaluator."""
    kind = type(node)
    if kind is Comparison:
        return _comparison(node, want)  # type: ignore[arg-type]
    if kind is Between:
        return _between(node, want)  # type: ignore[arg-type]
    if kind is In:
        return _membership(node, want)  # type: ignore[arg-type]
    if kind is Like:
        return _like(node, want)  # type: ignore[arg-type]
    if kind is IsNull:
        return [(FieldTest(node.operand.name, MISSING, node.negated == want),)]  # type: ignore[union-attr]
    if kind is Identifier:
        return _equality(node.name, ("b", True), Kind.BOOLEAN, "=", want)  # type: ignore[union-attr]
    return None


def _constant_value(node: Node) -> tuple[bool, object]:
    """Whether ``node`` is an identifier-free value expression, and then its value."""
    if isinstance(node, _LITERALS):
        return True, node.value
    if not isinstance(node, _VALUE_NODES) or identifiers(node):
        return False, None
    return True, evaluate_constant(node)


def _comparison(node: Comparison, want: bool) -> DNF | None:
    operator = node.operator
    left, right = node.left, node.right
    if type(left) is not Identifier:
        left, right, operator = right, left, _FLIPPED[operator]  # type: ignore[assignment]
        if type(left) is not Identifier:
            return None
    constant, raw = _constant_value(right)
    if not constant:
        return None
    kind, value = classify(raw)
    name = left.name
    if kind is Kind.MISSING:
        return []  # a comparison with NULL is UNKNOWN: never TRUE nor FALSE
    if operator == "=" or operator == "<>":
        key = key_of(kind, value)
        if key is None:  # NaN: equal to nothing, so '=' is FALSE and '<>' TRUE for numbers
            return _nan_equality(name, operator, want)
        return _equality(name, key, kind, operator, want)
    if kind is not Kind.NUMBER:
        return None  # ordering a string or boolean: the parser refuses most; evaluator decides
    if value != value:
        return _ordering_nan(name, want)
    if operator == ">" or operator == ">=":
        interval = InRange(value, operator == ">=", None, False)  # type: ignore[arg-type]
    else:
        interval = InRange(None, False, value, operator == "<=")  # type: ignore[arg-type]
    return [(FieldTest(name, interval, not want),)]


def _between(node: Between, want: bool) -> DNF | None:
    if type(node.operand) is not Identifier:
        return None
    low, high = node.low, node.high
    if type(low) in _NUMBER_LITERALS and type(high) in _NUMBER_LITERALS:
        low, high = low.value, high.value  # type: ignore[union-attr, assignment]  # finite
    else:
        low_constant, raw_low = _constant_value(low)
        high_constant, raw_high = _constant_value(high)
        if not (low_constant and high_constant):
            return None
        low_kind, low = classify(raw_low)  # type: ignore[assignment]
        high_kind, high = classify(raw_high)  # type: ignore[assignment]
        if (
            low_kind is not Kind.NUMBER
            or high_kind is not Kind.NUMBER
            or low != low
            or high != high
        ):
            return None  # NULL or NaN bounds: rare enough to leave to the evaluator
    name = node.operand.name
    if not node.negated:
        # BETWEEN is TRUE inside; FALSE when present and not inside (NaN, unlike types).
        return [(FieldTest(name, InRange(low, True, high, True), not want),)]  # type: ignore[arg-type]
    below = InRange(None, False, low, False)  # type: ignore[arg-type]
    above = InRange(high, False, None, False)  # type: ignore[arg-type]
    if want:  # NOT BETWEEN is x < low OR x > high
        return [(FieldTest(name, below),), (FieldTest(name, above),)]
    # ... and FALSE when both of those are FALSE: present and not below, present and not above.
    return [_canonical([FieldTest(name, below, True), FieldTest(name, above, True)])]


def evaluate_constant(node: Node) -> object:
    """The value of an identifier-free value expression (``-(5)``, ``2 * 3``, ``'eu'``)."""
    from bitsift.selectors.evaluate import value_of

    return value_of(node, {})


def _required_fields(node: Node) -> list[str]:
    """Fields that must be present for ``node`` to be TRUE."""
    if isinstance(node, (Comparison, Between)):
        if isinstance(node, Comparison):
            operands: tuple[Node, ...] = (node.left, node.right)
        elif node.negated:
            # x NOT BETWEEN a AND b is x < a OR x > b: TRUE with only one bound present.
            operands = (node.operand,)
        else:
            operands = (node.operand, node.low, node.high)
        if all(isinstance(operand, _VALUE_NODES) for operand in operands) and not any(
            _has_condition(operand) for operand in operands
        ):
            return sorted(set().union(*(identifiers(operand) for operand in operands)))
    return []


def _has_condition(node: Node) -> bool:
    if isinstance(node, Arithmetic):
        return _has_condition(node.left) or _has_condition(node.right)
    if isinstance(node, Negate):
        return _has_condition(node.operand)
    return not isinstance(node, _VALUE_NODES)


def _equality(name: str, key: Key, kind: Kind, operator: str, want: bool) -> DNF:
    equal = Equals(frozenset([key]))
    if (operator == "=") == want:
        # '=' TRUE, or '<>' FALSE: for '<>' FALSE also covers unlike types, handled below.
        if operator == "=":
            return [(FieldTest(name, equal),)]
        # x <> v is FALSE where x is present and (of another type, or equal to v)
        return [(FieldTest(name, OfType(kind), True),), (FieldTest(name, equal),)]
    not_equal = FieldTest(name, equal, True)
    if operator == "=":
        return [(not_equal,)]  # '=' FALSE: present and not equal (unlike types included)
    return [_canonical([FieldTest(name, OfType(kind)), not_equal])]  # '<>' TRUE: same type, differs


def _nan_equality(name: str, operator: str, want: bool) -> DNF:
    present = FieldTest(name, MISSING, True)
    number = FieldTest(name, OfType(Kind.NUMBER))
    if operator == "=":
        return list(_NEVER) if want else [(present,)]
    return [(number,)] if want else [(FieldTest(name, OfType(Kind.NUMBER), True),)]


def _ordering_nan(name: str, want: bool) -> DNF:
    # Every ordering against NaN is FALSE for a present value.
    return list(_NEVER) if want else [(FieldTest(name, MISSING, True),)]


def _membership(node: In, want: bool) -> DNF:
    name = node.operand.name
    items = node.items
    keys: frozenset[Key]
    if all([type(item) is StringLiteral for item in items]):  # the usual list: strings only
        keys = frozenset([("s", item.value) for item in items])
        has_numbers = False
    else:
        found: set[Key] = set()
        for item in items:
            kind, value = classify(item.value)
            key = key_of(kind, value)
            if key is not None:
                found.add(key)
        keys = frozenset(found)
        has_numbers = True
    if node.negated != want:  # IN is TRUE
        return [(FieldTest(name, Equals(keys)),)] if keys else []
    # IN is FALSE: a string not in the list, or (when the list has numbers) a number not in it.
    non_member = FieldTest(name, Equals(keys), True)
    dnf: DNF = [_canonical([FieldTest(name, OfType(Kind.STRING)), non_member])]
    if has_numbers:
        dnf.append(_canonical([FieldTest(name, OfType(Kind.NUMBER)), non_member]))
    return dnf


def _like(node: Like, want: bool) -> DNF:
    name = node.operand.name
    matcher = compile_like(node.pattern, node.escape)
    string = FieldTest(name, OfType(Kind.STRING))
    if matcher.is_exact:
        criterion: Equals | HasPrefix | None = Equals(frozenset([("s", matcher.prefix)]))
    elif matcher.is_prefix_only:
        criterion = HasPrefix(matcher.prefix)
    else:
        criterion = None
    if node.negated != want:  # LIKE is TRUE
        if criterion is not None:
            return [(FieldTest(name, criterion),)]
        narrow = FieldTest(name, HasPrefix(matcher.prefix)) if matcher.prefix else string
        return [_canonical([narrow, Residual(_positive_like(node), True)])]
    # LIKE is FALSE: a string that does not match.
    if criterion is not None:
        return [_canonical([string, FieldTest(name, criterion, True)])]
    return [_canonical([string, Residual(_positive_like(node), False)])]


def _positive_like(node: Like) -> Like:
    return Like(node.operand, node.pattern, node.escape, negated=False)
