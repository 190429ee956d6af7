"""The operators' actions on a task, as pure changes.

Design: docs/design/operator-actions.md.
"""
