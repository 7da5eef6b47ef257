"""The gRPC simulator service (``vectorworld serve``), its FastAPI side app, and the Python client.

``create_server`` builds an in-process server (tests bind port 0), ``serve`` runs one until SIGTERM;
``SimClient`` drives sessions from Python. The wire contract is ``proto/vectorworld/v1``.
"""
