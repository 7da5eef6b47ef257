"""Input handling: synthetic pygame events change playback, view options and the camera as documented."""

import pygame
import pytest

from tests.viewer.synthetic_frames import make_frames
from vectorworld.viewer import hud
from vectorworld.viewer.camera import Camera
from vectorworld.viewer.controls import UiState, handle_event
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.viewer.playback import Playback, ViewOptions

SIZE = (640, 400)


@pytest.fixture(scope="module", autouse=True)
def display():
    pygame.display.init()
    pygame.display.set_mode(SIZE)
    yield
    pygame.display.quit()


@pytest.fixture(scope="module")
def store():
    return FrameStore(make_frames(60, tile_step=20, collision_step=40, offroad_step=50))


def ui(**kw):
    return UiState(playback=Playback(**kw), options=ViewOptions(), camera=Camera(scale_px_per_m=6.0, size_px=SIZE))


def key(k, mod=0):
    return pygame.event.Event(pygame.KEYDOWN, key=k, mod=mod)


def press(state, store, *events):
    for e in events:
        state = handle_event(state, e, len(store), store.events)
    return state


def test_play_step_seek_and_speed(store):
    s = press(ui(), store, key(pygame.K_SPACE))
    assert s.playback.playing
    s = press(s, store, key(pygame.K_RIGHT), key(pygame.K_RIGHT), key(pygame.K_PERIOD))
    assert s.playback.index == 3 and not s.playback.playing
    s = press(s, store, key(pygame.K_LEFT), key(pygame.K_COMMA))
    assert s.playback.index == 1
    assert press(s, store, key(pygame.K_END)).playback.index == 59
    assert press(s, store, key(pygame.K_PAGEDOWN), key(pygame.K_PAGEDOWN)).playback.index == 59  # clamps
    assert press(s, store, key(pygame.K_RIGHTBRACKET)).playback.speed == 2.0


def test_next_and_previous_event(store):
    s = press(ui(index=0), store, key(pygame.K_n))
    assert s.playback.index == 20  # tile
    s = press(s, store, key(pygame.K_n), key(pygame.K_n))
    assert s.playback.index == 50  # collision at 40, then off-road at 50
    assert press(s, store, key(pygame.K_n)).playback.index == 50  # no more events: stays
    assert press(s, store, key(pygame.K_b)).playback.index == 40


def test_zoom_pan_follow_toggles_and_requests(store):
    s = press(ui(), store, key(pygame.K_EQUALS))
    assert s.camera.scale_px_per_m == pytest.approx(6.0 * 1.25)
    s = press(s, store, pygame.event.Event(pygame.MOUSEWHEEL, x=0, y=-2, flipped=False))
    assert s.camera.scale_px_per_m == pytest.approx(6.0 / 1.25)
    s = press(s, store, key(pygame.K_RIGHT, pygame.KMOD_SHIFT))
    assert s.camera.center_xy[0] > 0 and not s.playback.follow_ego and s.playback.index == 0
    s = press(s, store, key(pygame.K_f), key(pygame.K_e), key(pygame.K_h), key(pygame.K_s))
    assert s.playback.follow_ego and s.options.lane_edges and s.options.help and s.screenshot
    assert not s.consumed().screenshot
    assert press(s, store, key(pygame.K_q)).quit


def test_clicking_the_timeline_seeks(store):
    rect = hud.timeline_rect(SIZE)
    down = pygame.event.Event(pygame.MOUSEBUTTONDOWN, button=1, pos=(rect.left + rect.width // 2, rect.centery))
    s = press(ui(), store, down)
    assert s.playback.index == pytest.approx(30, abs=1) and s.scrubbing
    drag = pygame.event.Event(pygame.MOUSEMOTION, pos=(rect.right, rect.centery), rel=(100, 0), buttons=(1, 0, 0))
    s = press(s, store, drag, pygame.event.Event(pygame.MOUSEBUTTONUP, button=1, pos=(rect.right, rect.centery)))
    assert s.playback.index == 59 and not s.scrubbing


def test_drive_mode_arrows_do_not_seek_and_period_requests_a_step(store):
    s = UiState(playback=Playback(index=59), options=ViewOptions(), camera=Camera(size_px=SIZE), drive=True)
    s = press(s, store, key(pygame.K_LEFT))
    assert s.playback.index == 59
    assert press(s, store, key(pygame.K_PERIOD)).step_request == 1
    assert press(s, store, key(pygame.K_a)).toggle_autopilot
