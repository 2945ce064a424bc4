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
"""

from __future__ import annotations

from itertools import product

from bitsift.index.criteria import (
    MISSING,
    Atom,
    Equals,
    FieldTest,
    HasPrefix,
    InRange,
    Key,
    Kind,
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

__all__ = ["Conjunction", "MAX_CONJUNCTIONS", "to_dnf", "explain"]

Conjunction = tuple[Atom, ...]
"""Atoms that must all hold, sorted canonically so that equal conjunctions compare equal."""
DNF = list[Conjunction]

MAX_CONJUNCTIONS = 64
"""Most conjunctions one node may expand to before it is checked as a residual instead."""

_UNSEEN: DNF = []
_ALWAYS: DNF = [()]
_NEVER: DNF = []
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_VALUE_NODES = (
    Identifier,
    StringLiteral,
    IntegerLiteral,
    FloatLiteral,
    BooleanLiteral,
    Negate,
    Arithmetic,
)


def to_dnf(node: Node | None, max_conjunctions: int = MAX_CONJUNCTIONS) -> DNF:
    """The conjunctions whose union is exactly where ``node`` is TRUE.

    >>> from bitsift import parse
    >>> for conjunction in to_dnf(parse("NOT (a = 1 OR b IS NULL)").ast):
    ...     print(" AND ".join(str(atom) for atom in conjunction))
    a present and not in {1} AND b present
    """
    if node is None:
        return list(_ALWAYS)
    return _Normaliser(max_conjunctions).truth(node, want=True)


def explain(node: Node | None) -> str:
    """How the index sees a selector: one line per conjunction, atoms joined by AND."""
    lines = [
        " AND ".join(str(atom) for atom in conjunction) or "TRUE" for conjunction in to_dnf(node)
    ]
    return "\n".join(lines) if lines else "never TRUE"


_ORDER_CACHE: dict[Atom, tuple[int, str]] = {}
_LEAF_CACHE: dict[tuple[Node, bool], DNF | None] = {}
_CACHE_LIMIT = 1 << 16
"""Entries each of the two memo tables above may hold before it is emptied (bounded memory)."""


def _atom_order(atom: Atom) -> tuple[int, str]:
    # str() of an atom costs microseconds and the same atoms recur across thousands of
    # subscriptions, so the canonical sort key is remembered.
    order = _ORDER_CACHE.get(atom)
    if order is None:
        if len(_ORDER_CACHE) >= _CACHE_LIMIT:
            _ORDER_CACHE.clear()
        order = _ORDER_CACHE[atom] = (1 if isinstance(atom, Residual) else 0, str(atom))
    return order


def _conjoin(parts: list[Conjunction]) -> Conjunction:
    atoms = dict.fromkeys(atom for part in parts for atom in part)
    # "f present" adds nothing beside another test on f that only a present value can pass.
    tested = {
        atom.field
        for atom in atoms
        if isinstance(atom, FieldTest) and not _is_presence(atom) and _needs_presence(atom)
    }
    kept = [atom for atom in atoms if not (_is_presence(atom) and atom.field in tested)]  # type: ignore[union-attr]
    return tuple(sorted(kept, key=_atom_order))


def _is_presence(atom: Atom) -> bool:
    return isinstance(atom, FieldTest) and atom.negated and atom.criterion == MISSING


def _needs_presence(atom: FieldTest) -> bool:
    # Every field test but "missing" fails for an absent value.
    return atom.negated or atom.criterion != MISSING


class _Normaliser:
    def __init__(self, max_conjunctions: int) -> None:
        self.max_conjunctions = max_conjunctions
        self._constant: dict[int, bool] = {}  # by id(node); the tree outlives this normaliser

    def is_constant(self, node: Node) -> bool:
        """Whether ``node`` reads no message property; each node is examined once, bottom-up."""
        known = self._constant.get(id(node))
        if known is None:
            if isinstance(node, (And, Or)):
                known = all([self.is_constant(operand) for operand in node.operands])
            elif isinstance(node, Not):
                known = self.is_constant(node.operand)
            else:
                known = not identifiers(node)
            self._constant[id(node)] = known
        return known

    def truth(self, node: Node, want: bool) -> DNF:
        """Conjunctions for where ``node`` evaluates to ``want`` (TRUE or FALSE)."""
        if self.is_constant(node):
            # Constant: decide once with the reference evaluator.
            return list(_ALWAYS) if evaluate(node, {}) is want else list(_NEVER)
        if isinstance(node, Not):
            return self.truth(node.operand, not want)
        if isinstance(node, (And, Or)):
            # TRUE of AND and FALSE of OR need every operand; the other two need any one.
            needs_all = isinstance(node, And) == want
            parts = [self.truth(operand, want) for operand in node.operands]
            dnf = self._product(parts) if needs_all else self._union(parts)
            if dnf is None:
                return [(Residual(node, want),)]
            return dnf
        # Leaves (symbol = 'IBM', side = 'buy', ...) recur across subscriptions: remember them.
        # Their DNF does not depend on the cap, which only binds where AND and OR combine.
        key = (node, want)
        dnf = _LEAF_CACHE.get(key, _UNSEEN)
        if dnf is _UNSEEN:
            if len(_LEAF_CACHE) >= _CACHE_LIMIT:
                _LEAF_CACHE.clear()
            dnf = _LEAF_CACHE[key] = self._leaf(node, want)
        if dnf is None:
            return [self._residual(node, want)]
        return list(dnf)

    def _union(self, parts: list[DNF]) -> DNF | None:
        seen: dict[Conjunction, None] = {}
        for part in parts:
            for conjunction in part:
                seen[conjunction] = None
        if () in seen:
            return list(_ALWAYS)
        return list(seen) if len(seen) <= self.max_conjunctions else None

    def _product(self, parts: list[DNF]) -> DNF | None:
        size = 1
        for part in parts:
            size *= len(part)
            if size > self.max_conjunctions:
                return None
        seen: dict[Conjunction, None] = {}
        for combination in product(*parts):
            seen[_conjoin(list(combination))] = None
        return list(seen)

    def _residual(self, node: Node, want: bool) -> Conjunction:
        atoms: list[Atom] = [Residual(node, want)]
        if want:
            # A comparison of values is TRUE only when every value in it is present: saying so
            # lets the index narrow the candidates before the evaluator runs.
            atoms.extend(FieldTest(name, MISSING, True) for name in _required_fields(node))
        return _conjoin([tuple(atoms)])

    def _leaf(self, node: Node, want: bool) -> DNF | None:
        """DNF for a condition on one field, or None when it needs the evaluator."""
        if isinstance(node, Identifier):
            return _equality(node.name, ("b", True), Kind.BOOLEAN, "=", want)
        if isinstance(node, IsNull):
            return [(FieldTest(node.operand.name, MISSING, node.negated == want),)]
        if isinstance(node, Comparison):
            return self._comparison(node, want)
        if isinstance(node, Between):
            return self._between(node, want)
        if isinstance(node, In):
            return _membership(node, want)
        if isinstance(node, Like):
            return _like(node, want)
        return None

    def _comparison(self, node: Comparison, want: bool) -> DNF | None:
        operator = node.operator
        left, right = node.left, node.right
        if not isinstance(left, Identifier):
            left, right, operator = right, left, _FLIPPED[operator]  # type: ignore[assignment]
        if (
            not isinstance(left, Identifier)
            or identifiers(right)
            or not isinstance(right, _VALUE_NODES)
        ):
            return None
        kind, value = classify(evaluate_constant(right))
        if kind is Kind.MISSING:
            return list(_NEVER)  # a comparison with NULL is UNKNOWN: never TRUE nor FALSE
        if operator in ("=", "<>"):
            key = key_of(kind, value)
            if key is None:  # NaN: equal to nothing, so '=' is FALSE and '<>' TRUE for numbers
                return _nan_equality(left.name, operator, want)
            return _equality(left.name, key, kind, operator, want)
        if kind is not Kind.NUMBER:
            return None  # ordering a string or boolean: the parser refuses most; evaluator decides
        if value != value:
            return _ordering_nan(left.name, want)
        low_bound = operator in (">", ">=")
        inclusive = operator in (">=", "<=")
        interval = (
            InRange(value, inclusive, None, False)  # type: ignore[arg-type]
            if low_bound
            else InRange(None, False, value, inclusive)  # type: ignore[arg-type]
        )
        return [(FieldTest(left.name, interval, not want),)]

    def _between(self, node: Between, want: bool) -> DNF | None:
        if (
            not isinstance(node.operand, Identifier)
            or identifiers(node.low)
            or identifiers(node.high)
        ):
            return None
        low_kind, low = classify(evaluate_constant(node.low))
        high_kind, high = classify(evaluate_constant(node.high))
        if (
            low_kind is not Kind.NUMBER
            or high_kind is not Kind.NUMBER
            or low != low
            or high != high
        ):
            return None  # NULL or NaN bounds: rare enough to leave to the evaluator
        name = node.operand.name
        inside = FieldTest(name, InRange(low, True, high, True))  # type: ignore[arg-type]
        below = FieldTest(name, InRange(None, False, low, False))  # type: ignore[arg-type]
        above = FieldTest(name, InRange(high, False, None, False))  # type: ignore[arg-type]
        if not node.negated:
            # BETWEEN is TRUE inside; FALSE when present and not inside (NaN, unlike types).
            return [(inside,)] if want else [(FieldTest(name, inside.criterion, True),)]
        if want:  # NOT BETWEEN is x < low OR x > high
            return [(below,), (above,)]
        # ... and FALSE when both of those are FALSE: present and not below, present and not above.
        return [
            _conjoin(
                [(FieldTest(name, below.criterion, True), FieldTest(name, above.criterion, True))]
            )
        ]


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
    equal = FieldTest(name, Equals(frozenset([key])))
    not_equal = FieldTest(name, equal.criterion, True)
    if (operator == "=") == want:
        # '=' TRUE, or '<>' FALSE: for '<>' FALSE also covers unlike types, handled below.
        if operator == "=":
            return [(equal,)]
        # x <> v is FALSE where x is present and (of another type, or equal to v)
        return [(FieldTest(name, OfType(kind), True),), (equal,)]
    if operator == "=":
        return [(not_equal,)]  # '=' FALSE: present and not equal (unlike types included)
    return [_conjoin([(FieldTest(name, OfType(kind)), not_equal)])]  # '<>' TRUE: same type, differs


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
    keys: set[Key] = set()
    for item in node.items:
        kind, value = classify(item.value)
        key = key_of(kind, value)
        if key is not None:
            keys.add(key)
    has_numbers = any(key[0] == "n" for key in keys) or any(
        not isinstance(item, StringLiteral) for item in node.items
    )
    member = FieldTest(name, Equals(frozenset(keys)))
    non_member = FieldTest(name, member.criterion, True)
    if node.negated != want:  # IN is TRUE
        return [(member,)] if keys else list(_NEVER)
    # IN is FALSE: a string not in the list, or (when the list has numbers) a number not in it.
    dnf: DNF = [_conjoin([(FieldTest(name, OfType(Kind.STRING)), non_member)])]
    if has_numbers:
        dnf.append(_conjoin([(FieldTest(name, OfType(Kind.NUMBER)), non_member)]))
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
        return [_conjoin([(narrow, Residual(_positive_like(node), True))])]
    # LIKE is FALSE: a string that does not match.
    if criterion is not None:
        return [_conjoin([(string, FieldTest(name, criterion, True))])]
    return [_conjoin([(string, Residual(_positive_like(node), False))])]


def _positive_like(node: Like) -> Like:
    return Like(node.operand, node.pattern, node.escape, negated=False)
