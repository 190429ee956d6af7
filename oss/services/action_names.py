"""The operator actions' names as the API and the CLI spell them, and the bulk actions' limit:
plain data, so the CLI can build its commands without importing the engine
(oss.services.actions)."""

ACTION_NAMES = ("cancel", "retry", "retry-rollback", "compensate", "pause", "resume", "redrive", "rollback")
# Skip names a unit besides: its own route and command (OperatorActions.apply's `unit`).
SKIP = "skip"
# The most tasks one bulk action selects.
MAX_BULK_TASKS = 10_000
