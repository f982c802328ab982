"""A tiny stdio MCP server for the editor e2e: it touches the file named by argv[1] when it starts (proof that the
folder's .mcp.json ran), then answers initialize and tools/list (newline-delimited JSON-RPC) with no tools."""

import json
import pathlib
import sys

pathlib.Path(sys.argv[1]).touch()
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue  # a notification: nothing to answer
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "marker", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": []}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
