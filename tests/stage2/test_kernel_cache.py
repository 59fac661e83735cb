"""The kernel cache: damage to any of its files costs a compilation, never a crash or a wrong
value; a folder that cannot be used costs a warning; and what it keeps is bounded (modules in
a process, bytes on disk), while a jitted function that died frees its executables."""

import errno
import gc
import json
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings
import weakref
import zlib
from importlib.util import cache_from_source
from pathlib import Path

import numpy as np
import pytest
from backend_under_test import cpu_only

import stage2_jit as jax
from stage2_jit import kernel_cache
from stage2_jit import numpy as jnp

# Two kernels, so that a file can be swapped with the other kernel's. The child checks its
# values against NumPy itself and prints how many kernels Numba loaded and compiled.
CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np, stage2_jit as jax, stage2_jit.numpy as jnp
    from stage2_jit import kernel_cache
    x = np.linspace(-2.0, 2.0, 7, dtype=np.float32)
    programs = {"f": (lambda x: jnp.sin(x) * 3.0 + 1.0, lambda x: np.sin(x) * 3.0 + 1.0),
                "g": (lambda x: jnp.exp(x) - 2.0 * x, lambda x: np.exp(x) - 2.0 * x)}
    report = {"hits": 0, "misses": 0}
    for name, (fun, expected) in programs.items():
        jitted = jax.jit(fun, backend="cpu")
        np.testing.assert_allclose(np.asarray(jitted(x)), expected(x), rtol=1e-5, atol=1e-6)
        executable = jitted.lower(x).compile()._executable
        report[name] = kernel_cache.source_hash(executable.source)
        report["hits"] += sum(executable.kernel.stats.cache_hits.values())
        report["misses"] += sum(executable.kernel.stats.cache_misses.values())
    print(json.dumps(report))
""")


def _run_child(folder: Path) -> dict:
    env = dict(os.environ, JAX_FROM_NUMPY_CACHE_DIR=str(folder))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # Python writes bytecode, as by default
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> tuple[Path, dict]:
    """A cache folder a first process filled, and what it reported (each kernel's hash)."""
    folder = tmp_path_factory.mktemp("filled")
    report = _run_child(folder)
    assert report["misses"] == 2
    return folder, report


# ------------------------------------------------------------------------------------------
# Damage: each way of damaging each kind of file
# ------------------------------------------------------------------------------------------

def _file(folder: Path, key: str, kind: str) -> Path:
    """The file of kernel ``key`` of a kind: source, manifest, nbi, nbc or pyc."""
    if kind == "source":
        return folder / f"kernel_{key}.py"
    if kind == "manifest":
        return folder / f"kernel_{key}.sha256"
    if kind == "pyc":  # the cache never writes one: plant what an import would have written
        source = _file(folder, key, "source")
        return Path(py_compile.compile(str(source), cfile=cache_from_source(str(source))))
    (found,) = (folder / "__pycache__").glob(f"kernel_{key}.*.{kind}")
    return found


def _overwrite_middle(path: Path, other: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = b"\xa5" * len(data[middle:middle + 64])
    path.write_bytes(bytes(data))


def _truncate(path: Path, other: Path) -> None:
    path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])


def _remove(path: Path, other: Path) -> None:
    path.unlink()


def _swap(path: Path, other: Path) -> None:
    mine, theirs = path.read_bytes(), other.read_bytes()
    path.write_bytes(theirs)
    other.write_bytes(mine)


DAMAGES = {"changed mid-file": _overwrite_middle, "truncated": _truncate, "removed": _remove,
           "swapped with the other kernel's": _swap}
PATTERNS = [(kind, damage) for kind in ["nbc", "nbi", "source", "manifest"]
            for damage in DAMAGES] + [("pyc", "truncated"), ("pyc", "changed mid-file")]


@pytest.mark.slow
@cpu_only
@pytest.mark.parametrize("kind, damage", PATTERNS, ids=[f"{k} {d}" for k, d in PATTERNS])
def test_damaged_file_is_rebuilt(filled, tmp_path, kind, damage):
    template, report = filled
    folder = tmp_path / "cache"
    shutil.copytree(template, folder)  # copy2: the same bytes and times as the first process
    target, other = _file(folder, report["f"], kind), _file(folder, report["g"], kind)
    DAMAGES[damage](target, other)
    second = _run_child(folder)  # the right values (the child checks them), no crash
    assert second["f"] == report["f"] and second["g"] == report["g"]
    third = _run_child(folder)  # the damage did not stick: both kernels load
    assert third["misses"] == 0 and third["hits"] == 2


@pytest.mark.slow
@cpu_only
def test_every_file_garbled_and_no_bytecode_written(filled, tmp_path):
    template, _ = filled
    assert not list(template.rglob("*.pyc"))  # kernels run from source: no .pyc to damage
    folder = tmp_path / "cache"
    shutil.copytree(template, folder)
    for path in folder.rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00 not a kernel \x00")
    assert _run_child(folder)["misses"] == 2
    assert _run_child(folder)["misses"] == 0


@pytest.mark.slow
@cpu_only
def test_concurrent_processes_share_a_new_folder(tmp_path):
    env = dict(os.environ, JAX_FROM_NUMPY_CACHE_DIR=str(tmp_path))
    children = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(3)]
    for child in children:
        _, stderr = child.communicate()
        assert child.returncode == 0, stderr  # each checked its values
    _run_child(tmp_path)


def test_manifest_vouches_for_exactly_the_compiled_files(tmp_path):
    key, pycache = "0123456789abcdef0123", tmp_path / "__pycache__"
    pycache.mkdir()
    index = pycache / f"kernel_{key}.program-3.py311.nbi"
    index.write_bytes(b"an index")
    kernel_cache.seal(tmp_path, key)
    assert f"__pycache__/{index.name}" in (tmp_path / f"kernel_{key}.sha256").read_text()
    kernel_cache.discard_unless_vouched_for(tmp_path, key)
    assert index.exists()  # vouched for: kept
    extra = pycache / f"kernel_{key}.program-3.py311.1.nbc"
    extra.write_bytes(b"code no manifest lists")
    kernel_cache.discard_unless_vouched_for(tmp_path, key)
    assert not index.exists() and not extra.exists()
    assert not (tmp_path / f"kernel_{key}.sha256").exists()


# ------------------------------------------------------------------------------------------
# A folder that cannot be used
# ------------------------------------------------------------------------------------------

def _unique_function(label: str):
    """A jitted function whose kernel no other test loads: a constant derived from ``label``,
    so this process has no module for it yet and has to use the folder."""
    c = 1.0 + zlib.crc32(label.encode()) % 9973 / 9973
    return jax.jit(lambda x: jnp.cos(x) * c - c, backend="cpu"), lambda x: np.cos(x) * c - c


def _refuse_writes(monkeypatch, folder: Path, error: OSError) -> None:
    """Makes creating files in ``folder`` fail with ``error``. Root may write anywhere, so as
    root the cache's own file creation (``tempfile.mkstemp`` there) is made to fail."""
    if os.geteuid() != 0:
        os.chmod(folder, 0o555 if error.errno == errno.EROFS else 0o000)
        return
    real = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).is_relative_to(folder):
            raise error
        return real(*args, dir=dir, **kwargs)
    monkeypatch.setattr(kernel_cache.tempfile, "mkstemp", mkstemp)


def _a_file(tmp_path: Path, monkeypatch) -> Path:
    path = tmp_path / "a-file"
    path.write_text("in the way")
    return path


def _under_a_file(tmp_path: Path, monkeypatch) -> Path:
    return _a_file(tmp_path, monkeypatch) / "kernels"


def _read_only(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "read-only"
    folder.mkdir()
    _refuse_writes(monkeypatch, folder, OSError(errno.EROFS, "Read-only file system"))
    return folder


def _no_permission(tmp_path: Path, monkeypatch) -> Path:
    parent = tmp_path / "private"
    parent.mkdir()
    _refuse_writes(monkeypatch, parent, PermissionError(errno.EACCES, "Permission denied"))
    return parent / "kernels"


UNUSABLE = {"a file in the way": _a_file, "a path under a file": _under_a_file,
            "a read-only folder": _read_only, "no permission": _no_permission}


@cpu_only
@pytest.mark.parametrize("case", UNUSABLE)
def test_unusable_folder_warns_once_and_compiles_elsewhere(tmp_path, monkeypatch, case):
    folder = UNUSABLE[case](tmp_path, monkeypatch)
    monkeypatch.setenv("JAX_FROM_NUMPY_CACHE_DIR", str(folder))
    x = np.linspace(0.0, 3.0, 5, dtype=np.float32)
    try:
        first, first_expected = _unique_function(f"{case} first")
        with pytest.warns(UserWarning, match="JAX_FROM_NUMPY_CACHE_DIR") as caught:
            np.testing.assert_allclose(np.asarray(first(x)), first_expected(x), rtol=1e-6)
        assert any(str(folder) in str(warning.message) for warning in caught)
        second, second_expected = _unique_function(f"{case} second")
        with warnings.catch_warnings(record=True) as later:
            warnings.simplefilter("always")
            np.testing.assert_allclose(np.asarray(second(x)), second_expected(x), rtol=1e-6)
        assert not [w for w in later if "kernel cache" in str(w.message)]  # warned once
        used = kernel_cache.usable_cache_dir()
        assert used != folder and list(used.glob("kernel_*.py"))
    finally:
        os.chmod(folder.parent if case == "no permission" else tmp_path, 0o755)
        if folder.is_dir():
            os.chmod(folder, 0o755)


# ------------------------------------------------------------------------------------------
# Bounds: modules kept in a process, executables of dead functions, bytes on disk
# ------------------------------------------------------------------------------------------

@pytest.fixture
def setting():
    """Sets a config option for one test, then restores it."""
    saved = {}

    def set_option(name, value):
        saved.setdefault(name, getattr(jax.config, name))
        jax.config.update(name, value)
    yield set_option
    for name, value in saved.items():
        jax.config.update(name, value)


@cpu_only
def test_modules_beyond_the_bound_are_dropped_and_reload(setting):
    setting("jax_from_numpy_cache_max_modules", 2)
    x = np.linspace(0.0, 1.0, 4, dtype=np.float32)
    functions = [_unique_function(f"bound {i}") for i in range(3)]
    modules = []
    for jitted, expected in functions:
        np.testing.assert_allclose(np.asarray(jitted(x)), expected(x), rtol=1e-6)
        modules.append(jitted.lower(x).compile()._executable.module)
        assert len(kernel_cache._modules) <= 2
    oldest = modules[0]
    assert oldest not in kernel_cache._modules.values() and oldest.__name__ not in sys.modules
    # Its executable still runs: a read-only argument needs code for new argument types,
    # which Numba finds through the module's name, so the call puts the module back first.
    read_only = x.copy()
    read_only.flags.writeable = False
    jitted, expected = functions[0]
    np.testing.assert_allclose(np.asarray(jitted(read_only)), expected(x), rtol=1e-6)
    assert sys.modules[oldest.__name__] is oldest
    # A new jitted function of the same program loads it again.
    again, _ = _unique_function("bound 1")
    np.testing.assert_allclose(np.asarray(again(x)), functions[1][1](x), rtol=1e-6)


def _executable_of_a_dead_function(backend: str) -> weakref.ref:
    c = np.float32(0.5)
    jitted = jax.jit(lambda x: jnp.tanh(x) * c, backend=backend)
    x = jnp.ones(3)
    jax.grad(lambda y: jitted(y).sum())(x)  # also the programs derived for differentiation
    return weakref.ref(jitted.lower(x).compile()._executable)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_a_dead_jitted_function_frees_its_executables(backend):
    executable = _executable_of_a_dead_function(backend)
    gc.collect()
    assert executable() is None


@cpu_only
def test_disk_cache_is_pruned_least_recently_used_first(tmp_path, monkeypatch, setting):
    monkeypatch.setenv("JAX_FROM_NUMPY_CACHE_DIR", str(tmp_path))
    x = np.linspace(0.0, 1.0, 4, dtype=np.float32)
    functions = [_unique_function(f"prune {i}") for i in range(3)]
    keys = []
    for age, (jitted, expected) in zip([300, 200, 100], functions):  # seconds since last use
        np.testing.assert_allclose(np.asarray(jitted(x)), expected(x), rtol=1e-6)
        keys.append(kernel_cache.source_hash(jitted.lower(x).compile()._executable.source))
        for path in [*tmp_path.glob(f"kernel_{keys[-1]}.*"),
                     *tmp_path.glob(f"__pycache__/kernel_{keys[-1]}.*")]:
            os.utime(path, (path.stat().st_atime, path.stat().st_mtime - age))
    entries = kernel_cache._entries(tmp_path)
    assert all(len(entries[key]) == 4 for key in keys)  # source, manifest, index, code
    sizes = {key: sum(size for _, size, _ in entries[key]) for key in keys}
    kernel_cache.prune(tmp_path, max_size=sizes[keys[1]] + sizes[keys[2]])
    assert set(kernel_cache._entries(tmp_path)) == set(keys[1:])  # the oldest went, whole
    # The configured bound applies after each compilation (here: nothing fits), and a
    # pruned kernel still computes: loaded anew, it is compiled again.
    setting("jax_from_numpy_cache_max_size", 1)
    setting("jax_from_numpy_cache_max_modules", 1)
    newest, expected = _unique_function("prune 3")
    np.testing.assert_allclose(np.asarray(newest(x)), expected(x), rtol=1e-6)
    assert not kernel_cache._entries(tmp_path)
    oldest, expected = _unique_function("prune 0")
    np.testing.assert_allclose(np.asarray(oldest(x)), expected(x), rtol=1e-6)
    assert not kernel_cache._entries(tmp_path)


def test_prune_removes_the_temporaries_a_killed_writer_left(tmp_path):
    """A process killed while writing leaves ``_write_atomically``'s temporary file; pruning
    deletes one older than an hour, and never a writer's live one (or a kernel's files)."""
    stale, live = tmp_path / ".kernel-stale.tmp", tmp_path / ".kernel-live.tmp"
    kernel = tmp_path / "kernel_0123456789abcdef0123.py"
    for path in (stale, live, kernel):
        path.write_text("x = 1\n")
    old = stale.stat().st_mtime - kernel_cache.STALE_SECONDS - 60
    os.utime(stale, (old, old))
    os.utime(kernel, (old, old))
    kernel_cache.prune(tmp_path, max_size=-1)  # no size limit: only the stale file goes
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kernel-live.tmp", kernel.name]


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    def full_disk(*args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(kernel_cache.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        kernel_cache._write_atomically(tmp_path / "kernel_x.py", "x = 1\n")
    assert not list(tmp_path.iterdir())
