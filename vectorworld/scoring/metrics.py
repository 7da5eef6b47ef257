"""nuPlan's closed-loop score (CLS, reactive agents): one function per sub-metric, a registry, the aggregate.

Every function is pure numpy on per-step arrays with any leading shape (``(T,)`` for an episode,
``(P, T)`` for P planner proposals), so the episode report and the PDM planner score with the same code.

    CLS = prod(multiplier metrics) * sum(w_i * s_i) / sum(w_i)

Thresholds are nuPlan's (``nuplan/planning/script/config/common/simulation_metric``); see README "Planner
scores" for the table and for what differs here (the reference progress; one episode = one scenario).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from vectorworld.scoring.signals import EgoKinematics

# no_ego_at_fault_collisions: allowed at-fault collisions per class (score 1 - n / (allowed + 1)).
ALLOWED_AT_FAULT_VRU = 0
ALLOWED_AT_FAULT_VEHICLE = 0
ALLOWED_AT_FAULT_OBJECT = 1
DRIVABLE_TOLERANCE_M = 0.3
DIRECTION_COMPLIANT_M = 2.0
DIRECTION_VIOLATION_M = 6.0
DIRECTION_WINDOW_S = 1.0
MIN_PROGRESS_RATIO = 0.2
PROGRESS_FLOOR_M = 2.0
TTC_BOUND_S = 0.95
TTC_HORIZON_S = 1.0
"""nuPlan projects 3 s ahead; only whether the TTC exceeds 0.95 s enters the score, so 1 s decides the same."""
TTC_STEP_S = 0.1
EGO_STOPPED_TTC_MPS = 5e-3
OVERSPEED_SCALE_MPS = 2.23
COMFORT_LON_ACCEL_MPS2 = (-4.05, 2.40)
COMFORT_LAT_ACCEL_MPS2 = 4.89
COMFORT_YAW_RATE_RPS = 0.95
COMFORT_YAW_ACCEL_RPS2 = 1.93
COMFORT_LON_JERK_MPS3 = 4.13
COMFORT_JERK_MPS3 = 8.37


@dataclass(frozen=True)
class SubMetric:
    """A CLS sub-metric: a multiplier (weight 0) or a weighted term, its threshold and where it comes from."""

    name: str
    multiplier: bool
    weight: float
    threshold: str
    source: str
    fn: Callable[..., np.ndarray]


SUB_METRICS: dict[str, SubMetric] = {}


def sub_metric(name: str, threshold: str, source: str, weight: float = 0.0) -> Callable[[Callable], Callable]:
    """Register ``fn`` as the CLS sub-metric ``name`` (a multiplier unless ``weight`` > 0)."""
    def wrap(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        SUB_METRICS[name] = SubMetric(name, weight == 0.0, weight, threshold, source, fn)
        return fn
    return wrap


_NUPLAN = "nuplan-devkit planning/metrics/evaluation_metrics/common/"


@sub_metric("no_at_fault_collisions", "0 at-fault with VRUs or vehicles; 0.5 for one with a static object",
            _NUPLAN + "no_ego_at_fault_collisions.py")
def no_at_fault_collisions(vru: np.ndarray, vehicle: np.ndarray, obj: np.ndarray) -> np.ndarray:
    """1 without at-fault collisions, else prod over classes of max(0, 1 - n / (allowed + 1))."""
    def part(n: np.ndarray, allowed: int) -> np.ndarray:
        return np.maximum(0.0, 1.0 - np.asarray(n, float) / (allowed + 1))
    return (part(vru, ALLOWED_AT_FAULT_VRU) * part(vehicle, ALLOWED_AT_FAULT_VEHICLE)
            * part(obj, ALLOWED_AT_FAULT_OBJECT))


@sub_metric("drivable_area_compliance", f"no box corner > {DRIVABLE_TOLERANCE_M} m outside the drivable area",
            _NUPLAN + "drivable_area_compliance.py")
def drivable_area_compliance(offroad: np.ndarray) -> np.ndarray:
    """offroad (..., T) bool -> 0 if any step is off the drivable area, else 1."""
    return 1.0 - np.any(offroad, axis=-1).astype(float)


@sub_metric("driving_direction_compliance",
            f"progress against the lane over {DIRECTION_WINDOW_S:g} s: < {DIRECTION_COMPLIANT_M:g} m -> 1, "
            f"< {DIRECTION_VIOLATION_M:g} m -> 0.5, else 0", _NUPLAN + "driving_direction_compliance.py")
def driving_direction_compliance(lane_progress: np.ndarray, dt_s: float) -> np.ndarray:
    """lane_progress (..., T) m: per-step progress along the centreline of the lane the ego is in (0 on the
    step it enters a lane or when it is in none). Worst 1 s sum against the lane decides the score."""
    x = np.asarray(lane_progress, float)
    n = int(round(DIRECTION_WINDOW_S / dt_s))
    c = np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x, -1)], -1)
    start = np.maximum(np.arange(x.shape[-1]) - n, 0)
    window = c[..., 1:] - c[..., start]  # sum of samples max(0, i - n) .. i
    against = np.abs(np.minimum(window.min(-1, initial=0.0), 0.0))
    return np.where(against < DIRECTION_COMPLIANT_M, 1.0, np.where(against < DIRECTION_VIOLATION_M, 0.5, 0.0))


@sub_metric("ego_progress_along_route", f"ratio to the reference progress (floor {PROGRESS_FLOOR_M:g} m)",
            _NUPLAN + "ego_progress_along_expert_route.py", weight=5.0)
def ego_progress_along_route(progress_m: np.ndarray, reference_m: np.ndarray) -> np.ndarray:
    """min(1, max(0, progress / max(reference, 2 m)))."""
    ref = np.maximum(np.asarray(reference_m, float), PROGRESS_FLOOR_M)
    return np.clip(np.asarray(progress_m, float) / ref, 0.0, 1.0)


@sub_metric("ego_is_making_progress", f"progress ratio >= {MIN_PROGRESS_RATIO:g}",
            _NUPLAN + "ego_is_making_progress.py")
def ego_is_making_progress(progress_ratio: np.ndarray) -> np.ndarray:
    return (np.asarray(progress_ratio, float) >= MIN_PROGRESS_RATIO).astype(float)


@sub_metric("time_to_collision_within_bound", f"min TTC > {TTC_BOUND_S:g} s (constant-velocity projection)",
            _NUPLAN + "time_to_collision_within_bound.py", weight=5.0)
def time_to_collision_within_bound(min_ttc_s: np.ndarray) -> np.ndarray:
    """min_ttc_s (...): the smallest TTC of the episode (inf when none was found)."""
    return (np.asarray(min_ttc_s, float) > TTC_BOUND_S).astype(float)


@sub_metric("speed_limit_compliance", f"1 - integral of overspeed / ({OVERSPEED_SCALE_MPS} m/s x duration)",
            _NUPLAN + "speed_limit_compliance.py", weight=4.0)
def speed_limit_compliance(overspeed_mps: np.ndarray, dt_s: float) -> np.ndarray:
    """overspeed_mps (..., T) >= 0: speed above the limit of the lane the ego is in (0 off lanes)."""
    x = np.asarray(overspeed_mps, float)
    duration = max((x.shape[-1] - 1) * dt_s, 0.0)
    if duration <= 0.0:
        return np.ones(x.shape[:-1])
    return np.maximum(0.0, 1.0 - x.sum(-1) * dt_s / (OVERSPEED_SCALE_MPS * duration))


@sub_metric("ego_is_comfortable", "a_lon in [-4.05, 2.40], |a_lat| <= 4.89, |yaw rate| <= 0.95, "
            "|yaw accel| <= 1.93, |lon jerk| <= 4.13, |jerk| <= 8.37 (SI units)",
            _NUPLAN + "ego_is_comfortable.py", weight=2.0)
def ego_is_comfortable(k: EgoKinematics) -> np.ndarray:
    """1 if every smoothed signal stays within nuPlan's bounds over the whole (..., T) sequence."""
    lo, hi = COMFORT_LON_ACCEL_MPS2
    ok = ((k.lon_accel >= lo) & (k.lon_accel <= hi) & (np.abs(k.lat_accel) <= COMFORT_LAT_ACCEL_MPS2)
          & (np.abs(k.yaw_rate) <= COMFORT_YAW_RATE_RPS) & (np.abs(k.yaw_accel) <= COMFORT_YAW_ACCEL_RPS2)
          & (np.abs(k.lon_jerk) <= COMFORT_LON_JERK_MPS3) & (np.abs(k.jerk_magnitude) <= COMFORT_JERK_MPS3))
    return np.all(ok, axis=-1).astype(float)


def closed_loop_score(scores: Mapping[str, np.ndarray | float]) -> np.ndarray:
    """CLS from every registered sub-metric's score (same shape each): product of the multipliers times the
    weighted average of the others."""
    missing = sorted(set(SUB_METRICS) - set(scores))
    if missing:
        raise KeyError(f"closed_loop_score: missing sub-metric scores {missing}")
    product = np.ones(np.shape(next(iter(scores.values()))))
    weighted, total = 0.0, 0.0
    for name, m in SUB_METRICS.items():
        s = np.asarray(scores[name], float)
        if m.multiplier:
            product = product * s
        else:
            weighted = weighted + m.weight * s
            total += m.weight
    return product * weighted / total
