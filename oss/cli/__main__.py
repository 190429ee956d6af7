"""`python -m oss.cli`: the `baton` command, as `python -m oss`."""

from oss.cli import main

main()
