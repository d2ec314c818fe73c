"""Reading secret files: confined to the project and its secret directories, bounded in size.

A ``{fromFile: PATH}`` reference (in a manifest, or an environment's credential in the project
file) names a file whose content is sent to a server as a credential. So the path, symlinks
followed, must lie inside the project directory or a directory the project file lists under
``secretDirs:`` (a mounted Kubernetes secret, say); it must be a regular file (a FIFO would
block the run, ``/dev/zero`` never ends, ``/proc`` holds this process's own environment); and
it is read up to a cap (64 KiB). The run states which directories are allowed
(``secret_files``); without one, the project directory is the current directory.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MAX_SECRET_FILE_BYTES",
    "SecretFileRefused",
    "SecretFiles",
    "read_secret_file",
    "secret_files",
]


MAX_SECRET_FILE_BYTES = 64 * 1024

# What a file that is not a regular file is, for the message.
_FILE_TYPES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class SecretFileRefused(Exception):
    """A secret file that may not or cannot be read; the message names it, never its content."""


@dataclass(frozen=True)
class SecretFiles:
    """Where secret files may be read from: the project directory, then the secret dirs."""

    roots: tuple[Path, ...] = field(default_factory=lambda: (Path.cwd(),))
    max_bytes: int = MAX_SECRET_FILE_BYTES

    def describe(self) -> str:
        """Return the allowed directories for a message."""
        project, *extra = self.roots
        listed = f" and the secretDirs {', '.join(map(str, extra))}" if extra else ""
        return f"the project directory {project}{listed}"


_POLICY: ContextVar[SecretFiles | None] = ContextVar("secret_files", default=None)


@contextlib.contextmanager
def secret_files(policy: SecretFiles) -> Iterator[None]:
    """Make secret files read inside the block follow ``policy``."""
    token = _POLICY.set(policy)
    try:
        yield
    finally:
        _POLICY.reset(token)


def current_policy() -> SecretFiles:
    """Return the policy in force (the current directory as the project's, when none is)."""
    return _POLICY.get() or SecretFiles()


def read_secret_file(path: Path, policy: SecretFiles | None = None) -> str:
    """Return the text of secret file ``path`` (trailing newlines dropped).

    Raise ``SecretFileRefused`` when it resolves outside the allowed directories, is not a
    regular file, is larger than the cap, cannot be read or is not UTF-8 text.
    """
    policy = policy or current_policy()
    real = Path(os.path.realpath(path))
    if not any(real.is_relative_to(os.path.realpath(root)) for root in policy.roots):
        via = f" (it resolves to {real})" if real != Path(os.path.abspath(path)) else ""
        raise SecretFileRefused(
            f"secret file {path}{via} is outside {policy.describe()}: keep secret files in "
            "the project, or list their directory under secretDirs: in the project file"
        )
    try:
        _refuse_special(path, os.stat(real))  # before opening: opening a FIFO blocks
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise SecretFileRefused(f"cannot read secret file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as opened:
        found = os.fstat(opened.fileno())  # the file opened, should it have been swapped
        _refuse_special(path, found)
        if found.st_size > policy.max_bytes:
            raise SecretFileRefused(_too_large(path, policy))
        data = opened.read(policy.max_bytes + 1)
    if len(data) > policy.max_bytes:
        raise SecretFileRefused(_too_large(path, policy))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretFileRefused(f"secret file {path} is not UTF-8 text") from None
    return text.rstrip("\r\n")


def _refuse_special(path: Path, found: os.stat_result) -> None:
    if stat.S_ISREG(found.st_mode):
        return
    what = next((name for test, name in _FILE_TYPES if test(found.st_mode)), "a special file")
    raise SecretFileRefused(f"secret file {path} is not a regular file ({what})")


def _too_large(path: Path, policy: SecretFiles) -> str:
    return f"secret file {path} is larger than {policy.max_bytes // 1024} KiB"
