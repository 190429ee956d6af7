"""What the for_each kind adds to the engine's shared tables (common/engine/core/declared.py): the
entries its item records' relay carries. Read as common.engine.codes, states and outbox are built,
so it imports nothing: its entries' bodies (bodies.py) are named, not imported."""

_ITEMS_BODY = "common.engine.kinds.for_each.bodies:ItemsBody"

FLUSHERS = {"ITEMS": "items"}  # a change of a step's item records (common.relay.items)
# member: (stored value, its body, who flushes it)
OUTBOX_KINDS = {
    "OPEN_ITEMS": ("open_items", _ITEMS_BODY, "items"),  # insert a step's item records, dispatch each chain's head
    "CANCEL_ITEMS": ("cancel_items", _ITEMS_BODY, "items"),  # withdraw the normal item runs nobody claimed
    "ROLLBACK_ITEMS": ("rollback_items", _ITEMS_BODY, "items"),  # start the rollback of each chain's first applied item
    "RESUME_ITEMS": ("resume_items", _ITEMS_BODY, "items"),  # a resumed task starts each idle chain's next item
    # an operator retried or compensated failed item rollbacks
    "REOPEN_ROLLBACKS": ("reopen_item_rollbacks", _ITEMS_BODY, "items"),
    "REDRIVE_ITEMS": ("redrive_items", _ITEMS_BODY, "items"),  # an operator redrove a held step: its failed items run again
}
# Its kind, by name: ("module:Class", its place in the registry's order, common.engine.registry.KINDS).
# Before the sub-flow kind: a step with `for_each` and `flow` runs a child task per item.
KINDS = {"for_each": ("common.engine.kinds.for_each.kind:ForEachKind", 20)}
