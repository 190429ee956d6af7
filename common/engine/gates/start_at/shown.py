"""How people read a delayed start (common.engine.core.gate_text): how a dry run's plan says a
start it holds first."""

PLAN_START = ("at", "at its start time")  # the plan's `when`, its words
