"""One exception base class; each subclass says what the caller should do about it."""


# The exit status of a process (a CLI command, a module) that cannot reach or open the store or
# the broker: nothing is wrong with what it was asked, try again once they answer.
EXIT_UNAVAILABLE = 5


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


class Frozen(BatonError):
    """A freeze window of policy refuse is open for the task type (HTTP 409, CLI exit code 4):
    nothing was created; submit again after `until` (epoch)."""

    def __init__(self, task_type: str, window: str, until: float, until_text: str):
        self.task_type, self.window, self.until = task_type, window, until
        super().__init__(f"task type {task_type} is frozen: freeze window {window} refuses new tasks "
                         f"until {until_text}")


class InvalidParameters(BatonError):
    """A job's parameters do not fit its task type's schema: reject it; nothing was written.

    `errors` holds (path, message) pairs such as ("parameters.cpu", "must be <= 64");
    no message carries the value of a secret parameter.
    """

    def __init__(self, errors: list[tuple[str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{path}: {message}" for path, message in errors))


class InvalidInput(InvalidParameters):
    """Input breaks baton's limits for anything stored (common.input_limits): too deep, too big,
    text that is not valid Unicode, a key MongoDB would refuse. Reject it; nothing was written."""


class UnknownAwaitedTask(InvalidParameters):
    """A submission's `after_task` names no task (HTTP 404 naming the field: which tasks exist
    is not the request's form; CLI exit code 2). Nothing was written."""

    def __init__(self, name: str):  # the name is kept for the caller, not put in the message
        self.name = name
        super().__init__([("after_task", "no task has this id or idempotency key")])


class UnreadableTask(BatonError):
    """A stored task document cannot be read back (written before the input limits, or edited by
    hand). Skip it: it is marked and alarmed, and nothing else may stop because of it."""

    def __init__(self, task_id: str, reason: str):
        self.task_id, self.reason = task_id, reason
        super().__init__(f"task {task_id} cannot be read: {reason}")


class IdempotencyConflict(BatonError):
    """The idempotency key was used for a different request (HTTP 409); `fields` name what differs."""

    def __init__(self, task_id: str, fields: list[str]):
        self.task_id, self.fields = task_id, fields
        super().__init__(f"this idempotency key created task {task_id} from a different request: "
                         f"{', '.join(fields)} differ")


class UnknownTask(BatonError):
    """No task has this id: tell the caller (HTTP 404, CLI exit code 3)."""


class ActionRefused(BatonError):
    """An operator action does not fit the task's state (HTTP 409); the message says why."""


class UnknownStepAction(BatonError):
    """The task has no such step, or the step's kind no such action (HTTP 404 naming which)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class ActionForbidden(BatonError):
    """A step's action refused because of who asks (HTTP 403): a role the step does not name,
    the submitter where the step says not; the message says why."""


class StoreError(BatonError):
    """The store failed or is unreachable: retry later; nothing is known to have been written."""


class StoreClosed(StoreError):
    """This process closed the store (it is shutting down): what it was about to write is left
    for the relay of a process still running. Not an outage: nothing to warn about."""


class StoreRefused(BatonError):
    """The store refuses this write for good (too large, nested too deep, not storable as BSON):
    retrying cannot help, nothing was written. Not a StoreError: callers must not retry it."""


class DuplicateTask(StoreError):
    """A task with this TaskId or idempotency key exists already: fetch it instead of creating."""


class DuplicateSchedule(StoreError):
    """A schedule with this name exists already: names are unique."""


class BrokerError(BatonError):
    """The broker failed or is unreachable: the message was not confirmed, publish again later."""


class BrokerClosed(BrokerError):
    """This process closed its broker adapter (it is shutting down): what it was about to publish
    stays in the outbox for the relay of a process still running. Not an outage: nothing to warn
    about."""


class UnroutableMessage(BrokerError):
    """The broker returned a message no queue took (mandatory publish): declare the queue first."""


class CommandFailed(BatonError):
    """Raised by a command to report a failure it understands.

    `retryable=False` skips the remaining retries: the step fails at once (bad input, say).
    """

    def __init__(self, message: str, *, retryable: bool = True):
        self.retryable = retryable
        super().__init__(message)
