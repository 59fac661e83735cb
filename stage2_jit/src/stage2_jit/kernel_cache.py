"""Generated kernels live in files, so that Numba's own on-disk cache (``cache=True``) works
for them and a new process loads compiled code instead of compiling it again.

Each program's source is written to ``<cache dir>/kernel_<hash of source>.py`` (written to a
temporary file, then atomically renamed, so concurrent processes never see half a file) and
run as a module. The folder is ``jax_compilation_cache_dir`` (JAX's option) if set, else
``$JAX_FROM_NUMPY_CACHE_DIR``, or
``~/.cache/jax_from_numpy/kernels`` (``$XDG_CACHE_HOME`` honoured); when it cannot be used, a
warning says so and a temporary folder of the process takes its place.

Numba keeps the compiled code in ``__pycache__``: an index (``.nbi``) and one data file per
set of argument types (``.nbc``). Beside each kernel, ``kernel_<hash>.sha256`` (the format of
``sha256sum``) lists those files' digests as they were after a call that used them: Numba may
read them only while that manifest vouches for every one, so any damage costs a compilation,
never a crash or a wrong value. Two bounds keep the cache small: a process keeps the modules it
used last (``jax_from_numpy_cache_max_modules``), and the folder keeps the entries used last
(``jax_from_numpy_cache_max_size`` bytes; both settings are also environment variables).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from stage1_autodiff.config import config

config.define("jax_from_numpy_cache_max_size", 256 * 2**20,
              "Bytes the kernel cache folder may hold; past it, the least recently used "
              "kernels are deleted. -1: no limit.")
config.define("jax_from_numpy_cache_max_modules", 256,
              "Kernel modules a process keeps loaded for reuse (least recently used go).")
config.define("jax_compilation_cache_dir", None,
              "JAX's name for the folder of compiled programs: here the kernel cache folder, "
              "in place of $JAX_FROM_NUMPY_CACHE_DIR and the default.")
config.define("jax_persistent_cache_min_compile_time_secs", 1.0,
              "Accepted for JAX's scripts; every kernel is kept (Numba's cache has no "
              "threshold, and a kernel takes a good fraction of a second to compile).")
config.define("jax_persistent_cache_min_entry_size_bytes", 0,
              "Accepted for JAX's scripts; every kernel is kept, whatever its size.")

_PREFIX = "_jax_from_numpy_kernel_"  # a kernel module's name: this and its source's hash
_lock = threading.RLock()
_modules: OrderedDict[str, ModuleType] = OrderedDict()  # hash -> module, oldest use first
_folders: dict[Path, Path] = {}  # configured folder -> the one used (itself, or a temporary)


# --8<-- [start:cache_dir]
def cache_dir() -> Path:
    """The configured kernel cache folder (whether or not it can be used: see
    ``usable_cache_dir``).

    Example:
        >>> from stage2_jit import kernel_cache
        >>> isinstance(kernel_cache.cache_dir(), Path)
        True
    """
    configured = config.jax_compilation_cache_dir or os.environ.get("JAX_FROM_NUMPY_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jax_from_numpy" / "kernels"


def source_hash(source: str) -> str:
    """The name of a kernel: the first 20 hex digits of its source's SHA-256.

    Example:
        >>> from stage2_jit import kernel_cache
        >>> len(kernel_cache.source_hash("def program(): pass"))
        20
    """
    return hashlib.sha256(source.encode()).hexdigest()[:20]
# --8<-- [end:cache_dir]


# --8<-- [start:usable_cache_dir]
def usable_cache_dir() -> Path:
    """The folder kernels go to: ``cache_dir()`` if files can be created there, checked once
    per folder and process; otherwise, after a warning, a temporary folder of this process.

    Example:
        >>> from stage2_jit import kernel_cache
        >>> kernel_cache.usable_cache_dir() == kernel_cache.cache_dir()
        True
    """
    configured = cache_dir()
    with _lock:
        if configured not in _folders:
            _folders[configured] = _checked(configured)
        return _folders[configured]


def _checked(folder: Path) -> Path:
    try:
        for place in (folder, folder / "__pycache__"):  # Numba writes into the second
            place.mkdir(parents=True, exist_ok=True)
            descriptor, probe = tempfile.mkstemp(dir=place, prefix=".probe-")
            os.close(descriptor)
            os.unlink(probe)
        return folder
    except OSError as error:  # a file in the way, a read-only folder, no permission, ...
        warnings.warn(f"The kernel cache folder {str(folder)!r} cannot be used ({error}). "
                      "Kernels are compiled into a temporary folder, deleted when this "
                      "process ends, so the next process compiles them again. Set "
                      "JAX_FROM_NUMPY_CACHE_DIR to a folder you can write to.", UserWarning,
                      stacklevel=2)
        return _temporary_folder()


@functools.cache
def _temporary_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="jax_from_numpy_kernels-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
# --8<-- [end:usable_cache_dir]


# --8<-- [start:load_kernel_module]
def load_kernel_module(source: str) -> ModuleType:
    """The module of ``source``: one this process used recently, or loaded from the cache
    folder (the source file written first if it does not hold exactly ``source``).

    Example:
        >>> from stage2_jit import kernel_cache
        >>> module = kernel_cache.load_kernel_module("def program():\\n    return 42\\n")
        >>> module.program()
        42
    """
    key = source_hash(source)
    with _lock:
        module = _modules.get(key)
        if module is None:
            module = _load(usable_cache_dir(), key, source)
        _keep(key, module)
        return module


def _load(folder: Path, key: str, source: str) -> ModuleType:
    folder.mkdir(parents=True, exist_ok=True)  # again: it may have been deleted meanwhile
    path = folder / f"kernel_{key}.py"
    if not _holds(path, source):  # missing, unreadable or changed: (re)write it
        _write_atomically(path, source)
    discard_unless_vouched_for(folder, key)
    # NB: run from the source in memory, not imported: no bytecode (.pyc) is read or written,
    # so there is none to damage. The file is what Numba's cache locates the functions by.
    module = ModuleType(_PREFIX + key)
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # Numba looks a kernel's module up by name
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def _keep(key: str, module: ModuleType) -> None:
    """``module`` becomes the most recently used; past the bound, the least recently used
    leave the table and ``sys.modules`` (an executable that still holds one puts it back
    when it calls it: ``call_kernel``)."""
    _modules[key] = module
    _modules.move_to_end(key)
    sys.modules[module.__name__] = module
    while len(_modules) > max(1, config.jax_from_numpy_cache_max_modules):
        _, oldest = _modules.popitem(last=False)
        if sys.modules.get(oldest.__name__) is oldest:
            del sys.modules[oldest.__name__]
# --8<-- [end:load_kernel_module]


# --8<-- [start:vouched_for]
def discard_unless_vouched_for(folder: Path, key: str) -> None:
    """Deletes Numba's files for kernel ``key`` unless its manifest lists exactly these files
    with exactly these digests. Whatever happened to them (a changed, cut, missing, added or
    swapped file, a damaged or missing manifest), Numba then compiles afresh instead of
    reading them.

    Example:
        >>> import tempfile
        >>> from stage2_jit import kernel_cache
        >>> folder = Path(tempfile.mkdtemp())
        >>> (folder / "__pycache__").mkdir()
        >>> stray = folder / "__pycache__" / "kernel_0123456789abcdef0123.program-3.py311.nbi"
        >>> _ = stray.write_bytes(b"no manifest vouches for this")
        >>> kernel_cache.discard_unless_vouched_for(folder, "0123456789abcdef0123")
        >>> stray.exists()
        False
    """
    if _digests(folder, key) != _manifest(folder, key):
        forget_compiled_code(folder, key)
        return
    try:
        os.utime(_manifest_path(folder, key))  # its time is the entry's last use (prune)
    except FileNotFoundError:
        pass  # no files and no manifest: nothing compiled yet


def seal(folder: Path, key: str) -> None:
    """Writes the manifest of kernel ``key``: its compiled files' digests as they are now,
    after a call that loaded or compiled them. Then the folder is pruned (``prune``)."""
    lines = [f"{digest}  {name}\n" for name, digest in sorted(_digests(folder, key).items())]
    try:
        _write_atomically(_manifest_path(folder, key), "".join(lines))
        prune(folder)
    except OSError:
        pass  # no manifest: the next process compiles again, which is all it costs


def forget_compiled_code(folder: Path, key: str) -> None:
    """Deletes Numba's files for kernel ``key`` and their manifest (not the source)."""
    for path in [*_compiled_files(folder, key), _manifest_path(folder, key)]:
        path.unlink(missing_ok=True)


def _compiled_files(folder: Path, key: str) -> list[Path]:
    return list((folder / "__pycache__").glob(f"kernel_{key}.*"))


def _manifest_path(folder: Path, key: str) -> Path:
    return folder / f"kernel_{key}.sha256"


def _digests(folder: Path, key: str) -> dict[str, str]:
    return {f"__pycache__/{path.name}": _sha256(path) for path in _compiled_files(folder, key)}


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:  # deleted since it was listed: it can match no digest
        return ""


def _manifest(folder: Path, key: str) -> dict[str, str]:
    try:
        lines = _manifest_path(folder, key).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return {}  # no manifest vouches for nothing, and nothing can match it
    pairs = [line.split("  ", 1) for line in lines]
    return {pair[1]: pair[0] for pair in pairs if len(pair) == 2}
# --8<-- [end:vouched_for]


# --8<-- [start:call_kernel]
def call_kernel(module: ModuleType, function: Callable, *args: Any) -> Any:
    """``function(*args)``, where ``function`` is one of ``module``'s (a kernel, or a host
    function that launches them). It is the one place where damage to Numba's files can
    still show: Numba reads them in the first call for each set of argument types, and a
    file another process wrote after ``load_kernel_module`` checked the manifest is unchecked.
    So if the call fails, the kernel's compiled files are discarded and the call is made once
    more, which compiles (an error of the program itself raises again). After a call that
    loaded or compiled code, the files are sealed.

    Example:
        >>> from stage2_jit import kernel_cache
        >>> module = kernel_cache.load_kernel_module("def program(x):\\n    return x + 1\\n")
        >>> kernel_cache.call_kernel(module, module.program, 41)
        42
    """
    if module.__name__ not in sys.modules:  # left the table, but an executable still uses it
        with _lock:
            _keep(_entry(module)[1], module)
    before = _signatures(module, function)
    try:
        result = function(*args)
    except Exception:  # noqa: BLE001 -- any failure may be a damaged file: rebuild and retry
        forget_compiled_code(*_entry(module))
        result = function(*args)
    if _signatures(module, function) != before:
        seal(*_entry(module))
    return result


def compile_kernel(module: ModuleType, function: Any, args: list[Any]) -> None:
    """Compiles ``function``, a kernel of ``module``, for the types of ``args`` (or loads it
    from the disk cache) without calling it, with ``call_kernel``'s repair and sealing."""
    from numba import typeof
    call_kernel(module, function.compile, tuple(typeof(a) for a in args))


def _entry(module: ModuleType) -> tuple[Path, str]:
    """The folder and the hash of a kernel module (not on the fast path: a Path costs)."""
    return Path(module.__file__).parent, module.__name__.removeprefix(_PREFIX)


def _signatures(module: ModuleType, function: Callable) -> int:
    """How many sets of argument types have code: ``function``'s, if it is a Numba function;
    else those of the Numba functions defined in the module (the kernels a host function
    launches; not the ones it imports, whose files are not the module's)."""
    if hasattr(function, "overloads"):
        return len(function.overloads)
    return sum(len(f.overloads) for f in vars(module).values()
               if hasattr(f, "overloads") and f.__module__ == module.__name__)
# --8<-- [end:call_kernel]


# --8<-- [start:prune]
def prune(folder: Path, max_size: int | None = None) -> None:
    """Deletes the least recently used entries of ``folder`` (all files of a kernel together)
    until it holds at most ``max_size`` bytes (default: ``jax_from_numpy_cache_max_size``; a
    negative size is no limit). An entry's last use is its newest file's time.

    Example:
        >>> import tempfile
        >>> from stage2_jit import kernel_cache
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "kernel_0123456789abcdef0123.py").write_text("x = 1\\n")
        >>> kernel_cache.prune(folder, max_size=0)
        >>> list(folder.iterdir())
        []
    """
    _remove_stale_temporaries(folder)
    limit = config.jax_from_numpy_cache_max_size if max_size is None else max_size
    if limit < 0:
        return
    entries = _entries(folder)
    total = sum(size for files in entries.values() for _, size, _ in files)
    by_last_use = sorted(entries, key=lambda key: max(time for _, _, time in entries[key]))
    for key in by_last_use:
        if total <= limit:
            break
        for path, size, _ in entries[key]:
            path.unlink(missing_ok=True)
            total -= size


STALE_SECONDS = 3600.0  # a temporary file this old was left by a process that was killed


def _remove_stale_temporaries(folder: Path) -> None:
    """``_write_atomically``'s temporary files that outlived their writer."""
    for path in folder.glob(".kernel-*.tmp"):
        try:
            if time.time() - path.stat().st_mtime > STALE_SECONDS:
                path.unlink()
        except OSError:  # renamed or deleted meanwhile
            continue


def _entries(folder: Path) -> dict[str, list[tuple[Path, int, float]]]:
    """Each kernel's files in ``folder`` and its ``__pycache__``: (path, size, time)."""
    entries: dict[str, list[tuple[Path, int, float]]] = {}
    for place in (folder, folder / "__pycache__"):
        try:
            found = list(os.scandir(place))
        except OSError:
            continue
        for item in found:
            try:
                stat = item.stat()
            except OSError:  # deleted meanwhile
                continue
            if item.name.startswith("kernel_") and item.is_file():
                key = item.name.removeprefix("kernel_").split(".")[0]
                entries.setdefault(key, []).append((Path(item.path), stat.st_size,
                                                    stat.st_mtime))
    return entries
# --8<-- [end:prune]


# --8<-- [start:write_atomically]
def _holds(path: Path, source: str) -> bool:
    try:
        return path.read_text() == source
    except (OSError, UnicodeDecodeError):
        return False


def _write_atomically(path: Path, source: str) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".kernel-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a shared cache must be readable
        os.replace(temporary, path)
    except BaseException:  # a full disk, say: no temporary file left behind
        Path(temporary).unlink(missing_ok=True)
        raise
# --8<-- [end:write_atomically]
