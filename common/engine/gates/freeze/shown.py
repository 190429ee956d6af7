"""How people read a freeze window (common.engine.core.gate_text): how a dry run's plan says a
start it holds first."""

PLAN_START = ("freeze", "once its freeze window ends")  # the plan's `when`, its words
