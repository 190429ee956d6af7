"""How people read a wait for another task (common.engine.core.gate_text): how a dry run's plan says a
start it holds first."""

PLAN_START = ("after_task", "after another task")  # the plan's `when`, its words
