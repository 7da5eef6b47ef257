"""Keyboard and mouse input -> new UI state (playback, view options, camera) and requests.

:func:`handle_event` is the only place that knows the key bindings (listed for users in
``hud.HELP_LINES``). It returns a new :class:`UiState`; the app loop acts on its request flags.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pygame

from vectorworld.viewer import hud
from vectorworld.viewer.camera import Camera
from vectorworld.viewer.events import EventIndex
from vectorworld.viewer.playback import Playback, ViewOptions
from vectorworld.viewer.renderer import FRAMES_PER_PAGE

ZOOM_STEP = 1.25
PAN_STEP_PX = 80

TOGGLE_KEYS = {
    pygame.K_e: "lane_edges", pygame.K_t: "tiles", pygame.K_l: "labels", pygame.K_v: "velocities",
    pygame.K_r: "route", pygame.K_p: "plan", pygame.K_d: "drivable", pygame.K_h: "help",
    pygame.K_F1: "help", pygame.K_i: "hud", pygame.K_g: "signals",
}


@dataclass(frozen=True)
class UiState:
    """Everything input can change. Request flags are consumed (reset) by the app loop.

    drive: arrow keys drive the ego instead of stepping/panning; dragging: a map drag is in progress;
    scrubbing: the mouse button went down on the timeline.
    """

    playback: Playback
    options: ViewOptions
    camera: Camera
    drive: bool = False
    quit: bool = False
    screenshot: bool = False
    toggle_autopilot: bool = False
    step_request: int = 0
    dragging: bool = False
    scrubbing: bool = False

    def consumed(self) -> UiState:
        return dataclasses.replace(self, screenshot=False, toggle_autopilot=False, step_request=0)


def handle_event(ui: UiState, event: pygame.event.Event, num_frames: int, events: EventIndex) -> UiState:
    """Apply one pygame event."""
    if event.type == pygame.QUIT:
        return dataclasses.replace(ui, quit=True)
    if event.type == pygame.KEYDOWN:
        return _key(ui, event.key, event.mod, num_frames, events)
    if event.type == pygame.MOUSEWHEEL:
        factor = ZOOM_STEP ** event.y
        return dataclasses.replace(ui, camera=ui.camera.zoomed(factor, pygame.mouse.get_pos()))
    if event.type == pygame.MOUSEBUTTONDOWN and event.button == 1:
        if hud.timeline_rect(ui.camera.size_px).inflate(0, 10).collidepoint(event.pos):
            index = hud.timeline_index_at(ui.camera.size_px, event.pos[0], num_frames)
            return dataclasses.replace(ui, scrubbing=True, playback=ui.playback.seek(index, num_frames))
        return dataclasses.replace(ui, dragging=True)
    if event.type == pygame.MOUSEBUTTONUP and event.button == 1:
        return dataclasses.replace(ui, dragging=False, scrubbing=False)
    if event.type == pygame.MOUSEMOTION:
        if ui.scrubbing:
            index = hud.timeline_index_at(ui.camera.size_px, event.pos[0], num_frames)
            return dataclasses.replace(ui, playback=ui.playback.seek(index, num_frames))
        if ui.dragging:
            dx, dy = event.rel
            return dataclasses.replace(ui, camera=ui.camera.panned_px(dx, dy),
                                       playback=dataclasses.replace(ui.playback, follow_ego=False))
    if event.type == pygame.VIDEORESIZE:
        return dataclasses.replace(ui, camera=ui.camera.resized(event.size))
    return ui


def _key(ui: UiState, key: int, mod: int, n: int, events: EventIndex) -> UiState:
    pb, r = ui.playback, dataclasses.replace
    shift = bool(mod & pygame.KMOD_SHIFT)
    if key in (pygame.K_q, pygame.K_ESCAPE):
        return r(ui, quit=True)
    if key in TOGGLE_KEYS:
        return r(ui, options=ui.options.toggled(TOGGLE_KEYS[key]))
    if shift and key in (pygame.K_LEFT, pygame.K_RIGHT, pygame.K_UP, pygame.K_DOWN):
        dx = {pygame.K_LEFT: PAN_STEP_PX, pygame.K_RIGHT: -PAN_STEP_PX}.get(key, 0)
        dy = {pygame.K_UP: PAN_STEP_PX, pygame.K_DOWN: -PAN_STEP_PX}.get(key, 0)
        return r(ui, camera=ui.camera.panned_px(dx, dy), playback=r(pb, follow_ego=False))
    if key == pygame.K_SPACE:
        return r(ui, playback=pb.toggled_play(n) if not ui.drive else r(pb, playing=not pb.playing))
    if key == pygame.K_PERIOD or (key == pygame.K_RIGHT and not ui.drive):
        if ui.drive and pb.index >= n - 1:
            return r(ui, step_request=1, playback=r(pb, playing=False))
        return r(ui, playback=pb.stepped(+1, n))
    if key == pygame.K_COMMA or (key == pygame.K_LEFT and not ui.drive):
        return r(ui, playback=pb.stepped(-1, n))
    if key == pygame.K_PAGEUP:
        return r(ui, playback=pb.seek(pb.index - FRAMES_PER_PAGE, n))
    if key == pygame.K_PAGEDOWN:
        return r(ui, playback=pb.seek(pb.index + FRAMES_PER_PAGE, n))
    if key == pygame.K_HOME:
        return r(ui, playback=pb.seek(0, n))
    if key == pygame.K_END:
        return r(ui, playback=pb.seek(n - 1, n))
    if key == pygame.K_n or (key == pygame.K_b):
        target = events.next_event(pb.index) if key == pygame.K_n else events.previous_event(pb.index)
        return ui if target is None else r(ui, playback=r(pb.seek(target, n), playing=False))
    if key in (pygame.K_RIGHTBRACKET, pygame.K_LEFTBRACKET):
        return r(ui, playback=pb.faster(+1 if key == pygame.K_RIGHTBRACKET else -1))
    if key in (pygame.K_PLUS, pygame.K_EQUALS, pygame.K_KP_PLUS):
        return r(ui, camera=ui.camera.zoomed(ZOOM_STEP))
    if key in (pygame.K_MINUS, pygame.K_KP_MINUS):
        return r(ui, camera=ui.camera.zoomed(1.0 / ZOOM_STEP))
    if key == pygame.K_f:
        return r(ui, playback=r(pb, follow_ego=not pb.follow_ego))
    if key == pygame.K_s:
        return r(ui, screenshot=True)
    if key == pygame.K_a and ui.drive:
        return r(ui, toggle_autopilot=True)
    return ui
