"""What of the lock gate the engine's face offers outside code (common/engine/core/declared.py)."""

DOCUMENT = {
    "common.engine.gates.lock.documents": ("LockTemplate", "TaskLock", "UnitLock"),
    "common.engine.gates.lock.table": ("KeyLock", "LockHolder", "LockWaiter"),
}
# A lock granted or waited for; the lock table's decisions, which its relay applies.
CHANGES = {
    "common.engine.gates.lock.changes": ("lock_granted", "lock_waiting"),
    "common.engine.gates.lock.table": ("join", "leave", "line_of", "promote", "stale_member"),
    "common.engine.gates.lock.unit_locks": ("unit_lock_granted",),
}
# Keys, modes, what a task's lock asks for, a declared lock's template.
VIEWS = {
    "common.engine.gates.lock.modes": ("EXCLUSIVE", "EXCLUSIVE_SHARES", "fits", "shares_of"),
    "common.engine.gates.lock.task_lock": ("LockAsk", "ask_for", "asked", "described"),
    "common.engine.gates.lock.spec": ("lock_template",),
    "common.engine.gates.lock.plan": ("lock_keys",),  # the keys a dry run's plan shows
    "common.engine.gates.lock.unit_locks": ("parse_member", "unit_lock"),  # a step lock's member
}
