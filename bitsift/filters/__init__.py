"""Receiver-side filtering: drop, as cheaply as possible, the messages no local subscription wants.

:class:`ReceiverFilter` answers "does any subscription here match?" (see
:mod:`bitsift.filters.receiver_filter`); :mod:`bitsift.filters.receivers` feeds it from a ZeroMQ
SUB socket or UDP datagrams. pyzmq is imported only when a ZeroMQ receiver is made.
"""

from bitsift.filters.receiver_filter import FilterCounters, ReceiverFilter
from bitsift.filters.wire import MalformedMessage, Message, WireLimits

__all__ = ["FilterCounters", "MalformedMessage", "Message", "ReceiverFilter", "WireLimits"]
