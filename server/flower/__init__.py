"""flower: continuity for long-running Claude agent workflows."""
