"""The world <-> screen transform: a north-up orthographic camera with pan and zoom.

World: global frame, m, x east, y north. Screen: pixels, origin top-left, x right, y down. The camera
centre (world) maps to the centre of the screen; ``scale_px_per_m`` pixels per metre.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

MIN_SCALE_PX_PER_M = 0.2
MAX_SCALE_PX_PER_M = 80.0


@dataclass(frozen=True)
class Camera:
    """center_xy: (2,) world point at the screen centre (m); scale_px_per_m; size_px: (width, height)."""

    center_xy: tuple[float, float] = (0.0, 0.0)
    scale_px_per_m: float = 6.0
    size_px: tuple[int, int] = (1280, 800)

    def to_screen(self, xy: np.ndarray) -> np.ndarray:
        """World points (..., 2) m -> screen points (..., 2) px (float)."""
        p = np.asarray(xy, dtype=np.float64)
        sx = (p[..., 0] - self.center_xy[0]) * self.scale_px_per_m + self.size_px[0] / 2.0
        sy = (self.center_xy[1] - p[..., 1]) * self.scale_px_per_m + self.size_px[1] / 2.0
        return np.stack([sx, sy], -1)

    def project_many(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Project a list of world arrays (N_i, 2) with one call; returns (N_i, 2) int32 pixel arrays."""
        if not arrays:
            return []
        flat = np.round(self.to_screen(np.concatenate(arrays))).astype(np.int32)
        out, start = [], 0
        for a in arrays:
            out.append(flat[start:start + len(a)])
            start += len(a)
        return out

    def to_world(self, px: np.ndarray) -> np.ndarray:
        """Screen points (..., 2) px -> world points (..., 2) m."""
        p = np.asarray(px, dtype=np.float64)
        x = (p[..., 0] - self.size_px[0] / 2.0) / self.scale_px_per_m + self.center_xy[0]
        y = self.center_xy[1] - (p[..., 1] - self.size_px[1] / 2.0) / self.scale_px_per_m
        return np.stack([x, y], -1)

    def view_bbox(self, margin_m: float = 0.0) -> np.ndarray:
        """(4,) min x, min y, max x, max y of the visible world rectangle, grown by ``margin_m``."""
        half = np.array(self.size_px, dtype=np.float64) / (2.0 * self.scale_px_per_m) + margin_m
        c = np.asarray(self.center_xy)
        return np.concatenate([c - half, c + half])

    def centered_on(self, xy: np.ndarray) -> Camera:
        return dataclasses.replace(self, center_xy=(float(xy[0]), float(xy[1])))

    def panned_px(self, dx_px: float, dy_px: float) -> Camera:
        """Move the view by a screen-space drag (the world follows the mouse)."""
        cx = self.center_xy[0] - dx_px / self.scale_px_per_m
        cy = self.center_xy[1] + dy_px / self.scale_px_per_m
        return dataclasses.replace(self, center_xy=(cx, cy))

    def zoomed(self, factor: float, anchor_px: tuple[float, float] | None = None) -> Camera:
        """Scale by ``factor`` keeping the world point under ``anchor_px`` (default: centre) fixed."""
        scale = float(np.clip(self.scale_px_per_m * factor, MIN_SCALE_PX_PER_M, MAX_SCALE_PX_PER_M))
        if anchor_px is None:
            return dataclasses.replace(self, scale_px_per_m=scale)
        anchor_world = self.to_world(np.array(anchor_px))
        moved = dataclasses.replace(self, scale_px_per_m=scale)
        drift = moved.to_world(np.array(anchor_px)) - anchor_world
        return dataclasses.replace(moved, center_xy=(self.center_xy[0] - float(drift[0]),
                                                     self.center_xy[1] - float(drift[1])))

    def resized(self, size_px: tuple[int, int]) -> Camera:
        return dataclasses.replace(self, size_px=(int(size_px[0]), int(size_px[1])))
