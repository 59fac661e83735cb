"""``jax.profiler``: a timeline of what the program did, to open in Perfetto.

``with jax.profiler.trace(log_dir):`` records, until the block ends, every span a
``TraceAnnotation`` marks and (``ProfileOptions().python_tracer_level`` 1, the default) every
Python function call, the library's own included: one sees ``grad``'s tape being written, a
``jit`` tracing, Numba compiling and the kernel running. The spans are written as Chrome
trace events (JSON, one complete event ``"ph": "X"`` per span, times in microseconds) to
``log_dir/plugins/profile/<date>/<host>.trace.json.gz``, which https://ui.perfetto.dev and
``chrome://tracing`` open; ``create_perfetto_trace=True`` also writes
``perfetto_trace.json.gz`` beside it, as JAX does.

NB: JAX's profiler is XLA's (jax/_src/profiler.py over xla/tsl/profiler): it also records
the device's kernels and writes an ``.xplane.pb`` for TensorBoard's profile plugin, which this
one does not (see "Differences from JAX").
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["ProfileOptions", "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "save_device_memory_profile", "start_server",
           "start_trace", "stop_server", "stop_trace", "trace"]


class ProfileOptions:
    """What a trace records. ``python_tracer_level``: 1 records every Python call, 0 only the
    annotations; the other fields are XLA's (the host tracer's level, HLO protos, a start
    time, a duration), kept so that code setting them runs, and change nothing here."""

    def __init__(self) -> None:
        self.host_tracer_level = 2
        self.python_tracer_level = 1
        self.enable_hlo_proto = True
        self.include_dataset_ops = True
        self.start_timestamp_ns = 0
        self.duration_ms = 0
        self.raise_error_on_start_failure = False
        self.advanced_configuration: dict[str, Any] = {}
        self.repository_path = ""
        self.session_id = ""

    def __repr__(self) -> str:
        return (f"ProfileOptions(host_tracer_level={self.host_tracer_level}, "
                f"python_tracer_level={self.python_tracer_level})")


class _Session:
    """One trace being recorded: its spans, as trace events, and where they go."""

    def __init__(self, log_dir: Path, perfetto: bool, link: bool) -> None:
        self.log_dir, self.perfetto, self.link = log_dir, perfetto or link, link
        self.start_ns = time.perf_counter_ns()
        self.events: list[dict[str, Any]] = []
        self.open_calls = threading.local()  # per thread, the start times of open calls

    def add(self, name: str, start_ns: int, end_ns: int, args: dict[str, Any]) -> None:
        """One span, as a complete trace event (list.append is atomic: threads may add)."""
        event = {"ph": "X", "pid": os.getpid(), "tid": threading.get_native_id(),
                 "ts": (start_ns - self.start_ns) / 1e3, "dur": (end_ns - start_ns) / 1e3,
                 "name": name}
        if args:  # (JAX's events have their arguments as strings, and none when empty)
            event["args"] = {key: str(value) for key, value in args.items()}
        self.events.append(event)

    def python_call(self, frame: Any, event: str, arg: Any) -> None:
        """``sys.setprofile``'s hook: a span per Python call, named as JAX names them
        (``$file.py:line function``; a builtin is ``$<unknown> name``)."""
        stack = self.open_calls.__dict__.setdefault("stack", [])
        if event in ("call", "c_call"):
            stack.append(time.perf_counter_ns())
        elif stack:  # a return (a trace started inside a call sees returns it did not open)
            if event == "return":
                code = frame.f_code
                name = f"${Path(code.co_filename).name}:{code.co_firstlineno} {code.co_name}"
            else:
                name = f"$<unknown> {getattr(arg, '__name__', type(arg).__name__)}"
            self.add(name, stack.pop(), time.perf_counter_ns(), {})

    def write(self) -> Path:
        """The trace file(s), in a new directory named for the time, as JAX's; returns it."""
        run = self.log_dir / "plugins" / "profile" / time.strftime("%Y_%m_%d_%H_%M_%S")
        run.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        names = [{"ph": "M", "pid": pid, "name": "process_name",
                  "args": {"name": "/host:CPU"}},
                 {"ph": "M", "pid": pid, "tid": threading.get_native_id(),
                  "name": "thread_name", "args": {"name": "python"}}]
        body = json.dumps({"displayTimeUnit": "ns", "traceEvents": names + self.events})
        files = [f"{socket.gethostname()}.trace.json.gz"]
        files += ["perfetto_trace.json.gz"] if self.perfetto else []
        for file in files:
            with gzip.open(run / file, "wt") as out:
                out.write(body)
        return run


_current: list[_Session] = []  # the trace being recorded, if any (one at a time, as in JAX)


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
    """Starts recording a trace, to be written to ``log_dir`` by :func:`stop_trace`.
    ``create_perfetto_link`` prints where the trace is and how to open it in Perfetto (JAX
    serves it to ui.perfetto.dev and waits); it implies ``create_perfetto_trace``.

    Example:
        >>> import tempfile, stage1_autodiff as jax
        >>> log_dir = tempfile.mkdtemp()
        >>> jax.profiler.start_trace(log_dir)
        >>> jax.profiler.stop_trace()
    """
    if _current:
        raise RuntimeError("Profile has already been started. Only one profile may be run "
                           "at a time: call jax.profiler.stop_trace() first.")
    session = _Session(Path(log_dir), create_perfetto_trace, create_perfetto_link)
    _current.append(session)
    if (profiler_options or ProfileOptions()).python_tracer_level:
        threading.setprofile(session.python_call)  # threads started from now on
        sys.setprofile(session.python_call)


def stop_trace() -> None:
    """Stops the trace :func:`start_trace` began and writes it."""
    if not _current:
        raise RuntimeError("No profile started: call jax.profiler.start_trace(log_dir) "
                           "first, or use `with jax.profiler.trace(log_dir):`.")
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]
    session = _current.pop()
    run = session.write()
    if session.link:
        print(f"The trace is {run / 'perfetto_trace.json.gz'}: open it at "
              f"https://ui.perfetto.dev (Open trace file).")


@contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None) -> Iterator[None]:
    """Records a trace of the ``with`` block into ``log_dir`` (:func:`start_trace`).

    Example:
        >>> import tempfile, stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> with jax.profiler.trace(tempfile.mkdtemp()):
        ...     y = jnp.ones(3) * 2
    """
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """Marks the span of a ``with`` block in a trace, named ``name``, with ``kwargs`` as
    its arguments. Outside a trace it costs a check.

    Example:
        >>> import stage1_autodiff as jax
        >>> with jax.profiler.TraceAnnotation("load the batch", size=128):
        ...     pass
    """

    def __init__(self, name: str, **kwargs: Any) -> None:
        self.name, self.kwargs = name, kwargs

    def __enter__(self) -> TraceAnnotation:
        self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if _current:
            _current[0].add(self.name, self._start, time.perf_counter_ns(), self.kwargs)


class StepTraceAnnotation(TraceAnnotation):
    """A :class:`TraceAnnotation` for one step of a training loop: ``step_num=`` says which
    (TensorBoard groups a trace by steps; here it is one of the span's arguments).

    Example:
        >>> import stage1_autodiff as jax
        >>> with jax.profiler.StepTraceAnnotation("train", step_num=3):
        ...     pass
    """

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)


def annotate_function(func: Callable, name: str | None = None,
                      **decorator_kwargs: Any) -> Callable:
    """``func``, each call a span of a trace named ``name`` (the function's name by
    default).

    Example:
        >>> import stage1_autodiff as jax
        >>> @jax.profiler.annotate_function
        ... def step(x):
        ...     return x + 1
        >>> step(1)
        2
    """
    name = name or getattr(func, "__qualname__", None) or repr(func)

    @functools.wraps(func)
    def annotated(*args: Any, **kwargs: Any) -> Any:
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)
    return annotated


def _not_here(what: str, instead: str) -> NotImplementedError:
    return NotImplementedError(f"jax.profiler.{what} is not implemented here: {instead}")


def device_memory_profile(backend: str | None = None) -> bytes:
    """JAX's is a pprof profile of the device's live buffers; not implemented here."""
    raise _not_here("device_memory_profile", "read jax.devices()[0].memory_stats() for the "
                    "bytes in use and their peak (stage 2 on).")


def save_device_memory_profile(filename: os.PathLike | str,
                               backend: str | None = None) -> None:
    """JAX's writes :func:`device_memory_profile` to ``filename``; not implemented here."""
    device_memory_profile(backend)


def start_server(port: int, requires_backend: bool = True) -> Any:
    """JAX's starts a gRPC server for TensorBoard to capture traces; not implemented here."""
    raise _not_here("start_server", "record a trace of the code itself with "
                    "`with jax.profiler.trace(log_dir):`.")


def stop_server() -> None:
    """Stops :func:`start_server`'s server; there is none here."""
    raise _not_here("stop_server", "no server was started (start_server is not "
                    "implemented).")
