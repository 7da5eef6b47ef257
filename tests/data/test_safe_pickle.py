"""The restricted unpickler: ScenarioNet data loads; a pickle that names code is refused and never runs."""

from __future__ import annotations

import collections
import os
import pickle
import pickletools
from pathlib import Path

import numpy as np
import pytest

from vectorworld.data import safe_pickle
from vectorworld.data.safe_pickle import UnsafePickleError
from vectorworld.data.sources import load_scenario
from vectorworld.errors import DataFormatError

MARKER = "vectorworld_pickle_marker"


class SystemCall:
    """Unpickling this runs ``touch MARKER`` with an unrestricted unpickler."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


class EvalCall:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return eval, (f"open({str(self.marker)!r}, 'w').close()",)


class Outsider:
    """A class outside numpy / builtins whose unpickling (``__setstate__``) writes the marker."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __setstate__(self, state: dict) -> None:
        Path(state["marker"]).touch()


def _payloads(marker: Path) -> dict[str, bytes]:
    data = {"tracks": {}, "array": np.zeros(3)}
    out = {}
    for name, evil in (("os.system", SystemCall(marker)), ("eval", EvalCall(marker)), ("class", Outsider(marker))):
        for proto in (0, 2, 4, 5):
            out[f"{name}-p{proto}"] = pickle.dumps({**data, "evil": evil}, protocol=proto)
    # getattr(builtins, "exec") built from allowed-looking parts
    out["getattr"] = b"cbuiltins\ngetattr\n(cbuiltins\ndict\nVexec\ntR."
    # a STACK_GLOBAL whose operands are not plain strings (cannot be checked without running it)
    out["computed"] = b"\x80\x04}\x94h\x00h\x00\x93."
    return out


@pytest.mark.parametrize("name", list(_payloads(Path("m"))))
def test_code_in_a_pickle_is_refused_and_never_runs(name: str, tmp_path: Path) -> None:
    marker = tmp_path / MARKER
    payload = _payloads(marker)[name]
    # The payload really would run with the standard unpickler (checked on a copy with another marker).
    if not name.startswith(("getattr", "computed")):
        probe = tmp_path / "probe"
        pickle.loads(_payloads(probe)[name])
        assert probe.exists()
    with pytest.raises(UnsafePickleError, match="refused"):
        safe_pickle.loads(payload, "evil.pkl")
    # Even the second layer alone refuses it (the scan skipped).
    if not name.startswith("computed"):
        import io

        with pytest.raises(UnsafePickleError):
            safe_pickle.RestrictedUnpickler(io.BytesIO(payload), "evil.pkl").load()
    assert not marker.exists()


def test_refusal_names_the_global_and_reaches_the_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from vectorworld.cli import app

    marker = tmp_path / MARKER
    scenario = tmp_path / "sd_evil.pkl"
    scenario.write_bytes(pickle.dumps({"metadata": {}, "tracks": SystemCall(marker)}))
    with pytest.raises(UnsafePickleError, match=r"names posix\.system|names nt\.system"):
        load_scenario(f"scenarionet:{scenario}")
    result = CliRunner().invoke(app, ["inspect", str(scenario)])  # detected as a pickle -> scenarionet
    assert result.exit_code == 2 and "refused" in result.output and len(result.output.strip().splitlines()) == 1
    # A malicious dataset summary is refused when the folder is listed.
    (tmp_path / "dataset_summary.pkl").write_bytes(pickle.dumps({"sd_a.pkl": EvalCall(marker)}))
    result = CliRunner().invoke(app, ["inspect", f"scenarionet:{tmp_path}"])
    assert result.exit_code == 2 and "builtins.eval" in result.output
    assert not marker.exists()


@pytest.mark.parametrize("proto", [0, 1, 2, 3, 4, 5])
def test_data_pickles_load(proto: int) -> None:
    obj = {"f32": np.arange(6, dtype=np.float32).reshape(3, 2), "scalar": np.float64(1.5), "i": np.int64(-3),
           "strings": np.array(["a", "bc"]), "objects": np.array([None, "x"], dtype=object), "flags": np.ones(2, bool),
           "strided": np.arange(10).reshape(2, 5)[:, ::2], "counts": collections.defaultdict(int, {"a": 1}),
           "set": {1, 2}, "bytes": b"\x00\xff", "nested": [("t", 1.0, None, True)], "big": 2**70}
    got = safe_pickle.loads(pickle.dumps(obj, protocol=proto), "data.pkl")
    assert got["f32"].dtype == np.float32 and (got["f32"] == obj["f32"]).all()
    assert got["scalar"] == 1.5 and got["i"] == -3 and list(got["strings"]) == ["a", "bc"]
    assert list(got["objects"]) == [None, "x"] and (got["strided"] == obj["strided"]).all()
    assert got["counts"] == {"a": 1} and got["set"] == {1, 2} and got["bytes"] == b"\x00\xff"
    assert got["nested"] == [("t", 1.0, None, True)] and got["big"] == 2**70


def test_truncated_and_non_pickles_are_format_errors() -> None:
    data = pickle.dumps({"a": np.zeros(100)}, protocol=4)
    for bad in (data[:60], b"", b"\x80\x04garbage"):
        with pytest.raises(DataFormatError, match="not a readable pickle"):
            safe_pickle.loads(bad, "broken.pkl")
    assert any(op.name == "STACK_GLOBAL" for op, _, _ in pickletools.genops(data))  # the scan saw the real thing
