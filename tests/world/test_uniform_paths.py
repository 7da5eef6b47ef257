"""UniformPathBatch must agree with the exact polyline functions (to the resampling error) row by row."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorworld import geometry
from vectorworld.world.uniform_paths import UniformPath, UniformPathBatch


def _arc(seed: int) -> np.ndarray:
    """A random path (radius >= 20 m, spacing 0.5-3 m): resampling at 1 m cuts its corners by < 5 cm."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 40))
    steps = rng.uniform(0.5, 3.0, k - 1)
    heading = rng.uniform(-np.pi, np.pi) + np.cumsum(rng.uniform(-1, 1, k - 1) * steps / 20.0)
    start = rng.uniform(-50, 50, 2)
    return np.vstack([start, start + np.cumsum(steps[:, None] * np.stack([np.cos(heading), np.sin(heading)], -1), 0)])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 5))
def test_lookups_match_the_polyline(seed: int, n: int) -> None:
    lines = [_arc(seed + i) for i in range(n)]
    arcs = [geometry.polyline_lengths(line) for line in lines]
    paths = [UniformPath.resample(line, s, 2.0 * s) for line, s in zip(lines, arcs, strict=True)]
    batch = UniformPathBatch.of(paths)
    np.testing.assert_allclose(batch.length_m, [s[-1] for s in arcs])
    rng = np.random.default_rng(seed)
    targets = rng.uniform(-5.0, 120.0, (n, 6))
    points, values = batch.at(targets)
    for row, (line, s) in enumerate(zip(lines, arcs, strict=True)):
        exact = geometry.interpolate_polyline(line, s, targets[row])
        assert np.abs(points[row] - exact).max() < 0.05
        np.testing.assert_allclose(values[row], 2.0 * np.clip(targets[row], 0.0, s[-1]), atol=1e-6)
    # Projection onto the first `within` metres: points near that stretch land on it, never beyond it.
    within = np.array([float(rng.uniform(1.0, s[-1])) for s in arcs])
    on = np.array([rng.uniform(0.0, w) for w in within])
    xy = np.array([geometry.interpolate_polyline(line, s, np.array([o]))[0]
                   for line, s, o in zip(lines, arcs, on, strict=True)])
    s_proj, lateral = batch.project(xy, within)
    assert np.all(np.abs(s_proj - on) < 0.05) and np.all(np.abs(lateral) < 0.05)
    assert np.all(s_proj <= within + 1.0 + 1e-9)


def test_projection_ignores_the_far_part_of_a_path_that_bends_back() -> None:
    # A hairpin: out along y = 0, back along y = 4. A point at (5, 3.5) is nearest to the way back, but an
    # agent known to be on the first 20 m is on the way out.
    out = np.stack([np.linspace(0, 20, 21), np.zeros(21)], -1)
    back = np.stack([np.linspace(20, 0, 21), np.full(21, 4.0)], -1)
    line = np.vstack([out, [[22.0, 2.0]], back])
    s = geometry.polyline_lengths(line)
    batch = UniformPathBatch.of([UniformPath.resample(line, s, np.zeros(len(line)))])
    near_far_part, _ = batch.project(np.array([[5.0, 3.5]]), np.array([s[-1]]))
    on_first_lane, lateral = batch.project(np.array([[5.0, 3.5]]), np.array([20.0]))
    assert near_far_part[0] > 30.0
    assert abs(on_first_lane[0] - 5.0) < 1e-6 and abs(lateral[0] - 3.5) < 1e-6
