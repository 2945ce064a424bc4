"""The selector language: JMS message selectors and AMQP/MQTT topic patterns.

Text goes through :mod:`~bitsift.selectors.parser` (a Lark LALR grammar in ``selector.lark``) into
the immutable tree of :mod:`~bitsift.selectors.ast`; :mod:`~bitsift.selectors.evaluate` gives that
tree its one exact, three-valued meaning, which every fast path in bitsift is tested against.
"""
