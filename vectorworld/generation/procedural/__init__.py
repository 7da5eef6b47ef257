"""The procedural road-network generator: roads grown from the tile's ports, junctions, spawning."""
