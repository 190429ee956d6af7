"""One exception base class; each subclass says what the caller should do about it."""


class BatonError(Exception):
    """Base of every error baton raises on purpose."""


class ConfigError(BatonError):
    """Configuration or flows.yaml is wrong: stop and tell the operator; nothing was changed."""


class FlowError(ConfigError):
    """flows.yaml is invalid. `problems` holds one "file:line: path: message" string per fault."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class UnknownTaskType(BatonError):
    """A job named a task type that flows.yaml does not define: reject the request."""


class StoreError(BatonError):
    """The store failed or is unreachable: retry later; nothing is known to have been written."""


class DuplicateTask(StoreError):
    """A task with this TaskId or idempotency key exists already: fetch it instead of creating."""


class BrokerError(BatonError):
    """The broker failed or is unreachable: the message was not confirmed, publish again later."""


class UnroutableMessage(BrokerError):
    """The broker returned a message no queue took (mandatory publish): declare the queue first."""


class CommandFailed(BatonError):
    """Raised by a command to report a failure it understands.

    `retryable=False` skips the remaining retries: the step fails at once (bad input, say).
    """

    def __init__(self, message: str, *, retryable: bool = True):
        self.retryable = retryable
        super().__init__(message)
