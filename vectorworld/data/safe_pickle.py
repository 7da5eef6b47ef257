"""A restricted unpickler for data files (ScenarioNet scenarios): builtins containers and scalars and numpy
arrays only. A scenario file is data, never code.

Two layers, both from one allow-list (:data:`ALLOWED`):

1. Before anything is executed, :func:`check_pickle` walks the opcode stream (``pickletools.genops``) and
   refuses every global reference (``GLOBAL``, ``INST``, ``STACK_GLOBAL``) that is not allowed -- and any
   ``STACK_GLOBAL`` whose module and name are not plain strings pushed right before it (the only way the
   standard pickler writes them), since those cannot be checked without running the pickle. Extension
   registry codes (``EXT1/2/4``) and persistent ids are refused outright.
2. :class:`RestrictedUnpickler` resolves only allowed names while loading (``find_class``), so whatever
   slipped past the scan still cannot name a function.

Allowed: ``builtins`` set, frozenset, bytearray, bytes, complex, int, float, str, bool, list, dict, tuple
(Python 2 names ``__builtin__.*`` and ``long`` too); ``collections`` OrderedDict and defaultdict;
``_codecs.encode`` for latin-1 only (how protocol 2 stores bytes); numpy's array and scalar reconstruction
(``numpy[._]core.multiarray._reconstruct`` / ``scalar``, ``numpy[._]core.numeric._frombuffer``,
``numpy.ndarray``, ``numpy.dtype`` and the ``numpy.dtypes.*DType`` classes). Notably *not* allowed:
``builtins.eval`` / ``exec`` / ``getattr`` / ``__import__`` / ``open``, ``os``, ``subprocess``, any other
module.
"""

from __future__ import annotations

import codecs
import collections
import io
import pickle
import pickletools
from pathlib import Path
from typing import Any

import numpy as np

from vectorworld.errors import DataFormatError


class UnsafePickleError(DataFormatError):
    """A pickle refers to something outside the allow-list; nothing of it was executed."""


def _numpy_attr(modules: tuple[str, ...], name: str) -> Any:
    import importlib

    for module in modules:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    return None


def _latin1_encode(text: str, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """``_codecs.encode`` as protocol 2 pickles use it (``encode(str, 'latin1')``), nothing else."""
    if codecs.lookup(encoding).name != "iso8859-1" or not isinstance(text, str):
        raise UnsafePickleError(f"pickle calls _codecs.encode with encoding {encoding!r}; only latin1 is allowed")
    return text.encode("latin-1", errors)


def _allowed() -> dict[tuple[str, str], Any]:
    table: dict[tuple[str, str], Any] = {}
    import builtins

    for name in ("set", "frozenset", "bytearray", "bytes", "complex", "int", "float", "str", "bool", "list",
                 "dict", "tuple"):
        table[("builtins", name)] = table[("__builtin__", name)] = getattr(builtins, name)
    table[("__builtin__", "long")] = int
    table[("__builtin__", "unicode")] = str
    table[("collections", "OrderedDict")] = collections.OrderedDict
    table[("collections", "defaultdict")] = collections.defaultdict
    table[("_codecs", "encode")] = _latin1_encode
    cores = ("numpy._core", "numpy.core")
    for submodule, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"), ("numeric", "_frombuffer")):
        obj = _numpy_attr(tuple(f"{c}.{submodule}" for c in cores), name)
        if obj is not None:
            for core in cores:
                table[(f"{core}.{submodule}", name)] = obj
    table[("numpy", "ndarray")] = np.ndarray
    table[("numpy", "dtype")] = np.dtype
    for name in dir(getattr(np, "dtypes", None)):
        obj = getattr(np.dtypes, name)
        if name.endswith("DType") and isinstance(obj, type) and issubclass(obj, np.dtype):
            table[("numpy.dtypes", name)] = obj
    return table


ALLOWED: dict[tuple[str, str], Any] = _allowed()
_NO_PUSH = {"MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "FRAME", "PROTO"}
_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
               "SHORT_BINSTRING"}
_UNKNOWN = object()


def _refuse(where: str, what: str) -> UnsafePickleError:
    return UnsafePickleError(
        f"{where}: refused: the pickle {what}; a scenario file is data, so only builtins containers/scalars and "
        f"numpy arrays are accepted (nothing in the file was executed)")


def check_pickle(data: bytes, where: str) -> None:
    """Raise :class:`UnsafePickleError` if the pickle names anything outside :data:`ALLOWED`, or
    :class:`DataFormatError` if it is not a readable pickle (truncated, corrupt). Executes nothing."""
    memo: dict[int, Any] = {}
    pushed: list[Any] = [_UNKNOWN, _UNKNOWN]
    try:
        for op, arg, _pos in pickletools.genops(io.BytesIO(data)):
            name = op.name
            if name in ("GLOBAL", "INST"):
                module, _, attr = str(arg).partition(" ")
                if (module, attr) not in ALLOWED:
                    raise _refuse(where, f"names {module}.{attr}")
            elif name == "STACK_GLOBAL":
                module, attr = pushed[-2], pushed[-1]
                if not (isinstance(module, str) and isinstance(attr, str)):
                    raise _refuse(where, "builds a global reference from computed values")
                if (module, attr) not in ALLOWED:
                    raise _refuse(where, f"names {module}.{attr}")
            elif name in ("EXT1", "EXT2", "EXT4"):
                raise _refuse(where, "uses the copyreg extension registry")
            elif name in ("PERSID", "BINPERSID"):
                raise _refuse(where, "uses persistent ids")
            if name == "MEMOIZE":
                memo[len(memo)] = pushed[-1]
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[int(arg)] = pushed[-1]
            if name in _NO_PUSH:
                continue
            if name in _STRING_OPS:
                value: Any = arg if isinstance(arg, str) else _UNKNOWN
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                value = memo.get(int(arg), _UNKNOWN)
            else:
                value = _UNKNOWN
            pushed = [pushed[-1], value]
    except UnsafePickleError:
        raise
    except (ValueError, EOFError, pickle.UnpicklingError) as exc:
        raise DataFormatError(f"{where}: not a readable pickle, truncated or corrupt ({exc})") from exc


class RestrictedUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only :data:`ALLOWED` names (see module docstring)."""

    def __init__(self, file: io.BufferedIOBase, where: str) -> None:
        super().__init__(file)
        self.where = where

    def find_class(self, module: str, name: str) -> Any:
        obj = ALLOWED.get((module, name))
        if obj is None:
            raise _refuse(self.where, f"names {module}.{name}")
        return obj

    def persistent_load(self, pid: Any) -> Any:
        raise _refuse(self.where, "uses persistent ids")


def loads(data: bytes, where: str) -> Any:
    """Check, then load a pickle with :class:`RestrictedUnpickler`. Errors are DataFormatError (refusals:
    UnsafePickleError) naming ``where``."""
    check_pickle(data, where)
    try:
        return RestrictedUnpickler(io.BytesIO(data), where).load()
    except DataFormatError:
        raise
    except Exception as exc:  # noqa: BLE001 -- any failure inside the data is a format error
        raise DataFormatError(f"{where}: not a readable pickle, truncated or corrupt ({type(exc).__name__}: "
                              f"{exc})") from exc


def load_file(path: str | Path) -> Any:
    """:func:`loads` of a file; DataFormatError if it is missing."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    return loads(path.read_bytes(), str(path))
