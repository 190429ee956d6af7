"""What OSS and every module share: the task document, the routing rule, the ports and the runtime.

Nothing in here imports `oss` or `modules`; dependencies point one way.
"""
