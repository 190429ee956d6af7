"""One router per resource: tasks, operator actions, task types, alarms, health."""
