"""Headless rendering: draw one step to a PNG without a display (SDL dummy video driver).

For CI, bug reports and docs: ``vectorworld view RUN.vwrec --screenshot out.png --step N``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from vectorworld.errors import ConfigError
from vectorworld.viewer.camera import Camera
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.viewer.playback import Playback, ViewOptions

if TYPE_CHECKING:
    import pygame

DEFAULT_SIZE = (1280, 800)
DEFAULT_SCALE_PX_PER_M = 6.0


def use_dummy_video() -> None:
    """Select SDL's dummy video/audio drivers unless the caller already chose one."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


def parse_size(text: str) -> tuple[int, int]:
    """``"1280x800"`` -> (1280, 800); raises ConfigError naming the field ``size_px`` for anything else."""
    parts = text.lower().split("x")
    try:
        w, h = (int(p) for p in parts)
    except ValueError as err:
        raise ConfigError(f"size_px must look like 1280x800, got {text!r}", field="size_px") from err
    if not (64 <= w <= 8192 and 64 <= h <= 8192):
        raise ConfigError(f"size_px {text} is out of range (64..8192 px per side)", field="size_px")
    return w, h


def render_to_surface(store: FrameStore, index: int, size_px: tuple[int, int] = DEFAULT_SIZE,
                      scale_px_per_m: float = DEFAULT_SCALE_PX_PER_M, options: ViewOptions | None = None,
                      camera: Camera | None = None, title: str = "",
                      messages: list[str] | None = None) -> pygame.Surface:
    """Render frame ``index`` (clamped) centred on the ego unless ``camera`` is given; returns a Surface."""
    use_dummy_video()
    import pygame

    from vectorworld.viewer.renderer import Renderer, follow_camera

    pygame.font.init()
    surface = pygame.Surface(size_px)
    playback = Playback(index=store.clamp(index), follow_ego=camera is None)
    cam = camera or Camera(scale_px_per_m=scale_px_per_m, size_px=size_px)
    cam = follow_camera(cam, store, playback)
    Renderer().draw(surface, store, playback, cam, options or ViewOptions(), title, messages)
    return surface


def render_screenshot(store: FrameStore, index: int, path: str | os.PathLike[str],
                      size_px: tuple[int, int] = DEFAULT_SIZE, scale_px_per_m: float = DEFAULT_SCALE_PX_PER_M,
                      options: ViewOptions | None = None, title: str = "",
                      messages: list[str] | None = None) -> Path:
    """Render frame ``index`` to a PNG at ``path``; returns the path."""
    use_dummy_video()
    import pygame

    surface = render_to_surface(store, index, size_px, scale_px_per_m, options, None, title, messages)
    path = Path(path)
    pygame.image.save(surface, str(path))
    return path
