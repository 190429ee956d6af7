"""The module runtime every module shares: claim, lease, run, commit, publish.

Design: docs/design/runtime.md.
"""
