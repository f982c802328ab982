"""The command line's exit codes, as the README and `flower --help` list them (one place: every command imports them)."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUSY, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
"""0 done; 1 the run did not finish; 2 bad input; 3 another flower drives this workspace; 130 interrupted."""
