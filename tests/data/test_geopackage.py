"""GeoPackage binary geometry headers and layer reading."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

import numpy as np
import pytest
import shapely

from vectorworld.data.geopackage import encode_gpkg_geometry, gpkg_to_wkb, parse_gpkg_geometries, read_layer
from vectorworld.errors import DataFormatError

LINE = shapely.LineString([(1.0, 2.0), (3.0, 5.0), (10.0, 5.0)])


def blob(flags: int, envelope_bytes: int, big_endian_srs: bool = False) -> bytes:
    srs = struct.pack(">i" if big_endian_srs else "<i", 32611)
    return b"GP" + bytes([0, flags]) + srs + bytes(envelope_bytes) + shapely.to_wkb(LINE)


@pytest.mark.parametrize("code, size", [(0, 0), (1, 32), (2, 48), (3, 48), (4, 64)])
def test_envelope_sizes(code: int, size: int) -> None:
    geom = parse_gpkg_geometries([blob(0x01 | (code << 1), size)])[0]
    assert geom.equals(LINE)
    geom = parse_gpkg_geometries([blob(code << 1, size, big_endian_srs=True)])[0]  # big-endian header
    assert geom.equals(LINE)


def test_empty_null_and_bad_blobs() -> None:
    out = parse_gpkg_geometries([None, blob(0x11, 0)])
    assert out[0] is None and out[1] is None
    with pytest.raises(DataFormatError, match="no 'GP' magic"):
        gpkg_to_wkb(b"XX" + bytes(20), "layer x")
    with pytest.raises(DataFormatError, match="envelope code 5"):
        gpkg_to_wkb(blob(5 << 1, 0))
    with pytest.raises(DataFormatError, match="truncated"):
        gpkg_to_wkb(blob(0x03, 32)[:40])


def test_encode_round_trip() -> None:
    poly = shapely.Polygon([(0, 0), (4, 0), (4, 3)])
    for geom in (LINE, poly, shapely.MultiPolygon([poly])):
        for envelope in (True, False):
            assert parse_gpkg_geometries([encode_gpkg_geometry(geom, envelope=envelope)])[0].equals(geom)


def test_read_layer_ignores_extra_columns(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "m.gpkg")
    conn.execute("CREATE TABLE gpkg_geometry_columns (table_name TEXT, column_name TEXT)")
    conn.execute("INSERT INTO gpkg_geometry_columns VALUES ('lanes', 'shape')")
    conn.execute("CREATE TABLE lanes (fid INTEGER, shape BLOB, lane_index INTEGER, whatever TEXT)")
    conn.execute("INSERT INTO lanes VALUES (7, ?, 2, 'x')", (encode_gpkg_geometry(LINE),))
    conn.execute("INSERT INTO lanes VALUES (8, NULL, NULL, 'y')")
    layer = read_layer(conn, "lanes", ["fid", "lane_index", "absent_column"], "m.gpkg")
    assert layer.columns["fid"].tolist() == [7, 8]
    assert "absent_column" not in layer.columns and "whatever" not in layer.columns
    assert layer.column("absent_column", -1).tolist() == [-1, -1]
    assert layer.geometry[0].equals(LINE) and layer.geometry[1] is None
    assert np.asarray(layer.column("lane_index")).tolist() == [2, None]
    with pytest.raises(DataFormatError, match="m.gpkg: GeoPackage has no layer 'roads'"):
        read_layer(conn, "roads", ["fid"], "m.gpkg")
