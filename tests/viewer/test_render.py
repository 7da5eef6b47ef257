"""Pixel tests of headless rendering: things appear where the geometry says, in the documented colours."""

import numpy as np
import pygame
import pytest

from tests.viewer.synthetic_frames import NPC_ID, NPC_XY, PED_XY, make_frames
from vectorworld.viewer import style
from vectorworld.viewer.camera import Camera
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.viewer.headless import render_screenshot, render_to_surface
from vectorworld.viewer.playback import ViewOptions

SIZE = (640, 400)
PLAIN = ViewOptions(hud=False, labels=False, velocities=False, trails=False, plan=False, route=False,
                    tiles=False)


@pytest.fixture(scope="module")
def store() -> FrameStore:
    return FrameStore(make_frames(60, tile_step=20, collision_step=40, offroad_step=50))


def pixel(surface: pygame.Surface, cam: Camera, world_xy) -> tuple[int, int, int]:
    x, y = np.round(cam.to_screen(np.asarray(world_xy, float))).astype(int)
    return tuple(surface.get_at((int(x), int(y))))[:3]


def count_color(surface: pygame.Surface, color, rect: pygame.Rect | None = None) -> int:
    arr = pygame.surfarray.pixels3d(surface)
    if rect is not None:
        arr = arr[rect.left:rect.right, rect.top:rect.bottom]
    return int(np.all(arr == np.array(color), axis=-1).sum())


def fixed_camera(scale=8.0, center=(20.0, 0.0)) -> Camera:
    return Camera(center_xy=center, scale_px_per_m=scale, size_px=SIZE)


def test_ego_npc_pedestrian_boxes_at_their_projected_positions(store):
    cam = fixed_camera()
    surf = render_to_surface(store, 10, SIZE, options=PLAIN, camera=cam)
    assert pixel(surf, cam, (10.0, 0.0)) == style.EGO_FILL  # ego at x = 1 m per step
    assert pixel(surf, cam, (NPC_XY[0] - 1.0, NPC_XY[1])) == style.AGENT_FILL[1]
    assert pixel(surf, cam, PED_XY) == style.AGENT_FILL[2]
    assert pixel(surf, cam, (10.0, 2.5)) != style.EGO_FILL  # just outside the 2 m wide ego box


def test_lanes_and_drivable_area_where_the_geometry_says(store):
    cam = fixed_camera()
    surf = render_to_surface(store, 10, SIZE, options=PLAIN, camera=cam)
    surface_street = style.LANE_COLORS[2]
    assert pixel(surf, cam, (-5.0, 0.0)) == surface_street  # lane 1 centreline
    assert pixel(surf, cam, (-5.0, 4.0)) == surface_street  # lane 2 centreline
    assert pixel(surf, cam, (-5.0, -1.2)) == style.DRIVABLE  # inside the 3.5 m corridor
    assert pixel(surf, cam, (-5.0, -8.0)) == style.BACKGROUND  # off the road


def test_connector_lane_appears_only_after_its_tile(store):
    cam = fixed_camera(center=(100.0, 20.0))
    before = render_to_surface(store, 19, SIZE, options=PLAIN, camera=cam)
    after = render_to_surface(store, 20, SIZE, options=PLAIN, camera=cam)
    assert pixel(before, cam, (100.0, 30.0)) == style.BACKGROUND
    assert pixel(after, cam, (100.0, 30.0)) == style.LANE_COLORS[4]


def test_collision_and_offroad_steps_are_highlighted(store):
    cam = fixed_camera(center=(40.0, 0.0))
    opts = ViewOptions(labels=False, trails=False, plan=False, route=False, tiles=False)
    calm = render_to_surface(store, 39, SIZE, options=opts, camera=cam)
    hit = render_to_surface(store, 40, SIZE, options=opts, camera=cam)
    above_timeline = pygame.Rect(0, 0, SIZE[0], SIZE[1] - 40)  # the timeline ticks mark every collision
    assert count_color(calm, style.COLLISION, above_timeline) == 0
    ego_px = np.round(cam.to_screen(np.array([40.0, 0.0]))).astype(int)
    around_ego = pygame.Rect(int(ego_px[0]) - 60, int(ego_px[1]) - 60, 120, 120)
    assert count_color(hit, style.COLLISION, around_ego) > 100
    npc_px = np.round(cam.to_screen(np.array(NPC_XY))).astype(int)
    around_npc = pygame.Rect(int(npc_px[0]) - 25, int(npc_px[1]) - 15, 50, 30)
    assert count_color(hit, style.COLLISION, around_npc) > 20  # the NPC the ego touched (id 7)
    assert count_color(hit, style.COLLISION, pygame.Rect(0, 200, 4, 100)) > 0  # red screen frame
    cam50 = fixed_camera(center=(50.0, 0.0))
    off = render_to_surface(store, 50, SIZE, options=opts, camera=cam50)
    assert count_color(off, style.OFFROAD) > 100
    calm49 = render_to_surface(store, 49, SIZE, options=opts, camera=cam50)
    assert count_color(calm49, style.OFFROAD, above_timeline) == 0
    assert NPC_ID == 7


def test_zoom_changes_the_scale(store):
    small = render_to_surface(store, 10, SIZE, options=PLAIN, camera=fixed_camera(scale=4.0))
    big = render_to_surface(store, 10, SIZE, options=PLAIN, camera=fixed_camera(scale=8.0))
    ratio = count_color(big, style.EGO_FILL) / count_color(small, style.EGO_FILL)
    assert 3.0 < ratio < 5.5  # area grows with the square of the scale


def test_follow_camera_puts_the_ego_at_the_centre_and_seek_lands_on_the_step(store):
    for index in (5, 33, 59):
        surf = render_to_surface(store, index, SIZE, scale_px_per_m=8.0, options=PLAIN)
        assert tuple(surf.get_at((SIZE[0] // 2, SIZE[1] // 2)))[:3] == style.EGO_FILL
    cam = fixed_camera(center=(30.0, 0.0))
    surf = render_to_surface(store, store.index_of_step(33), SIZE, options=PLAIN, camera=cam)
    assert pixel(surf, cam, (33.0, 0.0)) == style.EGO_FILL
    assert pixel(surf, cam, (27.0, 0.0)) != style.EGO_FILL
    past_end = render_to_surface(store, 10_000, SIZE, options=PLAIN, camera=fixed_camera(center=(59.0, 0.0)))
    assert pixel(past_end, fixed_camera(center=(59.0, 0.0)), (59.0, 0.0)) == style.EGO_FILL


def test_full_hud_render_and_png(store, tmp_path):
    path = render_screenshot(store, 40, tmp_path / "shot.png", SIZE, options=ViewOptions(lane_edges=True, help=True),
                             messages=["recording truncated"])
    img = pygame.image.load(str(path))
    assert img.get_size() == SIZE
    assert count_color(img, style.WARNING) > 50  # warning text + help keys
    assert count_color(img, style.LANE_EDGE_NEIGHBOR) > 0  # neighbour edge between lanes 1 and 2


def test_stop_lines_are_drawn_across_their_lane_in_the_colour_of_the_light(store):
    import dataclasses

    from vectorworld.signals import SignalState, SignalView

    lights = SignalView(np.array([1, 2], np.int64), np.array([SignalState.STOP, SignalState.GO], np.int8),
                        np.array([[5.0, 0.0], [5.0, 4.0]]), np.zeros(2), np.array([3.5, 3.5]))
    frames = [dataclasses.replace(f, signals=lights) for f in store.frames[:12]]
    lit = FrameStore(frames)
    cam = fixed_camera()
    surf = render_to_surface(lit, 10, SIZE, options=PLAIN, camera=cam)
    assert pixel(surf, cam, (5.0, -1.2)) == style.SIGNAL_COLORS[SignalState.STOP]   # across lane 1
    assert pixel(surf, cam, (5.0, 5.2)) == style.SIGNAL_COLORS[SignalState.GO]      # across lane 2
    off = render_to_surface(lit, 10, SIZE, options=dataclasses.replace(PLAIN, signals=False), camera=cam)
    assert pixel(off, cam, (5.0, -1.2)) != style.SIGNAL_COLORS[SignalState.STOP]
