"""What the command kind adds to the engine's shared tables (common/engine/core/declared.py): the
kind itself. Read before anything else of the engine exists, so it imports nothing: its class is
named, not imported."""

# Its kind, by name: ("module:Class", its place in the registry's order, common.engine.registry.KINDS).
# The kind no flows.yaml key declares: a step with none of the others' keys runs a command.
KINDS = {"command": ("common.engine.kinds.command.kind:CommandKind", 10)}
