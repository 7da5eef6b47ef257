"""The closed-loop engine: the Session, its config, spawning, metrics and observations (encodings and
recordings: :mod:`vectorworld.wire`)."""
