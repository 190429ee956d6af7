"""pika's exceptions, sorted by what the adapter does about them.

They never leave this package: the publisher and the consumer catch them by these groups and
raise BrokerError / UnroutableMessage (common.errors) instead, or reconnect.
"""

from __future__ import annotations

import pika.exceptions

# "This connection or channel is gone": reconnect and try again.
CONNECTION_ERRORS = (pika.exceptions.AMQPError, OSError)

# "The broker said no" (wrong credentials or vhost, queue arguments that differ): configuration
# faults that reconnecting will not mend. Each is also a CONNECTION_ERROR: catch these first.
REFUSALS = (
    pika.exceptions.ChannelClosedByBroker,
    pika.exceptions.AuthenticationError,
    pika.exceptions.ProbableAuthenticationError,
    pika.exceptions.ProbableAccessDeniedError,
)
