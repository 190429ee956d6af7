"""A message nobody can act on goes to the dead-letter queue, with an alarm; never a crash."""

from __future__ import annotations

from collections.abc import Callable

import structlog
from pydantic import ValidationError

from common.broker.port import Broker, Delivery
from common.engine.changes import new_id
from common.engine.document import Alarm, StepMessage, named_task
from common.errors import BrokerError
from common.metrics import RuntimeMetrics
from common.queues import ALARM_QUEUE

log = structlog.get_logger(__name__)


class DeadLetters:
    def __init__(self, module: str, broker: Broker, metrics: RuntimeMetrics, clock: Callable[[], float],
                 delivery_limit: int | None) -> None:  # fmt: skip
        self._module = module
        self._broker = broker
        self._metrics = metrics
        self._clock = clock
        # Quorum queues: the broker's x-delivery-limit. The last delivery it allows is set aside
        # here instead of run once more (it may be what killed its consumers).
        self._delivery_limit = delivery_limit

    def parse(self, delivery: Delivery) -> StepMessage | None:
        """The step message, or None once it went to the dead-letter queue."""
        try:
            message = StepMessage.model_validate_json(delivery.body)
        except ValidationError as exc:
            # Name the fields and what is wrong, never the values: they may hold secrets.
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5])
            return self.send(delivery, f"malformed step message: {problems}", task_id=named_task(delivery.body))
        if message.Module != self._module:
            return self.send(delivery, f"message for module {message.Module!r} on {self._module!r}'s queue", message)
        count = int(getattr(delivery, "delivery_count", 0) or 0)
        if self._delivery_limit is not None and count >= self._delivery_limit:
            return self.send(delivery, f"poison message: handed out {count + 1} times without being settled", message)
        return message

    def send(self, delivery: Delivery, reason: str, message: StepMessage | None = None,
             task_id: str | None = None) -> None:  # fmt: skip
        delivery.dead_letter()
        self._metrics.dead_letters.labels(self._module).inc()
        task_id = message.TaskId if message else task_id
        log.error("message dead-lettered", reason=reason, module=self._module, task_id=task_id)
        alarm = Alarm(
            AlarmId=new_id(), Kind="dead_letter", Time=self._clock(), Message=reason,
            Module=self._module, TaskId=task_id,
            Cursor=message.Cursor if message else None, Phase=message.Type if message else None,
            Command=message.Command if message else None,
        )  # fmt: skip
        try:
            self._broker.publish(ALARM_QUEUE, alarm.model_dump_json().encode(), message_id=alarm.AlarmId)
        except BrokerError as exc:
            log.error("could not raise the dead-letter alarm", error=str(exc))
        return None
