"""PathBatch (padded paths) must agree row by row with the single-polyline geometry functions."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorworld import geometry
from vectorworld.world.path_batch import PathBatch


def _random_paths(seed: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    paths = []
    for _ in range(n):
        k = int(rng.integers(2, 12))
        steps = rng.uniform(0.5, 4.0, (k - 1, 1)) * np.stack([np.cos(h := np.cumsum(rng.normal(0, 0.3, k - 1))),
                                                              np.sin(h)], -1)
        paths.append(np.vstack([rng.uniform(-50, 50, (1, 2)), rng.uniform(-50, 50, (1, 2)) + np.cumsum(steps, 0)]))
    return paths


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6))
def test_batch_matches_single_polyline_geometry(seed: int, n: int) -> None:
    paths = _random_paths(seed, n)
    batch = PathBatch.of(paths)
    rng = np.random.default_rng(seed + 1)
    xy = np.array([p[int(rng.integers(len(p)))] + rng.normal(0, 2.0, 2) for p in paths])
    s, lateral = batch.project(xy)
    targets = rng.uniform(-5.0, 60.0, (n, 4))
    along = batch.interpolate(targets)
    for row, path in enumerate(paths):
        s_ref, lat_ref, _ = geometry.project_to_polyline(xy[row][None], path)
        np.testing.assert_allclose(s[row], s_ref[0], atol=1e-9)
        at_vertex = np.isclose(geometry.polyline_lengths(path), s_ref[0], atol=1e-9).any()
        assert at_vertex or abs(lateral[row] - lat_ref[0]) < 1e-9  # at a vertex either segment's side is right
        ref = geometry.interpolate_polyline(path, geometry.polyline_lengths(path), targets[row])
        np.testing.assert_allclose(along[row], ref, atol=1e-9)
        np.testing.assert_allclose(batch.length_m[row], geometry.polyline_lengths(path)[-1])
    within = np.array([int(rng.integers(1, len(p) + 2)) for p in paths])  # < 2 and > len(p) are clipped
    s_in, lateral_in = batch.project(xy, within)
    for row, path in enumerate(paths):
        head = path[: int(np.clip(within[row], 2, len(path)))]
        s_ref, lat_ref, _ = geometry.project_to_polyline(xy[row][None], head)
        np.testing.assert_allclose(s_in[row], s_ref[0], atol=1e-9)
        at_vertex = np.isclose(geometry.polyline_lengths(head), s_ref[0], atol=1e-9).any()
        assert at_vertex or abs(lateral_in[row] - lat_ref[0]) < 1e-9
    values = [np.arange(len(p), dtype=float) for p in paths]
    padded = batch.pad(values)
    for row, v in enumerate(values):
        assert np.array_equal(padded[row, : len(v)], v) and np.all(padded[row, len(v):] == v[-1])


def test_empty_batch() -> None:
    batch = PathBatch.of([])
    assert batch.points.shape[0] == 0 and batch.length_m.shape == (0,)
