"""Gates: what holds a task's or a unit's forward work back (locks, waits, freeze windows, a
pause, a deadline, a module drain).

Design: docs/design/gates.md, docs/design/operations.md, docs/design/locks.md.
"""
