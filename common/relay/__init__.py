"""The I/O shells around the engine: whoever carries out what a committed change owes.

The committing process flushes its change's outbox (`outbox`); the sweeper (`sweeper`) relays
what a crash left, expires lapsed runs, delivers webhooks and runs the periodic jobs (lock
reclaim, schedules, the unserved-queue alarm). Each flush is idempotent, so a relay may repeat it.

Design: docs/design/outbox.md; the relay's files are listed in docs/design/engine.md.
"""
