"""What OSS and every module share: the task document, the routing rule, the ports and the runtime.

Nothing in here imports `oss` or `modules`; dependencies point one way (docs/design/overview.md).
"""

from common import old_paths as _old_paths

_old_paths.install()  # the module SDK's import paths of earlier releases, deprecated (common/old_paths.py)
