"""Where fanned-out work runs: ``--scheduler``.

    None            a process pool on every core of this machine (the default)
    local:N         a Dask ``LocalCluster`` of N worker processes, started and closed here
    tcp://host:8786 a running ``dask.distributed`` scheduler (``dask scheduler`` + ``dask worker``s)

Everything that fans out takes a ``concurrent.futures.Executor`` (DESIGN.md "Parallel and long
work"); a Dask client's executor is one, so no study knows where it runs. Work items are pure: they
carry seeds, the description's text and options (host_tools.bindings.source), never a cffi object,
and every worker builds its own C into its own cache. Dask resubmits an item whose worker died
(the scheduler's ``allowed-failures``, 3 by default), which is safe because items are pure.

Dask is an optional extra (``pip install 'manipgen[cluster]'``): only ``--scheduler`` needs it.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

LOCAL = re.compile(r"local:([0-9]+)$")
ADDRESS = re.compile(r"(tcp|tls|inproc|ucx|ws|wss)://\S+$")
INSTALL = "pip install 'manipgen[cluster]'"
T = TypeVar("T")


class SchedulerError(ValueError):
    """A --scheduler that cannot be used (one line for the user)."""


def check_scheduler(scheduler: str | None) -> None:
    """Raise SchedulerError for a --scheduler value that is no ``local:N`` nor an address, or when
    Dask is not installed; before any work starts."""
    if scheduler is None:
        return
    m = LOCAL.match(scheduler)
    if m is None and ADDRESS.match(scheduler) is None:
        raise SchedulerError(
            f"--scheduler {scheduler!r}: give local:N (N worker processes here) or a scheduler's address, "
            "e.g. tcp://10.0.0.5:8786"
        )
    if m is not None and int(m.group(1)) < 1:
        raise SchedulerError(f"--scheduler {scheduler}: local:N needs N >= 1 workers")
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise SchedulerError(f"--scheduler needs Dask's distributed scheduler: {INSTALL}") from None


def reach_scheduler(scheduler: str | None, timeout: str = "10s") -> None:
    """check_scheduler, and for an address that a scheduler answers there (SchedulerError if not):
    before any work starts, not after the first items."""
    check_scheduler(scheduler)
    if scheduler is None or LOCAL.match(scheduler):
        return
    from distributed import Client

    try:
        with Client(scheduler, timeout=timeout):
            pass
    except OSError as exc:
        raise SchedulerError(f"--scheduler {scheduler}: no Dask scheduler answered ({exc})") from None


@contextmanager
def open_executor(scheduler: str | None, workers: int | None = None) -> Iterator[Executor]:
    """The executor for ``scheduler`` (module docstring), shut down (and a local cluster closed) on
    exit. ``workers``: the default process pool's size (default: every core)."""
    check_scheduler(scheduler)
    if scheduler is None:
        with ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
            yield pool
        return
    from distributed import Client, LocalCluster

    m = LOCAL.match(scheduler)
    if m is not None:
        # one thread per worker process: the generated C and CasADi run one item at a time each;
        # its HTTP server on a free port (not 8787, which a running cluster may hold); Dask's own
        # logging silenced (a closing cluster logs its workers' lost heartbeats; an item's error reaches the
        # command through its future)
        with _children_ignore_sigint():
            cluster = LocalCluster(
                n_workers=int(m.group(1)),
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                silence_logs=logging.CRITICAL,
            )
        with cluster, Client(cluster) as client:
            yield client.get_executor(pure=False)
        return
    try:
        client = Client(scheduler, timeout="10s")
    except OSError as exc:
        raise SchedulerError(f"--scheduler {scheduler}: no Dask scheduler answered ({exc})") from None
    with client:
        yield client.get_executor(pure=False)


@contextmanager
def _children_ignore_sigint() -> Iterator[None]:
    """Processes started inside ignore SIGINT: they inherit the ignored signal, and Python keeps an
    ignored SIGINT ignored. Ctrl-C at a terminal reaches the whole process group; the command then
    closes the cluster itself, instead of every worker printing its KeyboardInterrupt traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class InlineExecutor(Executor):
    """Runs each item at once in the calling thread: the executor inside one study item, whose
    worker is already one of many (a nested pool would oversubscribe the node). Written here because
    concurrent.futures has no synchronous executor."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # the caller sees it from .result(), as from any executor
            future.set_exception(exc)
        return future
