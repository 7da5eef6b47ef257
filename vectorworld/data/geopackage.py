"""GeoPackage (SQLite) layers -> shapely geometries, with no GDAL.

A GeoPackage geometry blob is a small header followed by standard WKB (see FORMATS.md)::

    "GP" | version u8 | flags u8 | srs_id int32 | envelope (0/32/48/64 bytes) | WKB

flags bit 0 = byte order of the header (1 = little endian), bits 1-3 = envelope code (0 none, 1 -> 32
bytes, 2 or 3 -> 48, 4 -> 64), bit 4 = empty geometry. Layers are read by column name, so unknown extra
columns and tables are ignored.
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely

from vectorworld.errors import DataFormatError

_ENVELOPE_BYTES = {0: 0, 1: 32, 2: 48, 3: 48, 4: 64}
_HEADER_BYTES = 8


def gpkg_to_wkb(blob: bytes, where: str = "geometry") -> bytes | None:
    """Strip the GeoPackage header; return the WKB, or None for an empty geometry."""
    if blob is None:
        return None
    blob = bytes(blob)
    if len(blob) < _HEADER_BYTES or blob[:2] != b"GP":
        raise DataFormatError(f"{where}: not a GeoPackage geometry blob (no 'GP' magic)")
    flags = blob[3]
    code = (flags >> 1) & 0x7
    if code not in _ENVELOPE_BYTES:
        raise DataFormatError(f"{where}: invalid GeoPackage envelope code {code}")
    if flags & 0x10:
        return None
    start = _HEADER_BYTES + _ENVELOPE_BYTES[code]
    if len(blob) <= start:
        raise DataFormatError(f"{where}: truncated GeoPackage geometry blob ({len(blob)} bytes)")
    return blob[start:]


def parse_gpkg_geometries(blobs: Sequence[bytes | None], where: str = "geometry") -> np.ndarray:
    """(N,) object array of shapely geometries (None for NULL or empty) from GeoPackage blobs."""
    wkbs = [gpkg_to_wkb(b, where) for b in blobs]
    out = np.full(len(wkbs), None, dtype=object)
    present = [i for i, w in enumerate(wkbs) if w is not None]
    if present:
        try:
            out[present] = shapely.from_wkb([wkbs[i] for i in present])
        except shapely.errors.GEOSException as exc:
            raise DataFormatError(f"{where}: invalid WKB in a GeoPackage geometry: {exc}") from exc
    return out


def encode_gpkg_geometry(geometry: shapely.Geometry, srs_id: int = 0, envelope: bool = True) -> bytes:
    """A GeoPackage blob (little-endian header, optional 2-D envelope) for ``geometry``."""
    flags = 0x01 | ((1 if envelope else 0) << 1) | (0x10 if geometry.is_empty else 0)
    header = b"GP" + bytes([0, flags]) + struct.pack("<i", srs_id)
    if envelope:
        xmin, ymin, xmax, ymax = geometry.bounds
        header += struct.pack("<4d", xmin, xmax, ymin, ymax)
    return header + shapely.to_wkb(geometry, byte_order=1)


@dataclass(frozen=True)
class Layer:
    """Rows of one layer: ``columns`` name -> (N,) array (object dtype for text/blob/NULL mixes) and the
    geometries (N,) (object array of shapely geometries or None)."""

    name: str
    columns: dict[str, np.ndarray]
    geometry: np.ndarray

    def __len__(self) -> int:
        return len(self.geometry)

    def column(self, name: str, default: Any = None) -> np.ndarray:
        """A column, or a column filled with ``default`` when the layer lacks it."""
        if name in self.columns:
            return self.columns[name]
        return np.full(len(self), default, dtype=object)

    def subset(self, keep: np.ndarray) -> Layer:
        return Layer(self.name, {k: v[keep] for k, v in self.columns.items()}, self.geometry[keep])


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def table_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]


def geometry_column(conn: sqlite3.Connection, table: str) -> str | None:
    """The geometry column of a layer from ``gpkg_geometry_columns`` (else a column named geom/geometry)."""
    if "gpkg_geometry_columns" in table_names(conn):
        row = conn.execute("SELECT column_name FROM gpkg_geometry_columns WHERE table_name = ?",
                           (table,)).fetchone()
        if row is not None:
            return str(row[0])
    columns = table_columns(conn, table)
    for name in ("geom", "geometry"):
        if name in columns:
            return name
    return None


def read_layer(conn: sqlite3.Connection, table: str, columns: Sequence[str], where: str) -> Layer:
    """Read the given attribute columns (those the table has) and the geometry of a layer.

    ``where`` names the file in error messages. A missing table raises DataFormatError.
    """
    if table not in table_names(conn):
        raise DataFormatError(f"{where}: GeoPackage has no layer {table!r}")
    present = set(table_columns(conn, table))
    wanted = [c for c in columns if c in present]
    geom = geometry_column(conn, table)
    select = [f'"{c}"' for c in wanted] + ([f'"{geom}"'] if geom else [])
    if not select:
        return Layer(table, {}, np.zeros(0, dtype=object))
    try:
        rows = conn.execute(f'SELECT {", ".join(select)} FROM "{table}"').fetchall()
    except sqlite3.DatabaseError as exc:
        raise DataFormatError(f"{where}: cannot read layer {table!r}: {exc}") from exc
    cols: dict[str, np.ndarray] = {}
    for i, name in enumerate(wanted):
        values = [r[i] for r in rows]
        arr = np.array(values, dtype=object)
        if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            arr = np.array(values)
        cols[name] = arr
    geometry = (parse_gpkg_geometries([r[-1] for r in rows], f"{where}: layer {table}") if geom
                else np.full(len(rows), None, dtype=object))
    return Layer(table, cols, geometry)
