"""The editor backend (P1): a pygls server speaking `flower/wake`, `say`, `new`, `status`; see protocol.md.

Start it with `python -m flower.lsp` (stdio). Payload classes live in `flower.lsp.protocol`.
"""

from .protocol import CONVERTER, NOTIFICATIONS, PARAMS

__all__ = ["CONVERTER", "NOTIFICATIONS", "PARAMS"]
