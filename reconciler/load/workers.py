"""Reading many manifests on several cores: contiguous parts read by forked workers.

Reading 10,000 manifests (parsing them and the checks each document allows on its own) costs
about 2 s of one core, half of it in libyaml producing events; the checks that span files
(duplicate names, one manifest per live object) are cheap. So when there are many files and
the platform forks, ``read_in_parts`` splits the work into contiguous parts: forked children
read every part but the first and send back what they found, pickled through a pipe, while
this process reads the first; the results are returned in part order, so a caller that takes
them in order sees exactly what a sequential read gives.

Safety, and why each holds:

- Linux only (``fork`` is unsafe with macOS system frameworks and absent on Windows), and only
  while this process runs a single thread (``/proc/self/task``): a child forked while another
  thread holds a lock (an executor's resolver thread, a logging handler) could deadlock. With
  another thread running, the read is sequential.
- ``plan`` calls this from inside a running asyncio loop. The loop lives in this thread and is
  suspended in the synchronous call; a child never returns to it. The child first detaches
  from what the loop installed (the signal wake-up fd, shared with the parent's loop, and the
  SIGINT handler that would cancel the parent's task), so that a Ctrl-C simply ends it; it
  then reads its part, writes the result and leaves with ``os._exit``: no atexit handlers, no
  flushing of stdio buffers inherited from the parent, no finalizers.
- Nothing is lost when a worker fails: an exit status other than 0, a signal, or an answer
  that does not unpickle completely makes this process read that part itself (so a genuine
  error in reading is raised here, as a sequential read would raise it).
- A worker is killed and reaped whatever happens here (an exception, KeyboardInterrupt).
- The cyclic collector stays as the caller set it (the loader pauses it while reading): a
  child inherits that state and never runs a collection over the parent's copied objects.

``RECONCILE_LOAD_WORKERS`` sets how many processes read (1: only this one); by default, one
per CPU this process may run on, at most ``MAX_PROCESSES``.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, BinaryIO, TypeVar

from reconciler.model.errors import ConfigError

T = TypeVar("T")
R = TypeVar("R")

VARIABLE = "RECONCILE_LOAD_WORKERS"
# Below this many items per process, forking and pickling cost about what they save
# (measured: two processes gain from about 1,000 manifests on; see the issue-17 load note).
MIN_PER_PROCESS = 500
MAX_PROCESSES = 4


def configured_processes(env: Mapping[str, str] | None = None) -> int:
    """Return how many processes may read manifests (``RECONCILE_LOAD_WORKERS`` or the CPUs)."""
    source = os.environ if env is None else env
    text = source.get(VARIABLE, "").strip()
    if text:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise ConfigError(
                f"{VARIABLE}={text!r}: expected a positive whole number (1 reads in one process)"
            )
        return value
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_PROCESSES))


def can_fork() -> bool:
    """True on Linux while this process runs exactly one thread (forking is then safe)."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # pragma: no cover - /proc not mounted: do not guess
        return False


def split(items: Sequence[T], parts: int) -> list[Sequence[T]]:
    """Split ``items`` into ``parts`` contiguous slices of nearly equal length, in order."""
    size, extra = divmod(len(items), parts)
    out: list[Sequence[T]] = []
    start = 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out


def plan_processes(count: int, processes: int | None = None) -> int:
    """Return how many processes should read ``count`` items (1 when forking is not worth it)."""
    wanted = configured_processes() if processes is None else processes
    by_size = count // MIN_PER_PROCESS
    n = min(wanted, by_size)
    if n < 2 or not can_fork():
        return 1
    return n


def read_in_parts(items: Sequence[T], read: Callable[[Sequence[T]], R], processes: int) -> list[R]:
    """Return ``[read(part) for part in split(items, processes)]``, parts after the first read
    by forked workers (``processes`` from ``plan_processes``; 1 reads everything here)."""
    if processes < 2:
        return [read(items)]
    parts = split(items, processes)
    workers: list[tuple[int, int]] = []  # (pid, read end of its pipe), not yet received
    try:
        for part in parts[1:]:
            workers.append(_fork(read, part, [fd for pid, fd in workers if pid]))
        results = [read(parts[0])]
        for part in parts[1:]:
            pid, fd = workers.pop(0)
            received = _receive(pid, fd) if pid else _FAILED
            results.append(read(part) if received is _FAILED else received)
        return results
    finally:
        for pid, fd in workers:  # only after an exception: end and reap what is left
            if not pid:
                continue
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


_FAILED: Any = object()


def _fork(
    read: Callable[[Sequence[T]], R], part: Sequence[T], siblings: list[int]
) -> tuple[int, int]:
    """Start a worker reading ``part``; return its pid and the read end of its pipe.

    ``siblings`` are the read ends of the workers started before: a child closes them, so a
    worker blocked writing sees a broken pipe as soon as this process goes away.
    """
    try:
        r, w = os.pipe()
    except OSError:  # out of descriptors: this part is read here
        return 0, -1
    try:
        pid = os.fork()
    except OSError:  # out of processes or memory: this part is read here
        os.close(r)
        os.close(w)
        return 0, -1
    if pid == 0:  # the child: never returns
        code = 1
        try:
            for fd in (r, *siblings):
                os.close(fd)
            _detach_from_parent_loop()
            with os.fdopen(w, "wb") as out:
                _send(read(part), out)
            code = 0
        except BaseException:  # any failure: the parent reads this part itself
            pass
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _detach_from_parent_loop() -> None:
    """In a child: stop sharing the parent's signal wake-up fd; let SIGINT/SIGTERM end it."""
    with contextlib.suppress(ValueError):  # only the main thread may do this
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _send(result: object, out: BinaryIO) -> None:
    """Write a worker's result (a seam: tests replace it to make a worker fail)."""
    pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)


def _receive(pid: int, fd: int) -> Any:
    """Read a worker's result, then reap it; ``_FAILED`` unless both went well."""
    try:
        with os.fdopen(fd, "rb") as stream:
            result = pickle.load(stream)
            complete = stream.read(1) == b""
    except Exception:  # truncated, garbled or missing answer: read it here
        result, complete = _FAILED, False
    try:
        _, status = os.waitpid(pid, 0)
        succeeded = os.waitstatus_to_exitcode(status) == 0
    except ChildProcessError:  # reaped by someone else's SIGCHLD handler: judge by the answer
        succeeded = True
    return result if complete and succeeded else _FAILED
