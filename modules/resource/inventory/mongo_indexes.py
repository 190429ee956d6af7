"""The inventory's MongoDB indexes, offered to common.store.mongo.indexes through the resource
module's `mongo_indexes` hook: created, checked and migrated with the rest of baton's."""

from __future__ import annotations

from pymongo import ASCENDING

from common.store.mongo.indexes import IndexSpec, ModuleIndexes

INDEXES = ModuleIndexes(
    specs={
        "inventory_hosts": [
            # One key names one claim across all hosts (a unique multikey index spans documents).
            # Only documents holding a claim are indexed: hosts without any would collide on "missing".
            IndexSpec(
                "claim_key",
                [("claims.key", ASCENDING)],
                {"unique": True, "partialFilterExpression": {"claims.key": {"$exists": True}}},
            ),
            IndexSpec("claim_expiry", [("claims.state", ASCENDING), ("claims.expires_at", ASCENDING)]),
            IndexSpec("claim_closed", [("claims.state", ASCENDING), ("claims.updated_at", ASCENDING)]),
            IndexSpec("claim_holder", [("claims.holder", ASCENDING)]),
        ],
        # Closed claims, moved out of their host's document (see modules.resource.inventory.mongo).
        "inventory_closed_claims": [
            IndexSpec("holder", [("holder", ASCENDING)]),
            IndexSpec("released_by", [("released_by", ASCENDING)]),
            IndexSpec("updated_at", [("updated_at", ASCENDING)]),
        ],
        # Releases in progress or done, one per release key (see modules.resource.inventory.mongo.release).
        "inventory_releases": [],
    },
    # Names once created and no longer used: `migrate` drops them.
    obsolete={"inventory_hosts": ["claim_released_by"]},
)
