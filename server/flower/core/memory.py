"""Where runtime.py finds `give_back` until the subagents branch lands (issue 33): then it imports core/host.py's and this file goes."""

from __future__ import annotations

from .host import give_back

__all__ = ["give_back"]
