"""Generated kernels live in files, so that Numba's own on-disk cache (``cache=True``) works
for them and a new process loads compiled code instead of compiling it again.

Each program's source is written to ``<cache dir>/kernel_<hash of source>.py`` (written to a
temporary file, then atomically renamed, so concurrent processes never see half a file) and
imported as a module. The folder is ``$JAX_FROM_NUMPY_CACHE_DIR``, or
``~/.cache/jax_from_numpy/kernels`` (``$XDG_CACHE_HOME`` honoured).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

_lock = threading.Lock()
_modules: dict[str, ModuleType] = {}


# --8<-- [start:cache_dir]
def cache_dir() -> Path:
    configured = os.environ.get("JAX_FROM_NUMPY_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jax_from_numpy" / "kernels"


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:20]
# --8<-- [end:cache_dir]


# --8<-- [start:load_kernel_module]
def load_kernel_module(source: str) -> ModuleType:
    """The module of ``source``, from this process's table, the disk, or written anew."""
    key = source_hash(source)
    with _lock:
        if key not in _modules:
            _modules[key] = _import(key, source)
        return _modules[key]


def _import(key: str, source: str) -> ModuleType:
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"kernel_{key}.py"
    if not _holds(path, source):  # missing, unreadable or corrupt: (re)write it
        _write_atomically(path, source)
    _drop_unreadable_compiled_code(folder, key)
    name = f"_jax_from_numpy_kernel_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Numba's cache finds functions by their module
    spec.loader.exec_module(module)
    return module
# --8<-- [end:load_kernel_module]


# --8<-- [start:drop_unreadable]
def _drop_unreadable_compiled_code(folder: Path, key: str) -> None:
    """Numba keeps compiled code in ``__pycache__``: an index (``.nbi``, a pickle) and the
    code (``.nbc``, a pickle that names this kernel's module). If one is unreadable, delete
    them all, so Numba compiles afresh instead of failing."""
    if not all(_readable(entry) for entry in _compiled_entries(folder, key)):
        forget_compiled_code(folder, key)


def _compiled_entries(folder: Path, key: str) -> list[Path]:
    return list((folder / "__pycache__").glob(f"kernel_{key}.*.nb[ic]"))


def forget_compiled_code(folder: Path, key: str) -> None:
    for entry in _compiled_entries(folder, key):
        entry.unlink(missing_ok=True)


def _readable(entry: Path) -> bool:
    try:
        with open(entry, "rb") as f:
            if entry.suffix == ".nbi":
                pickle.load(f)  # the format version: unpickles without the kernel module
                return True
            return f.read(1) == b"\x80"  # a pickle's first byte
    except Exception:  # noqa: BLE001 -- any failure to read means: rebuild
        return False
# --8<-- [end:drop_unreadable]


# --8<-- [start:write_atomically]
def _holds(path: Path, source: str) -> bool:
    try:
        return path.read_text() == source
    except (OSError, UnicodeDecodeError):
        return False


def _write_atomically(path: Path, source: str) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".kernel-", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    os.chmod(temporary, 0o644)  # mkstemp makes it private; a shared cache must be readable
    os.replace(temporary, path)
# --8<-- [end:write_atomically]
