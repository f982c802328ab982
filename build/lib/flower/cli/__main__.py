"""`python -m flower.cli`: the `flower` command (the demo starts it this way)."""

from . import main

main()
