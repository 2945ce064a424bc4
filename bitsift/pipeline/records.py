"""What the pipeline does to one Arrow batch on an executor: check, match, and account every row.

Every input row leaves exactly one output row, with a ``status``: ``routed`` (it matched at least
one subscription; ``subscriptions`` lists them), ``unmatched``, or ``rejected`` (a bad record, with
a ``reason`` and the original ``record`` so it can be fixed and replayed). Because no row can
vanish between input and output, the job can prove ``rows in = routed + unmatched + rejected``.

Bad records are:

* a JSON line that does not parse, or is not an object (reason names the JSON error and column);
* a record larger than ``max_record_bytes`` (default 1 MiB), which would otherwise let one line
  exhaust an executor's memory;
* a record without an id, or whose id or topic is not a string or integer;
* a record whose value for a property the subscriptions test has the wrong type: for example a
  string ``price`` when every selector compares ``price`` as a number. The selector language would
  quietly make such a comparison FALSE; for a recorded dataset, that is almost always a producer
  bug the operator wants to see, so the pipeline reports it instead (turn it off with
  ``check_types=False`` to get the language's answer).

Only pyarrow and numpy are needed here, so this logic is tested without Spark.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy

from bitsift.index.batch import BatchMatcher, MatchedPairs
from bitsift.index.criteria import Equals, HasPrefix, InRange, Kind, classify
from bitsift.index.normalize import to_dnf
from bitsift.models import Subscription
from bitsift.selectors.values import lookup

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "STATUSES",
    "Checks",
    "Outcome",
    "required_kinds",
    "process_json_lines",
    "process_columns",
]

DEFAULT_MAX_RECORD_BYTES = 1 << 20
STATUSES = ("routed", "unmatched", "rejected")
_KIND_WORDS = {Kind.NUMBER: "a number", Kind.STRING: "a string", Kind.BOOLEAN: "a boolean"}


def required_kinds(subscriptions: Iterable[Subscription]) -> dict[str, Kind]:
    """The one selector type each property is tested as, for properties tested as just one.

    A property compared with numbers everywhere (``price < 50``, ``price BETWEEN 1 AND 2``) must be
    a number; one tested with strings or LIKE must be a string. A property tested as several
    types (``a = 1 OR a = 'x'``), or only through tests no index can serve, requires nothing.

    >>> from bitsift import Subscription
    >>> sorted(required_kinds([Subscription(id="s", selector="p < 5 AND s LIKE 'a%'")]).items())
    [('p', <Kind.NUMBER: 'number'>), ('s', <Kind.STRING: 'string'>)]
    """
    seen: dict[str, set[Kind]] = {}
    for subscription in subscriptions:
        for conjunction in to_dnf(subscription.parsed_selector.ast):
            for atom in conjunction:
                criterion = getattr(atom, "criterion", None)
                if criterion is None:
                    continue
                kinds = seen.setdefault(atom.field, set())  # type: ignore[union-attr]
                if isinstance(criterion, InRange):
                    kinds.add(Kind.NUMBER)
                elif isinstance(criterion, HasPrefix):
                    kinds.add(Kind.STRING)
                elif isinstance(criterion, Equals):
                    tags = {key[0] for key in criterion.keys}
                    kinds.update(
                        {"n": Kind.NUMBER, "s": Kind.STRING, "b": Kind.BOOLEAN}[t] for t in tags
                    )
    return {name: next(iter(kinds)) for name, kinds in seen.items() if len(kinds) == 1}


@dataclass(frozen=True)
class Checks:
    """The bad-record rules of one run (see the module docstring)."""

    required: Mapping[str, Kind] = field(default_factory=dict)
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES
    check_types: bool = True


@dataclass
class Outcome:
    """One batch's result: per input row, its id, status, reason, record and matches."""

    message_ids: Any
    """A list of ``str | None``, or an Arrow string array (typed input: no Python per row)."""
    status: list[str]
    reasons: list[str | None]
    records: list[str | None]
    pairs: MatchedPairs
    """Matches, with ``rows`` numbered over *all* rows of the batch (rejected rows have none)."""

    def _lists(self) -> tuple[Any, Any]:
        """List offsets per row, and subscription numbers sorted by id within each row."""
        import pyarrow

        pairs = self.pairs
        counts = numpy.bincount(pairs.rows, minlength=len(self.status))
        offsets = numpy.concatenate(([0], numpy.cumsum(counts))).astype(numpy.int32)
        rank = numpy.empty(len(pairs.ids), numpy.int64)
        rank[numpy.argsort(numpy.array(pairs.ids, dtype=object))] = numpy.arange(len(pairs.ids))
        order = numpy.lexsort((rank[pairs.subscriptions], pairs.rows))
        return pyarrow.array(offsets), pyarrow.array(pairs.subscriptions[order], pyarrow.int64())

    def subscription_lists(self) -> Any:
        """The subscription ids of each row, sorted, as an Arrow list array."""
        import pyarrow

        offsets, numbers = self._lists()
        ids = pyarrow.array(self.pairs.ids, pyarrow.string())
        return pyarrow.ListArray.from_arrays(offsets, ids.take(numbers))

    def to_arrow(self, client_of: Mapping[str, str | None]) -> Any:
        """The batch as an Arrow record batch of :func:`output_schema`."""
        import pyarrow

        offsets, numbers = self._lists()
        ids = pyarrow.array(self.pairs.ids, pyarrow.string())
        clients = pyarrow.array([client_of.get(i) for i in self.pairs.ids], pyarrow.string())
        return pyarrow.RecordBatch.from_arrays(
            [
                _strings(self.message_ids),
                pyarrow.ListArray.from_arrays(offsets, ids.take(numbers)),
                pyarrow.ListArray.from_arrays(offsets, clients.take(numbers)),
                _strings(self.status),
                _strings(self.reasons),
                _strings(self.records),
            ],
            schema=output_schema(),
        )


def _strings(values: Any) -> Any:
    """An Arrow string array from a list (or an Arrow array already)."""
    import pyarrow

    if isinstance(values, list):
        if values and all(value is None for value in values):
            return pyarrow.nulls(len(values), pyarrow.string())
        return pyarrow.array(values, pyarrow.string())
    return values.cast(pyarrow.string())


def output_schema() -> Any:
    """The Arrow schema of :meth:`Outcome.to_arrow` (and of the Spark stage's output)."""
    import pyarrow

    return pyarrow.schema(
        [
            ("message_id", pyarrow.string()),
            ("subscriptions", pyarrow.list_(pyarrow.string())),
            ("clients", pyarrow.list_(pyarrow.string())),
            ("status", pyarrow.string()),
            ("reason", pyarrow.string()),
            ("record", pyarrow.string()),
        ]
    )


def _id_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _type_problem(properties: Mapping[str, Any], required: Mapping[str, Kind]) -> str | None:
    for name, kind in required.items():
        value = lookup(properties, name)
        if value is None:
            continue
        found = classify(value)[0]
        if found is not kind and found is not Kind.MISSING:
            shown = json.dumps(value, default=repr)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            return (
                f"property {name!r} is {shown}, but the subscriptions test it as "
                f"{_KIND_WORDS[kind]}"
            )
    return None


def _spread(pairs: MatchedPairs, accepted: list[int], row_count: int) -> MatchedPairs:
    """Renumber the pairs of the accepted rows to the rows of the whole batch."""
    mapping = numpy.array(accepted, numpy.int64)
    rows = mapping[pairs.rows] if len(pairs.rows) else pairs.rows
    return MatchedPairs(row_count, rows, pairs.subscriptions, pairs.ids)


def process_json_lines(
    lines: Sequence[str | None],
    matcher: BatchMatcher,
    checks: Checks,
    *,
    id_field: str = "id",
    topic_field: str = "topic",
) -> Outcome:
    """Parse, check and match JSON lines (one message object per line).

    The object's ``id_field`` is the message id and ``topic_field`` its topic; every other key
    is a property (nested objects are reachable with dotted names).
    """
    count = len(lines)
    message_ids: list[str | None] = [None] * count
    status = ["unmatched"] * count
    reasons: list[str | None] = [None] * count
    records: list[str | None] = [None] * count
    accepted: list[int] = []
    properties: list[dict[str, Any]] = []
    topics: list[str | None] = []
    limit = checks.max_record_bytes
    for row, line in enumerate(lines):
        reason = None
        text = line if line is not None else ""
        if limit is not None and len(text) > limit // 4 and len(text.encode()) > limit:
            reason = f"record of {len(text.encode()):,} bytes is over the limit of {limit:,}"
            text = text[:200] + "..."
        else:
            try:
                record = json.loads(text)
            except (ValueError, RecursionError) as error:
                reason = f"not valid JSON: {error}"
            else:
                reason = _record_problem(record, id_field, topic_field, checks)
                if reason is None:
                    message_ids[row] = _id_text(record.pop(id_field))
                    topic = record.pop(topic_field, None)
                    accepted.append(row)
                    properties.append(record)
                    topics.append(topic)
                    continue
                message_ids[row] = (
                    _id_text(record.get(id_field)) if isinstance(record, dict) else None
                )
        status[row] = "rejected"
        reasons[row] = reason
        records[row] = text
    pairs = _spread(matcher.match_pairs(properties, topics), accepted, count)
    for row in set(pairs.rows.tolist()):
        status[row] = "routed"
    return Outcome(message_ids, status, reasons, records, pairs)


def _record_problem(record: object, id_field: str, topic_field: str, checks: Checks) -> str | None:
    if not isinstance(record, dict):
        return f"a message must be a JSON object, not {type(record).__name__}"
    if _id_text(record.get(id_field)) is None:
        if record.get(id_field) is None:
            return f"the record has no {id_field!r}"
        return f"{id_field!r} must be a string or an integer"
    topic = record.get(topic_field)
    if topic is not None and not isinstance(topic, str):
        return f"{topic_field!r} must be a string"
    if checks.check_types:
        return _type_problem(
            {k: v for k, v in record.items() if k not in (id_field, topic_field)}, checks.required
        )
    return None


def process_columns(
    batch: Any,
    matcher: BatchMatcher,
    checks: Checks,
    *,
    id_column: str | None = "id",
    topic_column: str | None = "topic",
) -> Outcome:
    """Check and match an Arrow batch with one column per property (typed input: Parquet, a
    DataFrame). Type checks are per column: a column of the wrong type rejects its non-null rows.
    """
    import pyarrow
    import pyarrow.compute

    count = batch.num_rows
    names = batch.schema.names
    message_ids: Any
    if id_column is not None and id_column in names:
        message_ids = batch.column(names.index(id_column)).cast(pyarrow.string())
    else:
        message_ids = [None] * count
    topics = None
    if topic_column is not None and topic_column in names:
        topics = batch.column(names.index(topic_column))
    keep = [name for name in names if name not in (id_column, topic_column)]
    properties = pyarrow.Table.from_batches([batch]).select(keep)
    rejected = numpy.zeros(count, bool)
    reasons: list[str | None] = [None] * count
    if checks.check_types and checks.required:
        from bitsift.index.batch import _arrow_field

        for name, kind in checks.required.items():
            values = _arrow_field(properties, name)
            found = _arrow_kind(values.type)
            if found is None or found is kind:
                continue
            bad = values.is_valid().to_numpy(zero_copy_only=False) & ~rejected
            for row in numpy.flatnonzero(bad).tolist():
                reasons[row] = (
                    f"property {name!r} is a column of type {values.type}, but the "
                    f"subscriptions test it as {_KIND_WORDS[kind]}"
                )
            rejected |= bad
    if checks.max_record_bytes is not None:
        sizes = numpy.zeros(count, numpy.int64)
        for column in properties.columns:
            if pyarrow.types.is_string(column.type) or pyarrow.types.is_binary(column.type):
                lengths = pyarrow.compute.binary_length(column).fill_null(0)
                sizes += lengths.to_numpy().astype(numpy.int64)
            else:
                sizes += 8
        oversized = (sizes > checks.max_record_bytes) & ~rejected
        for row in numpy.flatnonzero(oversized).tolist():
            reasons[row] = (
                f"record of about {int(sizes[row]):,} bytes is over the limit of "
                f"{checks.max_record_bytes:,}"
            )
        rejected |= oversized
    status = ["unmatched"] * count
    records: list[str | None] = [None] * count
    if rejected.any():
        accepted = numpy.flatnonzero(~rejected)
        bad_rows = numpy.flatnonzero(rejected).tolist()
        for row, values in zip(bad_rows, batch.take(bad_rows).to_pylist(), strict=True):
            status[row] = "rejected"
            records[row] = json.dumps(values, default=str)[:10_000]
        subset = properties.take(accepted)
        subset_topics = topics.take(accepted) if topics is not None else None
        pairs = _spread(matcher.match_pairs(subset, subset_topics), accepted.tolist(), count)
    else:
        pairs = matcher.match_pairs(properties, topics)
    if len(pairs.rows):
        routed = numpy.zeros(count, bool)
        routed[pairs.rows] = True
        status = numpy.where(routed, "routed", numpy.array(status)).tolist()
    return Outcome(message_ids, status, reasons, records, pairs)


def _arrow_kind(kind: Any) -> Kind | None:
    """The selector type of every value of an Arrow type; None when values may differ (null)."""
    import pyarrow

    if pyarrow.types.is_null(kind):
        return None
    if pyarrow.types.is_boolean(kind):
        return Kind.BOOLEAN
    if (
        pyarrow.types.is_integer(kind)
        or pyarrow.types.is_floating(kind)
        or pyarrow.types.is_decimal(kind)
    ):
        return Kind.NUMBER
    if pyarrow.types.is_string(kind) or pyarrow.types.is_large_string(kind):
        return Kind.STRING
    if pyarrow.types.is_dictionary(kind):
        return _arrow_kind(kind.value_type)
    return Kind.OTHER
