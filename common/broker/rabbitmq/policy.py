"""How long the RabbitMQ adapter waits, and when it reconnects: pure decisions, no pika."""

from __future__ import annotations

from common.backoff import retry_delay
from common.engine.document import BackoffPolicy

PUBLISH_DEADLINE_SECONDS = 30.0  # how long publish keeps reconnecting before BrokerError
PING_DEADLINE_SECONDS = 2.0  # ping (a readiness probe) tries one connection, and waits this long for the answer
NACK_RETRY_SECONDS = 0.2  # a nacked publish is sent again after this long, until its deadline
# Nacks with no ack between them for this long: the publishing channel is replaced by a new one.
# RabbitMQ 3.10 keeps nacking, for good, every publish to a quorum queue on a channel whose first
# publish to it met the queue electing a new leader; a new channel is served by the new leader.
NACK_REOPEN_SECONDS = 1.0
DEADLINE_CHECK_SECONDS = 0.5  # how often the publisher fails the calls past their deadline
ANSWER_SLACK_SECONDS = 5.0  # a caller waits this much past its deadline before blaming a bug
CLOSE_GRACE_SECONDS = 5.0  # close() waits this long for the confirms of publishes in flight
FIRST_CONNECT_SECONDS = 15.0  # subscribe() fails if it cannot start consuming in this time
POLL_SECONDS = 1.0  # longest an I/O loop sleeps without looking at its stop flag
PAUSE_WAIT_SECONDS = 5.0
STOP_JOIN_SECONDS = 10.0

# RabbitMQ closes a connection after 2 to 3 heartbeat timeouts without a frame from the client:
# a frozen process's deliveries go back to the queue 6-9 s after it froze (measured by the chaos
# suite). pika's I/O threads answer heartbeats whatever the workers do.
DEFAULT_HEARTBEAT_SECONDS = 3
DEFAULT_RECONNECT_MAX_SECONDS = 1.0  # the longest wait between two reconnect attempts
FIRST_RECONNECT_SECONDS = 0.1


def reconnect_delay(attempt: int, max_delay: float, unit_random: float) -> float:
    """Seconds before reconnect attempt `attempt` (1 = first; the count starts again at 1 each
    time a connection opens).

    Short and capped low on purpose: a module must be back within a second or so of the broker
    being reachable again, not sleep through the end of a short outage. 0.1 s (not 0: a broker
    that accepts and drops at once is not hammered), doubling up to `max_delay`, jittered by
    +-20% so the modules a broker restart disconnected together do not all come back at once.
    An attempt against a stopped broker on a reachable host costs one refused TCP connect.
    """
    if attempt < 1:
        raise ValueError("attempt starts at 1")
    initial = min(FIRST_RECONNECT_SECONDS, max_delay)
    policy = BackoffPolicy(Initial=initial, Max=max_delay, Multiplier=2.0, Jitter=0.2)
    return retry_delay(policy, attempt, unit_random)
