"""Step kinds: a command, a sub-flow, a step over item records.

Design: docs/design/engine.md, docs/design/sub-flows.md, docs/design/item-records.md.
"""
