"""Resource commands: reserve capacity for a task, charge it, give it back, release it.

check_resource reserves room on a host for the whole task (the reservation lapses if the task
dies before deduct_resource charges it); restore_resource gives it back when the task rolls back;
release_resource frees what a deleted instance held. Each is idempotent: the claim is keyed by the
task (requests.claim_key) and a release by its step's idempotency key.

Fencing (common/engine/core/fence.py): a check_resource that outlived its claim must not hold capacity for a
task that was rolled back. After restore_resource, the key is closed for good (a closed claim
never reserves again: the inventory port's rule). Before it, restore finds nothing to give back
when no attempt had reserved yet; so check_resource checks its fencing token before reserving,
and after reserving asks whether this step's rollback has begun: if so, it restores the claim
itself (the rollback may have come first).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import structlog

from common.errors import CommandFailed
from common.runtime.demo_commands import add_demo_commands
from common.runtime.registry import CommandContext, CommandRegistry, Verdict
from common.settings import load_settings
from modules.resource.inventory.factory import open_configured_inventory
from modules.resource.inventory.port import (
    Claim,
    ClaimClosed,
    ClaimState,
    Inventory,
    InventoryError,
    NoCapacity,
    UnknownClaim,
)
from modules.resource.requests import claim_key, holder_from, need_from, summary
from modules.resource.settings import load_resource_settings

registry = CommandRegistry("resource")
add_demo_commands(registry)
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ResourceParts:
    inventory: Inventory
    reservation_ttl: float


@registry.setup
def open_parts() -> ResourceParts:
    """Once per command process: the inventory handle its commands share."""
    settings = load_resource_settings()
    common = load_settings()
    # A command child never creates indexes (OSS does, once): see common.store.mongo.indexes.
    inventory = open_configured_inventory(common, settings, timeout_seconds=common.effective_store_timeout, indexes="none")
    return ResourceParts(inventory, settings.reservation_ttl_seconds)


def _parts(ctx: CommandContext) -> ResourceParts:
    return ctx.resources  # type: ignore[no-any-return]


@registry.command()
def check_resource(ctx: CommandContext) -> dict:
    parts = _parts(ctx)
    need, holder = need_from(ctx.parameters), holder_from(ctx.parameters)
    ctx.check_fence()
    now = time.time()
    try:
        claim = parts.inventory.reserve(claim_key(ctx.run_key), need, holder, now, now + parts.reservation_ttl)
    except NoCapacity as exc:
        # Not retried: the answer is not expected to change in seconds, and a retry would hold
        # the task (and its submitter) in suspense. Submit again once capacity is added.
        raise CommandFailed(str(exc), retryable=False) from None
    except InventoryError as exc:
        raise CommandFailed(str(exc), retryable=False) from None
    if claim.state is not ClaimState.RESERVED and claim.state is not ClaimState.DEDUCTED:
        raise CommandFailed(f"this task's reservation is {claim.state.value}; submit a new task", retryable=False)
    if ctx.rollback_reached():
        parts.inventory.restore(claim.key, time.time())
        log.warning("late reservation given back: the task's rollback has begun", host=claim.host, holder=holder)
        raise CommandFailed("the task is being rolled back; reservation given back", retryable=False)
    log.info(reserved_event(claim, now), host=claim.host, holder=holder, **need.as_dict())
    return {"reservation": summary(claim)}


def reserved_event(claim: Claim, now: float) -> str:
    """What this attempt did, said honestly: a replica thawed after its step was handed on finds
    the claim another attempt reserved (and maybe deducted since); it reserved nothing itself."""
    if claim.state is ClaimState.DEDUCTED:
        return "capacity deducted already by a later step; nothing reserved"
    if claim.created_at < now:
        return "capacity reserved already by an earlier attempt; nothing reserved"
    return "capacity reserved"


# Verifies (docs/design/runtime.md, "Verifying an unknown outcome"): after an attempt whose outcome
# is unknown, the claim under this task's key tells what it did. A store out of reach raises: the
# verdict is then unknown.
@registry.verify("check_resource")
def check_resource_done(parameters: dict, ctx: CommandContext) -> Verdict:
    claim = _parts(ctx).inventory.get_claim(claim_key(ctx.run_key), time.time())
    if claim is None or claim.state not in (ClaimState.RESERVED, ClaimState.DEDUCTED):
        return Verdict.not_done("no live reservation under this task's key")
    return Verdict.done({"reservation": summary(claim)}, f"reserved on {claim.host}")


@registry.verify("deduct_resource")
def deduct_resource_done(parameters: dict, ctx: CommandContext) -> Verdict:
    claim = _parts(ctx).inventory.get_claim(claim_key(ctx.run_key), time.time())
    if claim is None or claim.state is not ClaimState.DEDUCTED:
        state = "none" if claim is None else claim.state.value
        return Verdict.not_done(f"this task's claim is not deducted (its state: {state})")
    return Verdict.done({"reservation": summary(claim)}, f"deducted on {claim.host}")


@registry.command()
def deduct_resource(ctx: CommandContext) -> dict:
    try:
        claim = _parts(ctx).inventory.deduct(claim_key(ctx.run_key), time.time())
    except UnknownClaim:
        raise CommandFailed("this task holds no reservation: check_resource must run first", retryable=False) from None
    except ClaimClosed as exc:
        # Typically: the task took longer than the reservation's lifetime, and the capacity may
        # have gone to someone else since. Charging it anyway could overbook the host.
        raise CommandFailed(str(exc), retryable=False) from None
    log.info("capacity deducted", host=claim.host, holder=claim.holder)
    return {"reservation": summary(claim)}


@registry.command()
def restore_resource(ctx: CommandContext) -> dict:
    claim = _parts(ctx).inventory.restore(claim_key(ctx.run_key), time.time())
    if claim is None:
        return {"reservation": None}  # never reserved (check_resource failed): nothing to give back
    log.info("capacity restored", host=claim.host, holder=claim.holder, state=claim.state.value)
    return {"reservation": summary(claim)}


@registry.command()
def release_resource(ctx: CommandContext) -> dict:
    holder = holder_from(ctx.parameters)
    released = _parts(ctx).inventory.release(holder, ctx.idempotency_key, time.time())
    log.info("capacity released", holder=holder, claims=[c.key for c in released])
    return {"released": [summary(c) for c in released]}

