"""Validity filter and exact stitching of candidate lanes (tile frame)."""

from __future__ import annotations

import numpy as np

from vectorworld.generation.learned.stitching import (
    FrontierPort,
    StitchConfig,
    check_candidate,
    dense_reference,
    stitch,
)


def _line(a: tuple[float, float], b: tuple[float, float], n: int = 20) -> np.ndarray:
    return np.linspace(np.array(a), np.array(b), n)


PORTS = [FrontierPort(0, np.array([0.0, 0.0]), 0.0, True), FrontierPort(1, np.array([0.0, 3.5]), 0.0, True)]
KNOWN = dense_reference([_line((-30.0, 0.0), (0.0, 0.0)), _line((-30.0, 3.5), (0.0, 3.5))])


def test_valid_candidate_is_stitched_exactly() -> None:
    lanes = np.stack([_line((0.8, 0.5), (31.0, 0.3)), _line((0.5, 3.9), (20.0, 3.6)),
                      _line((20.6, 3.8), (30.5, 3.5))])
    config = StitchConfig()
    check = check_candidate(lanes, PORTS, KNOWN, config)
    assert check.valid, check
    assert check.port_links == [(0, 0), (1, 1)] and check.successors == [(1, 2)]
    out = stitch(lanes, check, PORTS, config)
    assert np.array_equal(out[0][0], PORTS[0].xy) and np.array_equal(out[1][0], PORTS[1].xy)
    assert np.linalg.norm(out[1][-1] - out[2][0]) <= 1e-9
    for lane in (out[0], out[2]):          # free ends move onto the border
        assert abs(abs(lane[-1, 0]) - 32.0) < 1e-6
    assert np.max(np.abs(np.concatenate(out))) <= 32.0 + 1e-9


def test_dangling_end_and_missing_port_are_invalid() -> None:
    config = StitchConfig(prune_spurs=False)
    dangling = np.stack([_line((0.5, 0.0), (31.0, 0.0)), _line((0.3, 3.5), (12.0, 3.5))])
    check = check_candidate(dangling, PORTS, KNOWN, config)
    assert not check.valid and check.dangling == 1 and check.unmatched_ports == 0
    pruned = check_candidate(dangling, PORTS, KNOWN, StitchConfig())   # pruning the spur opens port 1
    assert not pruned.valid and pruned.dangling == 0 and pruned.unmatched_ports == 1
    missing = np.stack([_line((0.5, 0.0), (31.0, 0.0))])
    check = check_candidate(missing, PORTS, KNOWN, config)
    assert not check.valid and check.unmatched_ports == 1


def test_duplicates_of_known_lanes_are_dropped() -> None:
    lanes = np.stack([_line((-25.0, 0.2), (-2.0, 0.2)), _line((0.5, 0.0), (31.0, 0.0)),
                      _line((0.5, 3.5), (31.0, 3.5)), _line((0.6, 3.4), (31.0, 3.3))])
    check = check_candidate(lanes, PORTS, KNOWN, StitchConfig())
    assert check.keep.tolist() == [1, 2]
    assert check.valid


def test_isolated_debris_is_dropped_not_fatal() -> None:
    lanes = np.stack([_line((0.5, 0.0), (31.0, 0.0)), _line((0.5, 3.5), (31.0, 3.5)),
                      _line((10.0, 15.0), (16.0, 18.0))])              # touches nothing
    check = check_candidate(lanes, PORTS, KNOWN, StitchConfig())
    assert check.valid and check.keep.tolist() == [0, 1]


def test_spurs_are_pruned_when_the_ports_stay_continued() -> None:
    lanes = np.stack([_line((0.5, 0.0), (31.0, 0.0)), _line((0.5, 3.5), (31.0, 3.5)),
                      _line((10.0, 0.5), (18.0, 9.0)),                 # leaves lane 0's middle, ends nowhere
                      _line((18.0, 9.0), (20.0, 14.0))])               # continues the spur, ends nowhere too
    assert not check_candidate(lanes, PORTS, KNOWN, StitchConfig(prune_spurs=False)).valid
    check = check_candidate(lanes, PORTS, KNOWN, StitchConfig())
    assert check.valid and check.keep.tolist() == [0, 1] and check.dangling == 0
