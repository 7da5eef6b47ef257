"""The streaming world: tile manager, global lane graph, drivable raster, routes."""

from vectorworld.world.streaming import GeneratedTile, StreamingWorld, WorldConfig

__all__ = ["GeneratedTile", "StreamingWorld", "WorldConfig"]
