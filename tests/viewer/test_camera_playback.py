"""Camera transform (round trip, zoom about an anchor, pan) and playback state (seek, play, speed)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from vectorworld.viewer.camera import MAX_SCALE_PX_PER_M, Camera
from vectorworld.viewer.playback import Playback

coords = st.floats(-1e4, 1e4, allow_nan=False)


@given(coords, coords, st.floats(0.5, 50.0))
def test_world_screen_round_trip(x, y, scale):
    cam = Camera(center_xy=(12.0, -3.0), scale_px_per_m=scale, size_px=(640, 480))
    p = np.array([x, y])
    np.testing.assert_allclose(cam.to_world(cam.to_screen(p)), p, atol=1e-6)


def test_north_up_orientation_and_centre():
    cam = Camera(center_xy=(10.0, 20.0), scale_px_per_m=5.0, size_px=(200, 100))
    np.testing.assert_allclose(cam.to_screen(np.array([10.0, 20.0])), [100.0, 50.0])
    np.testing.assert_allclose(cam.to_screen(np.array([11.0, 21.0])), [105.0, 45.0])  # +y is up


def test_zoom_keeps_anchor_fixed_and_clamps():
    cam = Camera(center_xy=(0.0, 0.0), scale_px_per_m=4.0, size_px=(400, 400))
    anchor = (300.0, 100.0)
    world = cam.to_world(np.array(anchor))
    z = cam.zoomed(2.0, anchor)
    assert z.scale_px_per_m == 8.0
    np.testing.assert_allclose(z.to_screen(world), anchor, atol=1e-9)
    assert cam.zoomed(1e6).scale_px_per_m == MAX_SCALE_PX_PER_M


def test_pan_moves_world_with_mouse():
    cam = Camera(scale_px_per_m=2.0, size_px=(100, 100))
    p = np.array([3.0, 4.0])
    before = cam.to_screen(p)
    np.testing.assert_allclose(cam.panned_px(10, -6).to_screen(p), before + [10, -6])


def test_playback_seek_step_speed_and_play():
    pb = Playback()
    assert pb.seek(500, 100).index == 99 and pb.seek(-3, 100).index == 0
    assert pb.seek(10, 100).stepped(-1, 100).index == 9
    assert pb.faster(+1).speed == 2.0 and pb.faster(-1).speed == 0.5
    playing = pb.toggled_play(100)
    assert playing.playing
    moved = playing.advanced(1.0, 100)  # 1 s of wall time at x1 = 10 frames
    assert moved.index == 10
    fast = playing.faster(+1).faster(+1).advanced(1.0, 100)  # x4
    assert fast.index == 40
    end = moved.advanced(100.0, 100)
    assert end.index == 99 and not end.playing
    assert end.toggled_play(100).index == 0  # play at the end restarts
    live = moved.advanced(100.0, 100, live=True)
    assert live.index == 99 and live.playing
