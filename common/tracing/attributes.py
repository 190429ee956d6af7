"""The attribute names of baton's spans (docs/guide/tracing.md explains each).

OpenTelemetry's semantic conventions where one fits (messaging.* for the RabbitMQ hops, http.*
and url.* for the API); `baton.*` for the rest. No attribute ever holds a parameter: only ids,
names, numbers and codes, and messages scrubbed as the task document stores them.
"""

from __future__ import annotations

TASK_ID = "baton.task.id"
TASK_TYPE = "baton.task.type"
TASK_STATUS = "baton.task.status"  # after the change the span made (its name)
PARENT_TASK_ID = "baton.parent.task.id"  # a sub-flow's child: the task that runs it
STEP = "baton.step"  # the step's index in its task (the document's cursor)
STEP_NAME = "baton.step.name"
PHASE = "baton.phase"  # normal | rollback
ATTEMPT = "baton.attempt"  # 1-based, per unit and phase
ITEM = "baton.item"  # a for_each step: the item's index
MODULE = "baton.module"
COMMAND = "baton.command"
COMMAND_KIND = "baton.command.kind"  # process | thread | async
CODE = "baton.code"  # how the attempt ended: OK, FAILED, TIMED_OUT, WORKER_LOST, PROCESS_DIED, OUTCOME_UNKNOWN
CHECK_AGAIN = "baton.check_again.seconds"  # the command answered "not done yet, ask again in ..."
VERDICT = "baton.verify.verdict"  # a verify of an unknown outcome ran first: done, not_done, unknown
DROPPED = "baton.dropped"  # the delivery was not run: why (a duplicate, a stale dispatch ...)
CREATED = "baton.created"  # a submission: False when its idempotency key named an existing task
OUTCOME = "baton.outcome"  # what a span's change did, in words (released, held by a drain ...)

MESSAGING_SYSTEM = "messaging.system"
MESSAGING_OPERATION = "messaging.operation.type"  # send | process
MESSAGING_DESTINATION = "messaging.destination.name"  # the module's queue
MESSAGING_MESSAGE_ID = "messaging.message.id"  # the step message's DispatchId
