"""HDF5 model store: a registry of model classes plus atomic :func:`save` and checked :func:`load`.

A model file is a 512-byte header followed by an HDF5 file (HDF5 reads the header as its "user
block")::

    LINXLING-MODEL 1\n  sha256 <SHA-256 of every byte after the header>\n  size <those bytes>\n

:func:`load` checks the SHA-256 of the whole HDF5 part before HDF5 parses a byte of it, so a
flipped bit anywhere (the class name, a shape, an attribute's storage) is a
:class:`ModelFormatError`, never a crash or a hang inside the HDF5 library. It then checks the
layout against what :func:`save` writes before reading any data: no external or soft links, no
external or virtual storage, only the store's dtypes and filters, sizes bounded by the file's own
size. Files written before the header (format version 1 without it) load with the layout checks
and the per-dataset CRC-32s only.

HDF5 layout (``FORMAT_VERSION = 1``)::

    /                 attrs: format_version, linxling_version, model, dtype, created, params (JSON)
    /arrays/<key>     dataset                      attrs: kind="array"
    /arrays/<key>     dataset (UTF-8 vlen str)     attrs: kind="str", str_dtype
    /arrays/<key>/    group                        attrs: kind="dict"        (nested dict)
    /arrays/<key>/    group data/indices/indptr    attrs: kind="sparse", format, shape, container

Keys are escaped (``%`` -> ``%25``, ``/`` -> ``%2F``, NUL -> ``%00``; ``.``, ``..`` and the
empty string get reserved spellings) so any ``str`` works as a key, e.g. ``"zh-Hans"``.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import tempfile
import zlib
from typing import Any, Callable
from urllib.parse import unquote

import h5py
import numpy as np
import scipy.sparse as sp

from linxling._backend import to_numpy
from linxling._version import __version__

__all__ = ["FORMAT_VERSION", "ModelFormatError", "register_model", "registered_models", "save", "load",
           "read_info"]

FORMAT_VERSION = 1
_REGISTRY: dict[str, type] = {}
_REQUIRED_ATTRS = ("format_version", "model", "params")


class ModelFormatError(ValueError):
    """A file is not a (readable, supported) linxling model file."""


# --------------------------------------------------------------------------- registry
def register_model(name: str) -> Callable[[type], type]:
    """Class decorator registering a model class under ``name`` for :func:`save` / :func:`load`.

    The class must implement ``_get_state(self) -> (params, arrays)`` and the classmethod
    ``_from_state(cls, params, arrays)``. Registering a *different* class under a name that is
    already taken raises ``ValueError`` (re-registering the same class, e.g. on reload, is fine).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_model name must be a non-empty str, got {name!r}")

    def decorator(cls: type) -> type:
        for method in ("_get_state", "_from_state"):
            if not callable(getattr(cls, method, None)):
                raise TypeError(f"{cls.__qualname__} must define {method}() to be registered as model {name!r}")
        old = _REGISTRY.get(name)
        if old is not None and old is not cls and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ValueError(f"model name {name!r} is already registered to {old.__module__}.{old.__qualname__}")
        _REGISTRY[name] = cls
        cls._linxling_model_name = name
        return cls

    return decorator


def registered_models() -> dict[str, type]:
    """A copy of the registry: model name -> class."""
    return dict(_REGISTRY)


def _name_of(model: Any) -> str:
    cls = type(model)
    for name, registered in _REGISTRY.items():
        if registered is cls:
            return name
    raise TypeError(f"{cls.__module__}.{cls.__qualname__} is not a registered model; decorate it with "
                    f"@linxling.io.register_model(name). Registered: {sorted(_REGISTRY) or 'none'}")


def _lookup(name: str, path: str) -> type:
    # Estimators register themselves when their module is imported (models -> io, never
    # io -> models); a built-in model not imported yet is found in linxling/_registry.py (plain
    # data) and its module imported, by the exact name the file gives.
    if name not in _REGISTRY:
        from linxling import _registry
        if name in _registry.names():
            _registry.model_class(name)         # imports its module, which registers the class
    if name not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise ModelFormatError(f"{path}: unknown model {name!r}; registered models: {known}. Load it with "
                               "linxling.load(path), which registers the built-in models, or import the "
                               "module defining it (it must use @register_model) before loading.")
    return _REGISTRY[name]


# --------------------------------------------------------------------------- key escaping
def _escape(key: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"array dict keys must be str, got {type(key).__name__} {key!r}")
    if key == "":
        return "%"  # a lone '%' never comes out of the escaping below
    out = key.replace("%", "%25").replace("/", "%2F").replace("\x00", "%00")
    if out in (".", ".."):
        out = out.replace(".", "%2E")
    return out


def _unescape(name: str) -> str:
    return "" if name == "%" else unquote(name)


# --------------------------------------------------------------------------- writing
def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def _is_str_array(arr: np.ndarray) -> bool:
    if arr.dtype.kind == "U":
        return True
    return arr.dtype == object and all(isinstance(x, str) for x in arr.flat)


def _crc32(arr: np.ndarray) -> int:
    """CRC-32 of an array's values: its bytes (C order) or, for strings, their UTF-8 encoding."""
    if arr.dtype == object or arr.dtype.kind == "U":
        crc = 0
        for s in arr.flat:
            crc = zlib.crc32(s.encode("utf-8") + b"\x00", crc)
        return crc
    return zlib.crc32(np.ascontiguousarray(arr).tobytes())


def _checked(ds: h5py.Dataset, value: np.ndarray, where: str) -> np.ndarray:
    """``value`` read from ``ds``, after comparing it with the checksum stored at save time.

    Files written before checksums were stored have no ``crc32`` attribute and are not checked.
    """
    stored = ds.attrs.get("crc32")
    if stored is not None and _crc32(value) != int(stored):
        raise ModelFormatError(f"dataset arrays{where} fails its checksum: the file is corrupt")
    return value


def _float_sizes(arrays: dict, acc: dict[str, int]) -> None:
    for value in arrays.values():
        if isinstance(value, dict):
            _float_sizes(value, acc)
            continue
        dt, size = None, 0
        if sp.issparse(value):
            dt, size = value.dtype, value.nnz
        elif hasattr(value, "dtype") and hasattr(value, "size"):
            dt, size = np.dtype(value.dtype), int(value.size)
        if dt is not None and dt.kind in "fc":
            acc[dt.name] = acc.get(dt.name, 0) + max(size, 1)


def _ds_kwargs(arr: np.ndarray, compression: str | None) -> dict:
    if compression is None or arr.ndim == 0 or arr.size == 0:
        return {}
    if compression == "auto":
        if arr.dtype.kind in "fc":                   # trained weights: random low bits, ~10 % off
            return {}
        compression = "gzip"
    kw: dict[str, Any] = {"compression": compression}
    if arr.dtype.kind in "fiucb" and arr.dtype.itemsize > 1:
        kw["shuffle"] = True
    return kw


def _write_node(group: h5py.Group, key: str, value: Any, compression: str | None, where: str) -> None:
    name = _escape(key)
    where = f"{where}/{key}"
    if isinstance(value, dict):
        sub = group.create_group(name, track_order=True)
        sub.attrs["kind"] = "dict"
        for k, v in value.items():
            _write_node(sub, k, v, compression, where)
        return
    if sp.issparse(value):
        fmt = value.format if value.format in ("csr", "csc") else "csr"
        mat = value.asformat(fmt)
        sub = group.create_group(name)
        sub.attrs.update(kind="sparse", format=fmt, shape=np.asarray(mat.shape, dtype=np.int64),
                         container="array" if isinstance(value, sp.sparray) else "matrix")
        for part in ("data", "indices", "indptr"):
            arr = np.asarray(getattr(mat, part))
            ds = sub.create_dataset(part, data=arr, **_ds_kwargs(arr, compression))
            ds.attrs["crc32"] = np.int64(_crc32(arr))
        return
    if value is None:
        raise TypeError(f"arrays{where} is None; store only arrays, dicts and sparse matrices")
    arr = np.asarray(to_numpy(value))
    if _is_str_array(arr):
        if any("\x00" in s for s in arr.flat):
            raise ValueError(f"arrays{where} contains strings with NUL characters, which HDF5 cannot store")
        for i, s in enumerate(arr.flat):
            try:
                s.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(f"arrays{where}[{i}] = {s!r} is not valid Unicode text ({exc.reason}: "
                                 "a lone surrogate, e.g. from errors='surrogateescape'); the store writes "
                                 "UTF-8") from None
        ds = group.create_dataset(name, data=arr.astype(object), dtype=h5py.string_dtype("utf-8"),
                                  **_ds_kwargs(arr, compression))
        ds.attrs["kind"] = "str"
        ds.attrs["str_dtype"] = arr.dtype.str if arr.dtype.kind == "U" else "object"
        ds.attrs["crc32"] = np.int64(_crc32(arr))
        return
    if arr.dtype == object or arr.dtype.kind not in "biufcSV":
        raise TypeError(f"arrays{where} has unsupported dtype {arr.dtype} (object arrays must hold only str)")
    ds = group.create_dataset(name, data=arr, **_ds_kwargs(arr, compression))
    ds.attrs["kind"] = "array"
    ds.attrs["crc32"] = np.int64(_crc32(arr))


def save(model: Any, path: str | os.PathLike, *, compression: str | None = "auto") -> None:
    """Save a registered model to an HDF5 file, atomically.

    The state is written to a temporary file in the destination directory, flushed and
    fsync'ed, then moved over ``path`` with :func:`os.replace`. On any error or interrupt
    (``KeyboardInterrupt`` included) the temporary file is removed and an existing file at
    ``path`` is left untouched.

    Parameters
    ----------
    model : object
        Instance of a class decorated with :func:`register_model`. ``model._get_state()``
        returns ``(params, arrays)``: ``params`` a JSON-serialisable dict (NumPy scalars are
        converted to Python numbers, tuples become lists) and ``arrays`` a dict mapping str
        keys to NumPy arrays (numeric, bool, bytes or str), nested dicts of the same, or
        SciPy sparse matrices/arrays (CSR and CSC kept, other formats stored as CSR).
        CuPy arrays are copied to the host.
    path : str or path-like
        Destination file (conventionally ``*.h5``).
    compression : {"auto", "gzip", "lzf", None}, default "auto"
        HDF5 filter for non-scalar datasets. ``"auto"``: gzip (with the byte shuffle) for integer,
        boolean and string datasets, none for floating-point ones, whose trained low bits gzip
        cannot compress: on a 185 MiB Cr5 model (float64) gzip saved 10 % of the file at 4-6x
        the save time and 1.3-2x the load time (docs/io.md). ``"gzip"`` / ``"lzf"``: that filter
        for every dataset; ``None``: no filter.

    Raises
    ------
    TypeError
        If the model class is not registered or the state holds unsupported values.
    """
    if compression not in ("auto", "gzip", "lzf", None):
        raise ValueError(f"compression must be 'auto', 'gzip', 'lzf' or None, got {compression!r}")
    if isinstance(model, (str, bytes, os.PathLike)) and type(path) in _REGISTRY.values():
        raise TypeError(f"save(model, path) takes the model first: got a {type(model).__name__} then a "
                        f"{type(path).__name__} (the arguments are swapped)")
    name = _name_of(model)
    state = model._get_state()
    if not (isinstance(state, tuple) and len(state) == 2):
        raise TypeError(f"{type(model).__qualname__}._get_state() must return (params: dict, arrays: dict)")
    params, arrays = state
    if not isinstance(params, dict) or not isinstance(arrays, dict):
        raise TypeError(f"{type(model).__qualname__}._get_state() must return (params: dict, arrays: dict), "
                        f"got ({type(params).__name__}, {type(arrays).__name__})")
    try:
        params_json = json.dumps(params, default=_json_default, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"model params are not JSON serialisable: {exc}") from exc
    sizes: dict[str, int] = {}
    _float_sizes(arrays, sizes)
    main_dtype = max(sizes, key=sizes.get) if sizes else "none"

    path = _check_target(path)

    def write_hdf5(tmp: str) -> None:
        # the HDF5 file is built in memory and written with plain file I/O: a full disk is then a
        # clean OSError here, never an HDF5 error while it flushes its caches (which left the
        # library in a state that crashed the interpreter at exit)
        with h5py.File(f"linxling-save-{id(model)}", "w", driver="core", backing_store=False) as f:
            f.attrs["format_version"] = np.int64(FORMAT_VERSION)
            f.attrs["linxling_version"] = __version__
            f.attrs["model"] = name
            f.attrs["dtype"] = main_dtype
            f.attrs["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            f.attrs["params"] = params_json
            f.attrs["params_crc32"] = np.int64(zlib.crc32(params_json.encode("utf-8")))
            group = f.create_group("arrays", track_order=True)
            group.attrs["kind"] = "dict"
            for key, value in arrays.items():
                _write_node(group, key, value, compression, "")
            f.flush()
            image = f.id.get_file_image()
        with open(tmp, "wb") as fh:
            fh.write(_file_header(image))
            fh.write(image)

    atomic_replace(path, write_hdf5)


HEADER_SIZE = 512
_MAGIC = b"LINXLING-MODEL 1\n"


def _file_header(image: bytes) -> bytes:
    """The 512-byte header of a model file: magic, SHA-256 and size of the HDF5 image."""
    text = _MAGIC + f"sha256 {hashlib.sha256(image).hexdigest()}\nsize {len(image)}\n".encode("ascii")
    return text + b"\n" * (HEADER_SIZE - len(text))


def _verify_header(path: str) -> bool:
    """True for a file with the header (after checking its SHA-256 and size), False for a
    header-less file of format version 1 (an HDF5 signature at byte 0); ModelFormatError
    otherwise. Streams the file once."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        head = fh.read(HEADER_SIZE)
        if head[:8] == b"\x89HDF\r\n\x1a\n":
            return False
        if not head.startswith(_MAGIC):
            raise ModelFormatError(f"{path}: not a linxling model file (no linxling or HDF5 signature)")
        try:
            fields = dict(line.split(b" ", 1) for line in head[len(_MAGIC):].split(b"\n")[:2])
            digest, n = fields[b"sha256"].decode("ascii"), int(fields[b"size"])
            expected = (_MAGIC + f"sha256 {digest}\nsize {n}\n".encode("ascii")).ljust(HEADER_SIZE, b"\n")
        except (ValueError, KeyError, UnicodeDecodeError):
            raise ModelFormatError(f"{path}: the model file's header is damaged") from None
        if head != expected:               # every byte of the header counts, its padding too
            raise ModelFormatError(f"{path}: the model file's header is damaged")
        if n != size - HEADER_SIZE:
            what = "truncated" if n > size - HEADER_SIZE else "modified after it was saved (it grew)"
            raise ModelFormatError(f"{path}: the model file is {what}: {size - HEADER_SIZE} bytes after "
                                   f"the header, {n} written")
        h = hashlib.sha256()
        while True:
            block = fh.read(1 << 22)
            if not block:
                break
            h.update(block)
    if h.hexdigest() != digest:
        raise ModelFormatError(f"{path}: the model file fails its SHA-256 checksum: it is corrupt or was "
                               "modified after it was saved")
    return True


def _check_target(path: str) -> str:
    """The destination of a save or an export, checked: not empty, not a directory (nor a name
    ending in a separator), in an existing directory, not a read-only file. A symbolic link at
    ``path`` is replaced by the new file (its target is left alone). A device, FIFO or socket,
    and any path in /dev or /proc (/dev/stdout, /dev/null), is refused: renaming a file over it
    would replace it."""
    if not isinstance(path, (str, bytes, os.PathLike)):   # os.fsdecode's message named no argument
        raise TypeError(f"path must be a str or os.PathLike (the file to write), got {type(path).__name__}")
    path = os.fsdecode(path)                 # a bytes path as the file system decodes it
    if not path:
        raise ValueError("path is empty: give the file to write, e.g. 'model.h5'")
    if "\0" in path:                         # os.stat's "embedded null byte" named no argument
        raise ValueError(f"path {path!r} contains a NUL character, which no file name can hold")
    if path.endswith(("/", os.sep)) or os.path.isdir(path):
        raise IsADirectoryError(21, "the path names a directory, not a file to write", path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(2, f"directory {directory!r} does not exist", path)
    # The file is written beside its destination and renamed over it, which would replace a
    # device, a FIFO or /dev/stdout (a symbolic link) with a regular file: as root, `export ...
    # /dev/stdout` replaced the system's /dev/stdout and `... /dev/null` its /dev/null.
    real_dir = os.path.realpath(directory)
    if (os.path.exists(path) and not os.path.isfile(path)) or real_dir in ("/dev", "/proc") \
            or real_dir.startswith("/proc/"):
        raise ValueError(f"{path}: not a regular file to write (a device, FIFO, socket or stream such as "
                         "/dev/stdout or /dev/null): linxling writes a file beside it and renames it into "
                         "place; give the path of a file")
    if os.path.isfile(path) and not os.path.islink(path) and not os.stat(path).st_mode & 0o222:
        raise PermissionError(13, "the file is read-only; it was left as it is (make it writable "
                                  "to replace it, or write elsewhere)", path)
    return path


def atomic_replace(path: str, write: Callable[[str], object]) -> None:
    """Write ``path`` atomically: ``write(tmp)`` fills a temporary file beside it (named
    ``.NAME.PID.XXXXXXXX.tmp`` and locked with ``flock`` while it is written), which is fsync'ed,
    given the mode a new file would get, and renamed over ``path``; on any failure (or interrupt)
    the temporary file is removed and an existing ``path`` is untouched. Ctrl-C during the write
    is held until the write is done and then aborts the save before the rename. A symbolic link
    at ``path`` is replaced, not followed; a read-only file is refused. Used by the model store,
    :func:`export_vectors` and the command line's ``embed``.
    """
    atomic_replace_all([(path, write)])


def atomic_replace_all(items: list[tuple[str, Callable[[str], object]]]) -> None:
    """:func:`atomic_replace` for several files that belong together (a matrix and its
    vocabulary): every temporary file is written first, and only when all are complete are they
    renamed over their destinations, so a failure while writing any of them leaves every
    destination as it was (renames do not fail for want of space)."""
    paths = [_check_target(p) for p, _ in items]
    for p in paths:
        _remove_stale_temporaries(p)
    made: list[tuple[int, str, str]] = []           # (fd, tmp, destination)
    try:
        with _sigint_held() as interrupted:
            for p, (_, write) in zip(paths, items, strict=True):
                directory = os.path.dirname(os.path.abspath(p))
                try:
                    fd, tmp = tempfile.mkstemp(dir=directory, prefix=_tmp_prefix(p) + f"{os.getpid()}.",
                                               suffix=".tmp")
                except OSError as exc:         # named after the destination, not the temporary file
                    raise type(exc)(exc.errno, f"cannot create a file in {directory!r} to write it "
                                               f"({exc.strerror}); nothing was written", p) from exc
                made.append((fd, tmp, p))
                _lock(fd, blocking=True)
                write(tmp)
                _fsync_path(tmp)
        if interrupted():
            raise KeyboardInterrupt("the save was interrupted; the files at the destination are unchanged")
        for _, tmp, p in made:
            os.chmod(tmp, _target_mode(p))
        for _, tmp, p in made:
            os.replace(tmp, p)
    except BaseException:
        for _, tmp, _ in made:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    finally:
        for fd, _, _ in made:
            os.close(fd)                               # releases the locks
    for d in dict.fromkeys(os.path.dirname(os.path.abspath(p)) for p in paths):
        _fsync_dir(d)


def _lock(fd: int, blocking: bool) -> bool:
    """flock(LOCK_EX) on ``fd``; False when not blocking and another open file holds it."""
    try:
        import fcntl
    except ImportError:                              # pragma: no cover - not POSIX
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError:                                  # a file system without locks: assume free
        return True
    return True


class _sigint_held:
    """Hold SIGINT (Ctrl-C) while the block runs (main thread only); ``interrupted()`` says
    whether one came. Raising at an arbitrary point inside the HDF5 library or a file write
    was swallowed there ("Exception ignored ...") and the save completed."""

    def __enter__(self) -> Callable[[], bool]:
        import signal
        import threading
        self._got = False
        self._old = None
        if threading.current_thread() is threading.main_thread():
            try:
                self._old = signal.signal(signal.SIGINT, self._handler)
            except ValueError:                          # pragma: no cover - no signals here
                self._old = None
        return lambda: self._got

    def _handler(self, signum: int, frame: Any) -> None:
        self._got = True

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            import signal
            signal.signal(signal.SIGINT, self._old)


#: bytes of a file name the temporary's name keeps whole: NAME_MAX is 255 on common file systems,
#: and the temporary adds a dot, the PID, 8 random characters and ".tmp" (up to 28 bytes)
_TMP_NAME_BYTES = 200


def _tmp_prefix(path: str) -> str:
    """Temporary files of a save to ``path`` are ``.NAME.PID.XXXXXXXX.tmp`` beside it. A NAME too
    long to fit a file name with those additions (a legal name of 228-255 bytes made every save
    fail with "File name too long") is cut, and a hash of the whole name keeps it its own."""
    name = os.path.basename(path)
    raw = os.fsencode(name)
    if len(raw) > _TMP_NAME_BYTES:
        digest = hashlib.sha256(raw).hexdigest()[:16]
        name = os.fsdecode(raw[:_TMP_NAME_BYTES - 17]) + "~" + digest   # os.listdir's spelling
    return f".{name}."


def _remove_stale_temporaries(path: str) -> None:
    """Remove the temporary files that killed saves to ``path`` left behind.

    A temporary file is stale when no process holds its lock (a writer holds it from creation
    to rename): a save in progress anywhere, another PID namespace or container included, is
    left alone; the writer's PID in the name is only informative.
    """
    directory = os.path.dirname(os.path.abspath(path))
    prefix = _tmp_prefix(path)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        full = os.path.join(directory, name)
        try:
            fd = os.open(full, os.O_RDONLY)
        except OSError:
            continue
        try:
            if _lock(fd, blocking=False):
                os.unlink(full)
        except OSError:
            pass
        finally:
            os.close(fd)


def _fsync_path(path: str, *, best_effort: bool = False) -> None:
    """fsync a file (errors raise) or, ``best_effort``, a directory: that makes a rename durable
    but is not supported everywhere (e.g. Windows), so its errors are ignored."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        if best_effort:
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not best_effort:
            raise
    finally:
        os.close(fd)


def _fsync_dir(directory: str) -> None:
    _fsync_path(directory, best_effort=True)


def _target_mode(path: str) -> int:
    """Permissions for the saved file: those of the file being replaced, else 0o666 & ~umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        pass
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except OSError:
        pass
    return 0o644


# --------------------------------------------------------------------------- reading
def _read_node(node: h5py.Group | h5py.Dataset, where: str) -> Any:
    kind = node.attrs.get("kind", "array")
    if isinstance(kind, bytes):
        kind = kind.decode()
    if isinstance(node, h5py.Group):
        if kind == "sparse":
            fmt = node.attrs["format"]
            shape = tuple(int(s) for s in node.attrs["shape"])
            parts = tuple(_checked(node[part], node[part][()], f"{where}/{part}")
                          for part in ("data", "indices", "indptr"))
            cls = {"csr": (sp.csr_matrix, sp.csr_array), "csc": (sp.csc_matrix, sp.csc_array)}[fmt]
            return cls[1 if node.attrs.get("container") == "array" else 0](parts, shape=shape)
        if kind != "dict":
            raise ModelFormatError(f"unknown group kind {kind!r} at arrays{where}")
        return {_unescape(name): _read_node(child, f"{where}/{_unescape(name)}") for name, child in node.items()}
    if kind == "str":
        values = node.asstr()[()]
        str_dtype = node.attrs.get("str_dtype", "object")
        arr = np.empty(np.shape(values), dtype=object)
        arr[...] = values
        _checked(node, arr, where)
        if str_dtype == "object":
            return arr
        return np.asarray(values, dtype=str).astype(str_dtype)
    if kind != "array":
        raise ModelFormatError(f"unknown dataset kind {kind!r} at arrays{where}")
    return _checked(node, np.asarray(node[()]), where)


def _open(path: str | os.PathLike) -> tuple[str, h5py.File]:
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike (a model file), got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such model file", path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory, not a model file", path)
    if not os.path.isfile(path):
        raise ModelFormatError(f"{path}: not a regular file (a FIFO, socket or device); not a model file")
    with open(path, "rb"):  # raises PermissionError as such, before h5py blurs it
        pass
    _verify_header(path)
    if not h5py.is_hdf5(path):
        raise ModelFormatError(f"{path}: not an HDF5 file (no HDF5 signature); not a linxling model")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise ModelFormatError(f"{path}: cannot be read as HDF5, the file is probably truncated or "
                               f"corrupt ({exc})") from exc
    try:
        _check_layout(f, os.path.getsize(path))
    except ModelFormatError as exc:
        f.close()
        raise ModelFormatError(f"{path}: {exc}") from None
    except (OSError, KeyError, RuntimeError, ValueError, TypeError) as exc:
        f.close()
        raise ModelFormatError(f"{path}: the HDF5 structure is damaged ({type(exc).__name__}: {exc})") from exc
    return path, f


#: HDF5 filters the store writes: deflate (gzip), shuffle, LZF
_FILTERS = {1, 2, 32000}
#: a dataset may hold at most this many times the file's size (gzip compresses at most ~1,032:1)
_MAX_EXPANSION = 1100
#: and never more than this many bytes, whatever the file says
MAX_DATASET_BYTES = 64 * 2 ** 30


def _check_layout(f: h5py.File, file_size: int) -> None:
    """What :func:`save` writes, and nothing else, before any data is read: every link under
    ``/arrays`` a hard link (no soft or external links that pull in other files), every dataset
    stored in this file (no external raw storage, no virtual dataset), of a numeric or UTF-8
    string dtype, filtered only by the store's filters, and of a size the file can hold (a few
    kB declaring 64 GiB would otherwise be allocated); attributes of plain types."""
    for name in ("format_version", "model", "params"):
        if name in f.attrs and f.attrs.get_id(name).get_type().get_class() not in (
                h5py.h5t.INTEGER, h5py.h5t.STRING):
            raise ModelFormatError(f"attribute {name!r} has an unexpected type")
    if "arrays" not in f:
        return
    link = f.get("arrays", getlink=True)
    if not isinstance(link, h5py.HardLink):
        raise ModelFormatError(f"'arrays' is a {type(link).__name__}, not a group of this file")
    limit = min(MAX_DATASET_BYTES, _MAX_EXPANSION * max(file_size, 1))

    def visit(group: h5py.Group, where: str) -> None:
        for name in group:
            link = group.get(name, getlink=True)
            here = f"arrays{where}/{_unescape(name)}"
            if not isinstance(link, h5py.HardLink):
                raise ModelFormatError(f"{here} is a {type(link).__name__} (a link to other data); "
                                       "model files hold their data themselves")
            node = group[name]
            if isinstance(node, h5py.Group):
                visit(node, f"{where}/{_unescape(name)}")
                continue
            if not isinstance(node, h5py.Dataset):
                raise ModelFormatError(f"{here} is neither a group nor a dataset")
            if node.external:
                raise ModelFormatError(f"{here} keeps its data in external file(s) {node.external}; "
                                       "model files hold their data themselves")
            if node.is_virtual:
                raise ModelFormatError(f"{here} is a virtual dataset (data from other files)")
            dt = node.dtype
            is_str = h5py.check_string_dtype(dt) is not None
            if not is_str and (dt.kind not in "biufc" or dt.fields is not None or dt.subdtype is not None):
                raise ModelFormatError(f"{here} has dtype {dt}, which the store does not write")
            filters = set(node.id.get_create_plist().get_nfilters() and
                          [node.id.get_create_plist().get_filter(i)[0]
                           for i in range(node.id.get_create_plist().get_nfilters())] or [])
            if filters - _FILTERS:
                raise ModelFormatError(f"{here} uses HDF5 filter(s) {sorted(filters - _FILTERS)}, which the "
                                       "store does not write")
            n = int(np.prod(node.shape, dtype=np.float64)) if node.shape is not None else 0
            nbytes = n * (16 if is_str else dt.itemsize)
            if nbytes > limit:
                raise ModelFormatError(f"{here} declares shape {node.shape} ({nbytes:,} bytes), more than a "
                                       f"{file_size:,}-byte model file can hold")
            if not filters and not is_str and nbytes > node.id.get_storage_size() + 64:
                raise ModelFormatError(f"{here} declares {nbytes:,} bytes but stores "
                                       f"{node.id.get_storage_size():,}: the file is corrupt")
    visit(f["arrays"], "")


def _attr_str(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _header(path: str, f: h5py.File) -> dict:
    missing = [a for a in _REQUIRED_ATTRS if a not in f.attrs]
    if missing:
        raise ModelFormatError(f"{path}: HDF5 file was not written by linxling "
                               f"(missing attribute(s) {', '.join(missing)})")
    version = f.attrs["format_version"]
    if isinstance(version, (bool, np.bool_)) or not isinstance(version, (int, np.integer)):
        raise ModelFormatError(f"{path}: invalid format_version {version!r} (expected an integer)")
    version = int(version)
    writer = _attr_str(f.attrs.get("linxling_version", "unknown"))
    if version > FORMAT_VERSION:
        raise ModelFormatError(f"{path}: written with file format version {version} (linxling {writer}); "
                               f"this linxling {__version__} reads format versions <= {FORMAT_VERSION}. "
                               "Upgrade linxling to load it.")
    if version < 1:
        raise ModelFormatError(f"{path}: invalid format_version {version}")
    params_text = _attr_str(f.attrs["params"])
    stored = f.attrs.get("params_crc32")
    if stored is not None and zlib.crc32(params_text.encode("utf-8")) != int(stored):
        raise ModelFormatError(f"{path}: the params attribute fails its checksum: the file is corrupt")
    try:
        params = json.loads(params_text)
    except (TypeError, ValueError) as exc:
        raise ModelFormatError(f"{path}: params attribute is not valid JSON ({exc})") from exc
    if not isinstance(params, dict):
        raise ModelFormatError(f"{path}: params attribute must be a JSON object")
    if "arrays" not in f or not isinstance(f["arrays"], h5py.Group):
        raise ModelFormatError(f"{path}: missing 'arrays' group; not a complete linxling model file")
    return {"format_version": version, "linxling_version": writer, "model": _attr_str(f.attrs["model"]),
            "dtype": _attr_str(f.attrs.get("dtype", "none")), "created": _attr_str(f.attrs.get("created", "")),
            "params": params}


def read_info(path: str | os.PathLike) -> dict:
    """Header of a model file without loading arrays or the model class.

    Returns
    -------
    dict
        ``format_version``, ``linxling_version``, ``model``, ``dtype``, ``created``, ``params``.
    """
    path, f = _open(path)
    try:
        with f:
            return _header(path, f)
    except (OSError, KeyError, RuntimeError) as exc:
        raise ModelFormatError(f"{path}: cannot read model header, the file is probably corrupt ({exc})") from exc


def load(path: str | os.PathLike) -> Any:
    """Load a model saved with :func:`save` (also available as ``linxling.load``).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    object
        ``cls._from_state(params, arrays)`` for the registered class named in the file.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ModelFormatError
        (a ``ValueError``) if the file is not HDF5, is truncated/corrupt, was not written by
        linxling, has a newer ``format_version``, or names an unknown model.
    """
    path, f = _open(path)
    try:
        with f:
            header = _header(path, f)
            cls = _lookup(header["model"], path)
            arrays = _read_node(f["arrays"], "")
    except ModelFormatError as exc:
        if str(exc).startswith(path):
            raise
        raise ModelFormatError(f"{path}: {exc}") from exc
    except (OSError, KeyError, RuntimeError, TypeError, ValueError, UnicodeError, AttributeError) as exc:
        raise ModelFormatError(f"{path}: cannot read model data, the file is probably truncated or "
                               f"corrupt ({type(exc).__name__}: {exc})") from exc
    params = dict(header["params"])
    # files written before each model saved its parameters itself (LinxlingEstimator._params_state)
    # kept them beside the state: restored after it
    saved = params.pop("init_params", None)
    try:
        obj = cls._from_state(params, arrays)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from None
    except KeyError as exc:
        raise ModelFormatError(f"{path}: the {header['model']} model lacks {exc} (a parameter or dataset "
                               "it needs): the file is incomplete or corrupt") from exc
    except (TypeError, ValueError, IndexError, AttributeError, UnicodeError) as exc:
        raise ModelFormatError(f"{path}: its {header['model']} state is inconsistent "
                               f"({type(exc).__name__}: {exc})") from exc
    if isinstance(saved, dict) and callable(getattr(obj, "_restore_init_params", None)):
        try:
            obj._restore_init_params(saved)
        except (TypeError, ValueError) as exc:
            raise ModelFormatError(f"{path}: the saved parameters cannot be restored ({exc})") from exc
    return obj
