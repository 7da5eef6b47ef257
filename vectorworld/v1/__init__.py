"""Generated protobuf modules of the vectorworld.v1 wire contract (regenerate with tools/gen_protos.py)."""
