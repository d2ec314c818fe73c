"""Reading many manifests on several cores: contiguous blocks shared out to forked workers.

Reading 10,000 manifests (parsing them and the checks each document allows on its own) costs
about 2 s of one core, half of it in libyaml producing events; the checks that span files
(duplicate names, one manifest per live object) are cheap. So when there are many files and
the platform forks, ``read_in_parts`` cuts the list into contiguous blocks (``BLOCK`` files
or more) and puts their numbers in a pipe; this process and its forked children each take the
next number from the pipe (a read of 4 bytes: the kernel hands each number to one reader) and
read that block, until the pipe is empty. A busy core thus takes fewer blocks instead of
holding the others up. Children pickle each block as they finish it and send them all back
through a second pipe when the queue is empty; the
results are returned in block order, so a caller that takes them in order sees exactly what a
sequential read gives. ``start_parts`` is the same read in two steps: the workers start at
once, and ``Parts.finish`` later joins them (this process reads the blocks still queued) —
the command line meanwhile imports the stages it needs next.

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
- Nothing is lost when a worker fails: after an exit status other than 0, a signal, or an
  answer that does not unpickle completely, this process reads every block it took (so a
  genuine error in reading is raised here, as a sequential read would raise it).
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
from typing import Any, BinaryIO, Generic, TypeVar

from reconciler.model.errors import ConfigError

T = TypeVar("T")
R = TypeVar("R")

VARIABLE = "RECONCILE_LOAD_WORKERS"
# Below this many items per process, forking and pickling cost about what they save. At
# 1,000 manifests two processes read in 0.13 s instead of 0.21 s on an idle 2-core machine,
# and in 0.26 s instead of 0.35 s with two busy loops beside them (median of 7 reads each);
# an earlier, slower hand-off lost ~0.04 s there on a busy machine.
MIN_PER_PROCESS = 500
MAX_PROCESSES = 4
# Files per block (about 10 ms of reading): small enough to share work evenly, large enough
# that taking a block costs nothing. At most MAX_BLOCKS numbers (4 bytes each) so that the
# queue fits a pipe's buffer (PIPE_BUF, 4 KiB) and is written at once.
BLOCK = 50
MAX_BLOCKS = 1000


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


def blocks(count: int, size: int | None = None) -> list[tuple[int, int]]:
    """Cut ``range(count)`` into contiguous ``(start, end)`` blocks of ``size`` or more, in order."""
    size = max(size or BLOCK, -(-count // MAX_BLOCKS), 1)
    return [(start, min(start + size, count)) for start in range(0, count, size)]


def plan_processes(count: int, processes: int | None = None) -> int:
    """Return how many processes should read ``count`` items (1 when forking is not worth it)."""
    wanted = configured_processes() if processes is None else processes
    by_size = count // MIN_PER_PROCESS
    n = min(wanted, by_size)
    if n < 2 or not can_fork():
        return 1
    return n


def read_in_parts(items: Sequence[T], read: Callable[[Sequence[T]], R], processes: int) -> list[R]:
    """Return ``read`` of each contiguous block of ``items``, in order, blocks shared with
    forked workers (``processes`` from ``plan_processes``; 1 reads everything here at once)."""
    return start_parts(items, read, processes).finish()


def start_parts(
    items: Sequence[T], read: Callable[[Sequence[T]], R], processes: int
) -> Parts[T, R]:
    """Start ``read_in_parts``: fork its workers, which begin at once; ``finish()`` ends it.

    Meanwhile this process is free for other work (the command line imports the rest of
    itself), and then joins the reading of whatever blocks are left.
    """
    return Parts(items, read, processes)


class Parts(Generic[T, R]):
    """A read of ``items`` in blocks, shared with forked workers (see ``start_parts``)."""

    def __init__(
        self, items: Sequence[T], read: Callable[[Sequence[T]], R], processes: int
    ) -> None:
        self.items, self.read = items, read
        self.spans: list[tuple[int, int]] = []
        self.queue = -1  # the read end of the queue of block numbers; -1: read here at once
        # (pid, read end of its answer pipe) of each worker not yet received; pid 0: not started
        self.workers: list[tuple[int, int]] = []
        if processes < 2:
            return
        self.spans = blocks(len(items))
        queue_r, queue_w = os.pipe()
        try:
            os.write(queue_w, b"".join(i.to_bytes(4, "little") for i in range(len(self.spans))))
        finally:
            os.close(queue_w)  # an empty queue now reads as its end
        self.queue = queue_r

        def work() -> dict[int, bytes]:  # in a worker: pickle each block as soon as it is read
            return _drain(queue_r, self.spans, items, lambda part: _pack(read(part)))

        try:
            for _ in range(processes - 1):
                siblings = [fd for pid, fd in self.workers if pid]
                self.workers.append(_fork(work, siblings))
        except BaseException:
            self.close()
            raise

    def finish(self) -> list[R]:
        """Read the blocks left here, take the workers' answers; return every block's result."""
        if self.queue < 0:
            return [self.read(self.items)]
        try:
            done = _drain(self.queue, self.spans, self.items, self.read)
            while self.workers:
                pid, fd = self.workers.pop(0)
                answer = _receive(pid, fd) if pid else _FAILED
                if answer is not _FAILED:
                    done.update(_unpack(answer))
            # Blocks a failed worker took (or a worker that never started) are read here.
            return [
                done[i] if i in done else self.read(self.items[a:b])
                for i, (a, b) in enumerate(self.spans)
            ]
        finally:
            self.close()

    def close(self) -> None:
        """End the read unfinished (or after ``finish``): close the queue, end and reap workers."""
        if self.queue >= 0:
            os.close(self.queue)
            self.queue = -1
        workers, self.workers = self.workers, []
        for pid, fd in workers:  # only when unfinished: end and reap what is left
            if not pid:
                continue
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


def _drain(
    queue: int, spans: list[tuple[int, int]], items: Sequence[T], read: Callable[[Sequence[T]], R]
) -> dict[int, R]:
    """Take block numbers from ``queue`` until it is empty; return each block's result."""
    done: dict[int, R] = {}
    while True:
        number = os.read(queue, 4)
        if len(number) < 4:  # the queue is empty (numbers are only ever read 4 bytes at a time)
            return done
        i = int.from_bytes(number, "little")
        start, end = spans[i]
        done[i] = read(items[start:end])


_FAILED: Any = object()


def _pack(result: object) -> bytes:
    """In a worker: pickle one block's result as soon as it is read.

    The pickling then overlaps the other processes' reading instead of following it, and the
    worker keeps a few hundred bytes per manifest instead of its parsed documents.
    """
    return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


def _unpack(answer: object) -> dict[int, Any]:
    """Return the blocks of a worker's answer that unpickle; the others are read again here."""
    out: dict[int, Any] = {}
    if not isinstance(answer, dict):
        return out
    for i, packed in answer.items():
        try:
            out[i] = pickle.loads(packed)
        except Exception:  # a garbled block: read it here
            continue
    return out


def _fork(work: Callable[[], object], siblings: list[int]) -> tuple[int, int]:
    """Start a worker sending back ``work()``; return its pid and the read end of its pipe.

    ``siblings`` are the read ends of the workers started before: a child closes them, so a
    worker blocked writing sees a broken pipe as soon as this process goes away.
    """
    try:
        r, w = os.pipe()
    except OSError:  # out of descriptors: its blocks are read by the others
        return 0, -1
    try:
        pid = os.fork()
    except OSError:  # out of processes or memory: its blocks are read by the others
        os.close(r)
        os.close(w)
        return 0, -1
    if pid == 0:  # the child: never returns
        code = 1
        try:
            for fd in (r, *siblings):
                os.close(fd)
            _detach_from_parent_loop()
            result = work()
            with os.fdopen(w, "wb") as out:
                _send(result, out)
            code = 0
        except BaseException:  # any failure: the parent reads this worker's blocks itself
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
