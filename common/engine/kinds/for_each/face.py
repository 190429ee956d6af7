"""What of the for_each kind the engine's face offers outside code (common/engine/core/declared.py)."""

DOCUMENT = {
    "common.engine.kinds.for_each.item_record": (
        "ItemRecord", "OWES_FAILED", "OWES_ROLLBACK_SUCCESSOR", "OWES_SETTLED", "OWES_SUCCESSOR", "OWES_TOLERATE",
        "item_record_id",
    ),
}
CHANGES = {
    # The changes of a step's item records, and of the task they belong to.
    "common.engine.kinds.for_each.changes": ("item_failed", "items_settled"),
    "common.engine.kinds.for_each.item_changes": (
        "applied_owes_done", "cancel_item", "claim_item", "expire_item", "finish_item_attempt", "new_records",
        "release_item", "renew_item_lease", "start_item_rollback", "start_successor", "withdraw_unpublished",
    ),
    "common.engine.kinds.for_each.item_actions": (
        "compensate_item", "noted_item_skip", "republish_pending", "retry_item_rollback", "skip_item", "stop_item",
    ),
    "common.engine.kinds.for_each.item_drain": ("claimed_releasing", "hold_item"),
    "common.engine.kinds.for_each.item_tolerance": ("take_budget_place", "tolerate_item"),
    "common.engine.kinds.for_each.hold": ("redrive_item",),
    # Set once, where a process wires the engine: whether for_each steps keep their items in records;
    # and the code of a step's settle refused when its items do not add up (the relay logs it).
    "common.engine.kinds.for_each.records": ("UNACCOUNTED", "use_records", "wire_records"),
}
# A step's items, inline or in records of their own: counts, pages, limits, its failure budget.
VIEWS = {
    "common.engine.kinds.for_each.item_views": (
        "DEFAULT_PAGE", "ItemQuery", "ItemQueryError", "MAX_PAGE", "STATES_PATTERN", "counts_view", "inline_counts",
        "inline_page", "is_fan_out", "item_doc", "keeps_records", "owed_page", "paged", "parse_item_query", "records_counts", "step_cursor",
        "stored_states",
    ),
    "common.engine.kinds.for_each.records": ("inline_view",),
    "common.engine.kinds.for_each.item_changes": ("chain_count", "going_forward", "opens_forward"),
    "common.engine.kinds.for_each.item_drain": ("IN_FLIGHT_LOOK",),
    "common.engine.kinds.for_each.item_limits": ("too_many_items",),
    "common.engine.kinds.for_each.budget": ("describe_budget",),
    "common.engine.kinds.for_each.item_tolerance": ("budget_place",),
}
