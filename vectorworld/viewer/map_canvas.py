"""An off-screen cache of static map layers, re-drawn only when the map, the zoom or the layers change,
or when the view leaves the cached area.

The canvas covers the view plus ``margin_px`` on every side at the view's scale, so panning and
following the ego are a single blit until the view drifts ``margin_px`` away. Transparent canvases use a
colour key, so they can be stacked (drivable area below the route, lane lines above it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
import pygame

from vectorworld.viewer.camera import Camera

COLORKEY = (255, 0, 255)
"""Colour of 'nothing drawn' on transparent canvases (never used by a layer)."""


class MapCanvas:
    """One cached layer group. ``draw(surface, camera)`` paints the layers in canvas coordinates."""

    def __init__(self, margin_px: int = 320, transparent: bool = False,
                 background: tuple[int, int, int] = (0, 0, 0)) -> None:
        self.margin_px = margin_px
        self.transparent = transparent
        self.background = COLORKEY if transparent else background
        self._surface: pygame.Surface | None = None
        self._work: pygame.Surface | None = None
        self._camera: Camera | None = None
        self._key: Hashable = None
        self.redraws = 0

    def _valid_for(self, camera: Camera, key: Hashable) -> bool:
        if self._camera is None or self._key != key or self._camera.scale_px_per_m != camera.scale_px_per_m:
            return False
        view = camera.view_bbox()
        cached = self._camera.view_bbox()
        return bool(view[0] >= cached[0] and view[1] >= cached[1] and view[2] <= cached[2] and view[3] <= cached[3])

    def blit(self, target: pygame.Surface, camera: Camera, key: Hashable,
             draw: Callable[[pygame.Surface, Camera], None]) -> None:
        """Blit the cached layers for ``camera`` onto ``target``, re-drawing them first if needed."""
        surface, canvas_camera = self._surface, self._camera
        if surface is None or canvas_camera is None or not self._valid_for(camera, key):
            size = (camera.size_px[0] + 2 * self.margin_px, camera.size_px[1] + 2 * self.margin_px)
            if self._work is None or self._work.get_size() != size:
                self._work = pygame.Surface(size)
            canvas_camera = Camera(camera.center_xy, camera.scale_px_per_m, size)
            self._work.fill(self.background)
            draw(self._work, canvas_camera)
            if self.transparent:
                # Drawing onto a run-length-encoded surface is very slow, blitting one that is mostly empty
                # is fast: draw on the plain work surface, blit an RLE copy.
                surface = self._work.copy()
                surface.set_colorkey(COLORKEY, pygame.RLEACCEL)
            else:
                surface = self._work
            self._surface, self._camera, self._key = surface, canvas_camera, key
            self.redraws += 1
        offset = np.round(camera.to_screen(canvas_camera.to_world(np.zeros(2)))).astype(int)
        target.blit(surface, (int(offset[0]), int(offset[1])))
