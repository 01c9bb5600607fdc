"""`python -m zkjepsen.cli`: the same as the `zkjepsen` command."""

from zkjepsen.cli import main

main()
