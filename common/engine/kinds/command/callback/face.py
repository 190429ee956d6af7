"""What of a command's callbacks the engine's face offers outside code (common/engine/core/declared.py)."""

# A callback of a command that waits for it (docs/design/callbacks.md).
CHANGES = {"common.engine.kinds.command.callback.changes": ("CallbackRefused", "CallbackTaken", "answer_callback")}
# What a module's command uses to wait for a callback.
COMMANDS = {
    "common.engine.kinds.command.callback.wait": ("await_callback", "open_callback", "parse_await"),
    "common.engine.kinds.command.callback.token": ("new_token", "task_of", "token_hash"),
}
