"""Saving and loading a subscription index: versioned, checksummed, written atomically.

The file holds the validated subscriptions, not the bitmaps: loading re-parses and re-indexes them,
so a file written by an older bitsift, or edited by hand, can never produce an index that disagrees
with the language. The layout is three parts:

* a magic line ``bitsift-index`` and the format version, so a wrong file is named as such;
* the SHA-256 of the payload, so truncation and bit rot are caught before anything is built;
* the payload: UTF-8 JSON ``{"subscriptions": [...], "options": {...}}``.

Writing goes to a temporary file in the same directory that is then renamed over the target, so a
crash mid-write leaves the old file intact. A damaged file raises :class:`~bitsift.IndexFileError`;
a half-loaded index is never returned.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from bitsift.errors import IndexFileError
from bitsift.models import Subscription

if TYPE_CHECKING:
    from bitsift.index.subscriptions import SubscriptionIndex

__all__ = ["save_index", "load_index", "FORMAT_VERSION"]

MAGIC = b"bitsift-index"
FORMAT_VERSION = 1


def save_index(index: SubscriptionIndex, path: str | os.PathLike[str]) -> None:
    state = index.__getstate__()
    payload = json.dumps(
        {
            "subscriptions": state["subscriptions"],
            "options": {
                "topic_cache_size": state["topic_cache_size"],
                "max_conjunctions": state["max_conjunctions"],
                "cache_bytes": state["cache_bytes"],
            },
        },
        separators=(",", ":"),
    ).encode("utf-8")
    digest = hashlib.sha256(payload).hexdigest().encode("ascii")
    blob = MAGIC + b" " + str(FORMAT_VERSION).encode("ascii") + b"\n" + digest + b"\n" + payload
    target = Path(path)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(blob)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_index(path: str | os.PathLike[str]) -> SubscriptionIndex:
    from bitsift.index.subscriptions import SubscriptionIndex

    try:
        blob = Path(path).read_bytes()
    except OSError as error:
        raise IndexFileError(f"cannot read index file {path}: {error.strerror or error}") from None
    header, _, rest = blob.partition(b"\n")
    digest, _, payload = rest.partition(b"\n")
    magic, _, version = header.partition(b" ")
    if magic != MAGIC:
        raise IndexFileError(
            f"{path} is not a bitsift index file (it does not start with 'bitsift-index')"
        )
    if version != str(FORMAT_VERSION).encode("ascii"):
        shown = version.decode("ascii", "replace")[:20]
        raise IndexFileError(
            f"{path} is a bitsift index file of format version {shown!r}; "
            f"this bitsift reads version {FORMAT_VERSION}"
        )
    if hashlib.sha256(payload).hexdigest().encode("ascii") != digest:
        raise IndexFileError(
            f"{path} is damaged or truncated: its checksum does not match its contents"
        )
    try:
        document = json.loads(payload)
        entries = document["subscriptions"]
        options = document["options"]
        subscriptions = [Subscription.model_validate(entry) for entry in entries]
        return SubscriptionIndex(
            subscriptions,
            topic_cache_size=int(options["topic_cache_size"]),
            max_conjunctions=int(options["max_conjunctions"]),
            cache_bytes=_optional_int(options.get("cache_bytes")),
        )
    except (ValueError, KeyError, TypeError, ValidationError) as error:
        raise IndexFileError(
            f"{path} has a valid checksum but unreadable contents: {error}"
        ) from None


def _optional_int(value: object) -> int | None:
    """``cache_bytes``: absent (files written before it existed) or null means automatic."""
    return None if value is None else int(value)  # type: ignore[call-overload]
