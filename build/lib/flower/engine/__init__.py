"""The engine (D11): one long-lived flower process per user that holds every folder's service and serves many clients.

Modules: `place` (where its socket, lock and log live), `fanout` (one folder's notifications to every
connection attached to it), `connection` (one client's protocol object over the shared folders),
`engine` (the Unix socket server and its lifecycle), `start` (find the engine or start one), `client`
(a small JSON-RPC client over the socket, for the terminal).
"""
