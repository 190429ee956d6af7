"""A plan (oss/services/plans.py) as `baton submit --plan` prints it: when it would start, the
graph one step per line (sub-flows indented), the locks and their holders, the modules, then
warnings."""

from __future__ import annotations

from oss.services.plans import Plan, PlanStep
from oss.cli.render import when


def plan_lines(plan: Plan) -> list[str]:
    lines = [f"plan of a {plan.task_type} task (nothing was created)"]
    if plan.existing_task_id is not None:
        lines.append(f"  the idempotency key names task {plan.existing_task_id}: submitting would answer it, not create one")
    # As the plan says it (each gate's words), a delayed start with its time as the CLI writes times.
    start = f"at {when(plan.start.at)}" if plan.start.when == "at" else plan.start.text or plan.start.when
    lines.append(f"  starts: {start}" + "".join(f"\n    - {reason}" for reason in plan.start.reasons))
    lines.append("  steps:")
    lines += [line for step in plan.steps for line in _step_lines(step, "    ")]
    if plan.locks:
        lines.append("  locks:")
        for lock in plan.locks:
            state = "free" if lock.free else f"held by {', '.join(lock.holders) or 'nobody'}, {lock.waiting} waiting"
            lines.append(f"    {lock.key} (limit {lock.limit}, {lock.scope}): {state}")
    if plan.rate is not None:
        rate = plan.rate
        state = f"full, next slot at {when(rate.next_slot_at)}" if rate.next_slot_at is not None else \
            f"{rate.slots_left} start slots left now" if rate.slots_left else "a start slot free now"
        lines.append(f"  rate: {rate.key} ({rate.limit} per {rate.per_seconds:g}s): {state}")
    lines.append("  modules:")
    for module in plan.modules:
        state = ("live" if module.live else "NOT LIVE") + (", DRAINED" if module.drained else "")
        missing = f"; does not serve {', '.join(module.missing)}" if module.live and module.missing else ""
        lines.append(f"    {module.module:<16} {state}  needs {', '.join(module.needed)}{missing}")
    lines += [f"  warning: {warning}" for warning in plan.warnings]
    return lines


def _step_lines(step: PlanStep, indent: str) -> list[str]:
    what = f"{step.normal.module}.{step.normal.command}" if step.normal else f"sub-flow {step.sub_flow.task_type}" \
        if step.sub_flow else step.note or "-"  # another kind: as it describes itself (an approval)
    notes = []
    if step.after:
        notes.append(f"after {', '.join(step.after)}")
    if step.for_each is not None:
        count = "items from an earlier step" if step.for_each.items is None else f"{step.for_each.items} items"
        parallel = f", {step.for_each.max_parallel} at a time" if step.for_each.max_parallel else ""
        if step.for_each.source is not None:  # its count is unknown until the source runs
            notes.append(f"for each item of source {step.for_each.source}: count unknown until it runs{parallel}")
        else:
            notes.append(f"for each of {step.for_each.parameter}: {count}{parallel}")
        if step.for_each.tolerate:
            notes.append(f"tolerates {step.for_each.tolerate} failing")
        if step.for_each.on_failure == "hold":
            notes.append("holds at a failure past it")
        if step.for_each.waves:
            notes.append(f"in waves: {'; '.join(step.for_each.waves)}")
    if step.rollback is not None:
        notes.append(f"undo {step.rollback.module}.{step.rollback.command}")
    if step.lock_key is not None:
        notes.append(f"lock {step.lock_key}")
    if step.rate is not None:
        notes.append(f"rate {step.rate}")
    first = f"{indent}[{step.index}] {step.name:<20} {what}" + (f"  ({'; '.join(notes)})" if notes else "")
    nested = [line for child in step.sub_flow.steps for line in _step_lines(child, indent + "    ")] if step.sub_flow else []
    return [first, *nested]
