"""How long the RabbitMQ adapter waits, and when it reconnects: pure decisions, no pika."""

from __future__ import annotations

from common.backoff import retry_delay
from common.models import BackoffPolicy

PUBLISH_DEADLINE_SECONDS = 30.0  # how long publish keeps reconnecting before BrokerError
PING_DEADLINE_SECONDS = 5.0  # ping tries one connection, and waits this long for the answer
DEADLINE_CHECK_SECONDS = 0.5  # how often the publisher fails the calls past their deadline
ANSWER_SLACK_SECONDS = 5.0  # a caller waits this much past its deadline before blaming a bug
CLOSE_GRACE_SECONDS = 5.0  # close() waits this long for the confirms of publishes in flight
FIRST_CONNECT_SECONDS = 15.0  # subscribe() fails if it cannot start consuming in this time
POLL_SECONDS = 1.0  # longest an I/O loop sleeps without looking at its stop flag
PAUSE_WAIT_SECONDS = 5.0
STOP_JOIN_SECONDS = 10.0

STABLE_SECONDS = 10.0  # a consumer connection that lived this long reconnects at once when lost


def reconnect_delay(attempt: int, max_delay: float, unit_random: float) -> float:
    """Seconds before reconnect attempt `attempt` (1 = first).

    The first is immediate: most losses are one connection dropped by a broker that is still
    up. Then 0.5 s doubling up to `max_delay`, jittered so that the modules a broker restart
    disconnected together do not all come back in the same instant.
    """
    if attempt <= 1:
        return 0.0
    policy = BackoffPolicy(Initial=min(0.5, max_delay), Max=max_delay, Multiplier=2.0, Jitter=0.2)
    return retry_delay(policy, attempt - 1, unit_random)


def keepalive_interval(heartbeat: int) -> float:
    """How often to service an idle BlockingConnection: well inside the heartbeat timeout.

    Unused since the publisher moved to a SelectConnection (its I/O loop answers heartbeats, as
    the consumers' loops do); kept because the broker contract suite still tests it.
    """
    return min(5.0, max(0.25, heartbeat / 4))
