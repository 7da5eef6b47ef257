"""The engine's values on the wire: protobuf encodings (``vectorworld.v1``) and the recording file codec.

``codec`` converts observations, frames, commands, configs and reports; ``raw`` builds the hot-path lane,
tile and agent messages as bytes; ``lanes`` / ``table`` / ``history`` add per-session caches and deltas;
``varint`` is the one base-128 varint helper; ``recording`` writes and reads recording files.
Only protobuf is imported here (no grpc): this package sits above the engine and below the server.
"""
