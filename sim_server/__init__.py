"""The gRPC simulator service (``vectorworld serve``), its FastAPI side app, and the Python client.

``create_server`` builds an in-process server (tests bind port 0), ``serve`` runs one until SIGTERM;
``SimClient`` drives sessions from Python. The wire contract is ``proto/vectorworld/v1``.
"""

RECOVERING_METADATA = "vw-recovering"
"""Trailing metadata key of an UNAVAILABLE answer for a session still being rebuilt from its journal after a
restart: the server is up and replaying, so the Python client keeps waiting (``SimClient.recovery_wait_s``)."""
