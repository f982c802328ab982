"""The editor protocol's names: methods, error codes, initialization options, and folders as `file:` URIs (issue 34).

Plain constants, apart from pygls and lsprotocol: the editor server (`lsp/protocol.py` re-exports them) and the
engine's client in a terminal (`flower ps`, `stop`, an attached run) share them, and those light commands never
import the language server's libraries.
"""

from __future__ import annotations

import os
from pathlib import Path

VERSION = "0.1.0"
"""flower's protocol version, sent and compared at `initialize` (an engine of another version restarts when idle)."""

# -- method names ----------------------------------------------------------------------------
WAKE = "flower/wake"
SAY = "flower/say"
NEW = "flower/new"
STATUS = "flower/status"
HISTORY = "flower/history"
ATTACH = "flower/attach"
DETACH = "flower/detach"
RUNS = "flower/runs"
CANCEL = "flower/cancel"
CHANGES = "flower/changes"
REVERT = "flower/revert"
ASK = "flower/ask"
"""Server → client request: a clarify question the person answers."""
APPROVE = "flower/approve"
"""Server → client request: a tool call outside the rules, for the person to allow or deny (issue 24)."""
ANSWER = "flower/answer"
"""Client → server: the answer to an open tool question by its id (a window that attached after it was asked)."""
APPROVED = "flower/approved"

STATE = "flower/state"
BANNER = "flower/banner"
HEADER = "flower/header"
STEP_START = "flower/stepStart"
STEP_END = "flower/stepEnd"
SESSION = "flower/session"
TRANSCRIPT = "flower/transcript"
PRUNED = "flower/pruned"
CONTEXT = "flower/context"
WAIT = "flower/wait"
VERDICT = "flower/verdict"
QUESTION = "flower/question"
HANDOFF = "flower/handoff"
NOTICE = "flower/notice"

# -- error codes (JSON-RPC server error range; -32001/-32002 are taken by LSP) ------------------
UNKNOWN_FOLDER = -32010
"""The `folder` is not one of the server's workspace folders."""
WORKSPACE_BUSY = -32011
"""Another process (a terminal `flower`, another editor window) drives this workspace (D5)."""
FLOWER_ERROR = -32012
"""An expected failure with an actionable message (nothing to continue, …), in the editor's language; `data.key` names it."""
MISSING_CREDENTIALS = -32013
"""No way to authenticate against the model API (no key in the environment, no `claude login`): offer to set one."""
UNEXPECTED = -32014
"""A bug: the message is one line naming it and the log file under the folder's run dir holding its traceback."""

# -- initialization options ------------------------------------------------------------------
VERSION_OPTION = "flowerVersion"
"""`initializationOptions.flowerVersion`: the client's flower version; another than the engine's asks it to restart when idle."""
ANSWERS_OPTION = "answers"
"""`initializationOptions.answers`: the questions the client puts to its person (`flower/approve`, `flower/ask`), issue 31."""


def file_uri(path: str | os.PathLike[str]) -> str:
    """The `file:` URI of a local folder: what `task.folder_of` reads back to the same path (percent-encoded)."""
    return Path(os.path.abspath(path)).as_uri()
