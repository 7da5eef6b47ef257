"""NPCs removed as stuck reach the debugger: an event of their frame (not a stop of n / b, like the other NPC
events), named with the cause in the banner, a marker where the car stood for REMOVAL_MARKER_S, a tick on the
timeline, a legend entry, and a count in the status panel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygame
import pytest

from tests.standing_npcs import stay_at_open_ends  # noqa: F401  (the fixture)
from tests.viewer.synthetic_frames import NPC_ID, NPC_XY, make_frames
from tests.viewer.test_render import PLAIN, SIZE, count_color, fixed_camera
from vectorworld.sim.metrics import StuckRemoval
from vectorworld.viewer import hud, style
from vectorworld.viewer.events import REMOVAL_MARKER_S, EventKind
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.viewer.headless import render_screenshot, render_to_surface
from vectorworld.viewer.playback import Playback, ViewOptions
from vectorworld.viewer.renderer import Renderer

STUCK_STEP = 30
MARKER_FRAMES = int(round(REMOVAL_MARKER_S / 0.1))


@pytest.fixture(scope="module")
def store() -> FrameStore:
    return FrameStore(make_frames(60, tile_step=20, collision_step=None, offroad_step=None, stuck_step=STUCK_STEP))


def around_npc(cam) -> pygame.Rect:
    x, y = np.round(cam.to_screen(np.array(NPC_XY))).astype(int)
    return pygame.Rect(int(x) - 30, int(y) - 30, 60, 60)


def test_the_removal_is_an_event_of_its_frame_that_n_and_b_pass(store):
    ev = store.events
    assert ev.indices(EventKind.NPC_REMOVED) == [STUCK_STEP]
    assert EventKind.NPC_REMOVED in ev.at(STUCK_STEP) and EventKind.NPC_REMOVED not in ev.at(STUCK_STEP - 1)
    assert ev.stuck_removals[STUCK_STEP] == (StuckRemoval(NPC_ID, "queued", *NPC_XY),)
    assert ev.next_event(20) is None  # NPC events are not stops of "jump to next event"
    assert ev.next_event(20, (EventKind.NPC_REMOVED,)) == STUCK_STEP
    assert ev.metrics_so_far(STUCK_STEP - 1).npc_removed == 0 and ev.metrics_so_far(59).npc_removed == 1
    assert [age for age, _ in ev.recent_removals(STUCK_STEP)] == [0]
    assert [age for age, _ in ev.recent_removals(STUCK_STEP + MARKER_FRAMES - 1)] == [MARKER_FRAMES - 1]
    assert ev.recent_removals(STUCK_STEP + MARKER_FRAMES) == [] and ev.recent_removals(STUCK_STEP - 1) == []


def test_the_banner_names_each_removed_npc_with_its_cause(store):
    info = Renderer.hud_info(store, STUCK_STEP, Playback(), "", 2)
    assert ("npc 7 removed: queued", style.NPC_REMOVED) in hud.banner_parts(info)
    calm = Renderer.hud_info(store, STUCK_STEP - 1, Playback(), "", 2)
    assert all(color != style.NPC_REMOVED for _, color in hud.banner_parts(calm))
    many = tuple(StuckRemoval(i, c, 0.0, 0.0) for i, c in enumerate(["queued", "queued", "other", "queued"]))
    assert hud.removal_text(many) == "4 npcs removed: 1 other, 3 queued"


def test_a_marker_stands_where_the_car_was_removed_for_two_seconds(store):
    cam = fixed_camera(center=(30.0, 0.0))
    counts = {i: count_color(render_to_surface(store, i, SIZE, options=PLAIN, camera=cam), style.NPC_REMOVED,
                             around_npc(cam))
              for i in (STUCK_STEP - 1, STUCK_STEP, STUCK_STEP + MARKER_FRAMES - 1, STUCK_STEP + MARKER_FRAMES)}
    assert counts[STUCK_STEP - 1] == 0  # the car is still there
    assert counts[STUCK_STEP] > 80 and counts[STUCK_STEP + MARKER_FRAMES - 1] > 60
    assert counts[STUCK_STEP + MARKER_FRAMES] == 0
    far = fixed_camera(center=(-20.0, 0.0))  # nowhere else
    surf = render_to_surface(store, STUCK_STEP, SIZE, options=PLAIN, camera=far)
    assert count_color(surf, style.NPC_REMOVED) == count_color(surf, style.NPC_REMOVED, around_npc(far))


def test_timeline_tick_legend_and_a_png_that_shows_it(store, tmp_path: Path):
    timeline = hud.timeline_rect(SIZE)
    plain = FrameStore(make_frames(60, tile_step=20, collision_step=None, offroad_step=None))
    cam = fixed_camera(center=(30.0, 0.0))
    with_hud = ViewOptions(trails=False, plan=False)
    assert count_color(render_to_surface(plain, 10, SIZE, options=with_hud, camera=cam), style.NPC_REMOVED,
                       timeline) == 0
    assert count_color(render_to_surface(store, 10, SIZE, options=with_hud, camera=cam), style.NPC_REMOVED,
                       timeline) > 0
    assert (style.NPC_REMOVED, "npc removed (stuck)") in hud.LEGEND
    path = render_screenshot(store, STUCK_STEP, tmp_path / "removed.png", SIZE, 8.0, options=with_hud)
    img = pygame.image.load(str(path))
    banner = pygame.Rect(0, 0, SIZE[0], 40)
    assert count_color(img, style.NPC_REMOVED, banner) > 20  # the banner's text in the event colour
    followed = fixed_camera(center=(30.0, 0.0))  # the screenshot follows the ego (x = 30 m at this step)
    assert count_color(img, style.NPC_REMOVED, around_npc(followed)) > 80


@pytest.mark.usefixtures("stay_at_open_ends")
def test_a_recorded_sessions_removals_are_events_at_their_steps(tmp_path: Path):
    from tests.recorded_session import record_session
    from tests.standing_npcs import standing_session
    from vectorworld.wire.recording import read_recording

    session = standing_session(seed=0, max_steps=240)
    path = tmp_path / "stuck.vwrec"
    _, observations, report = record_session(session, path)
    steps = [obs.step for obs in observations if obs.step_metrics.stuck_removals]
    recorded = FrameStore(read_recording(path).frames)
    assert steps and [recorded.frames[i].step for i in recorded.events.indices(EventKind.NPC_REMOVED)] == steps
    assert recorded.events.metrics_so_far(recorded.last_index).npc_removed == report["npc_removed_stuck"]
    first = recorded.index_of_step(steps[0])
    info = Renderer.hud_info(recorded, first, Playback(), "", 0)
    text = hud.removal_text(info.stuck_removals)
    assert text and all(f"{r.cause.replace('_', ' ')}" in text for r in info.stuck_removals)
