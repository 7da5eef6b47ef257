"""The interactive debugger window: event loop over a frame store fed by a recording, a local drive
session or a live server session.

One loop for all three: read input, pull new frames from the source (drive: step the session at
``speed`` x real time; live: drain the poller), advance playback, draw, flip. The loop never blocks on
the source, so the window stays responsive while a live link is down.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import pygame

from vectorworld.viewer import controls, style
from vectorworld.viewer.camera import Camera
from vectorworld.viewer.drive_source import DriveKeys
from vectorworld.viewer.headless import DEFAULT_SCALE_PX_PER_M
from vectorworld.viewer.playback import Playback, ViewOptions
from vectorworld.viewer.renderer import Renderer, follow_camera
from vectorworld.viewer.view_session import ViewerSession

MAX_FPS = 60
NOTICE_S = 3.0


def run_window(view: ViewerSession, size_px: tuple[int, int] = (1280, 800),
               scale_px_per_m: float = DEFAULT_SCALE_PX_PER_M, options: ViewOptions | None = None,
               screenshot_dir: Path = Path("."),
               next_events: Callable[[], list[pygame.event.Event]] = pygame.event.get) -> None:
    """Open the window and run until the user quits. ``next_events`` (tests) replaces the event queue."""
    pygame.display.init()
    pygame.font.init()
    pygame.display.set_caption("VectorWorld debugger")
    screen = pygame.display.set_mode(size_px, pygame.RESIZABLE)
    renderer = Renderer()
    feeding = view.drive is not None or view.live is not None
    ui = controls.UiState(playback=Playback(index=view.store.clamp(view.start_index), playing=feeding),
                          options=options or ViewOptions(),
                          camera=Camera(scale_px_per_m=scale_px_per_m, size_px=size_px),
                          drive=view.drive is not None)
    clock = pygame.time.Clock()
    notice, notice_until = "", 0.0
    try:
        while not ui.quit:
            dt_s = clock.tick(MAX_FPS) / 1000.0
            for event in next_events():
                ui = controls.handle_event(ui, event, len(view.store), view.store.events)
            ui = _feed(ui, view, dt_s, pygame.key.get_pressed())
            if not feeding:
                ui = dataclasses.replace(ui, playback=ui.playback.advanced(dt_s, len(view.store)))
            camera = follow_camera(ui.camera.resized(screen.get_size()), view.store, ui.playback)
            ui = dataclasses.replace(ui, camera=camera)
            messages = list(view.warnings)
            if view.live is not None and view.live.status:
                messages.append(view.live.status)
            if view.drive is not None and view.drive.done:
                messages.append(f"episode ended: {view.drive.session.end_reason.value}")
            if time.monotonic() < notice_until:
                messages.append(notice)
            title = view.drive.title if view.drive is not None else view.title
            renderer.draw(screen, view.store, ui.playback, camera, ui.options, title, messages)
            fps = renderer.fonts.small.render(f"{clock.get_fps():4.0f} fps  h: help", True, style.HUD_DIM)
            screen.blit(fps, (screen.get_width() - fps.get_width() - 10, screen.get_height() - 42))
            if ui.screenshot:
                path = screenshot_dir / f"vectorworld_step{view.store.frames[ui.playback.index].step:06d}.png"
                pygame.image.save(screen, str(path))
                notice, notice_until = f"saved {path}", time.monotonic() + NOTICE_S
            pygame.display.flip()
            ui = ui.consumed()
    finally:
        if view.live is not None:
            view.live.stop()
        pygame.quit()


def _feed(ui: controls.UiState, view: ViewerSession, dt_s: float, pressed: pygame.key.ScancodeWrapper
          ) -> controls.UiState:
    """Pull new frames from the drive session or the live poller; keep the view on the newest frame
    while playing."""
    pb = ui.playback
    if view.drive is not None:
        drive = view.drive
        if ui.toggle_autopilot:
            drive.autopilot = not drive.autopilot
        at_end = pb.index >= view.store.last_index
        due, pb = pb.frames_due(dt_s) if at_end else (0, pb)
        keys = DriveKeys(up=bool(pressed[pygame.K_UP]), down=bool(pressed[pygame.K_DOWN]),
                         left=bool(pressed[pygame.K_LEFT]), right=bool(pressed[pygame.K_RIGHT]))
        for _ in range(due + ui.step_request):
            drive.step(keys)
        if pb.playing or ui.step_request:
            pb = dataclasses.replace(pb, index=view.store.last_index)
    if view.live is not None:
        for frame, route in view.live.drain():
            view.store.append(frame)
            view.store.routes[view.store.last_index] = route
        if pb.playing:
            pb = dataclasses.replace(pb, index=view.store.last_index)
    return dataclasses.replace(ui, playback=pb)
