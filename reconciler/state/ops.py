"""The ``reconcile state`` operations, as a Python API the command line calls.

Every operation works on any backend (``open_backend``): reads take no lock (writes are
atomic, so a read is a consistent snapshot); every change takes the backend's lock, reads
under it and writes with compare-and-set. ``pull`` returns the stored bytes untouched and
``push`` stores the given bytes untouched, so the two round-trip byte for byte between any
two backends. An address is ``Kind/name``, as in ``--target``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconciler.model.errors import ConfigError, StateError, suggest
from reconciler.model.json import JsonObject
from reconciler.state.backend import Backend, locked_state, read_state
from reconciler.state.document import State, decode

__all__ = [
    "list_addresses",
    "migrate",
    "move",
    "pull",
    "push",
    "recorded_address",
    "remove",
    "show",
]


def _check_address(address: str) -> str:
    kind, sep, name = address.partition("/")
    if not sep or not kind or not name:
        raise ConfigError(f"{address!r} is not a state address: use Kind/name (e.g. Pipe/orders)")
    return address


def _canonical(state: State, address: str) -> str:
    """Return the recorded spelling of ``address``: the kind matches in any case, as in --target."""
    if address in state.resources:
        return address
    kind, _, name = address.partition("/")
    for recorded in state.resources:
        r_kind, _, r_name = recorded.partition("/")
        if r_name == name and r_kind.lower() == kind.lower():
            return recorded
    return address


def _entry(state: State, address: str) -> dict[str, Any]:
    _check_address(address)
    address = _canonical(state, address)
    if address not in state.resources:
        known = ", ".join(sorted(state.resources)[:10]) or "none"
        raise StateError(
            f"state {state.location} has no {address}{suggest(address, state.resources)} "
            f"(addresses: {known})"
        )
    return state.resources[address]


def list_addresses(backend: Backend) -> list[str]:
    """Return every address recorded in the state, sorted."""
    return sorted(read_state(backend).resources)


def show(backend: Backend, address: str) -> JsonObject:
    """Return what the state records for one address."""
    return dict(_entry(read_state(backend), address))


def recorded_address(backend: Backend, address: str) -> str:
    """Return ``address`` as the state spells it (``pipe/orders`` → ``Pipe/orders``)."""
    return _canonical(read_state(backend), address)


def remove(backend: Backend, addresses: list[str], *, timeout: float = 0.0) -> list[str]:
    """Forget addresses (the live objects are not touched); return the removed ones."""
    with locked_state(backend, timeout=timeout) as state:
        for address in addresses:
            _entry(state, address)
        recorded = [_canonical(state, address) for address in addresses]
        for address in recorded:
            state.forget(address)
        state.save()
    return recorded


def move(backend: Backend, old: str, new: str, *, timeout: float = 0.0) -> None:
    """Move a record to another address of the same kind (after a rename in the manifests)."""
    _check_address(new)
    if old.partition("/")[0].lower() != new.partition("/")[0].lower():
        raise ConfigError(f"cannot move {old} to {new}: the kinds differ")
    with locked_state(backend, timeout=timeout) as state:
        _entry(state, old)
        old = _canonical(state, old)
        new = f"{old.partition('/')[0]}/{new.partition('/')[2]}"  # the recorded kind's spelling
        if new in state.resources:
            raise StateError(f"state {state.location} already has {new}; remove it first")
        state.rename(old, new)
        state.save()


def pull(backend: Backend) -> bytes:
    """Return the stored document, byte for byte (checked to be a state this version reads)."""
    data, _ = backend.read()
    if data is None:
        raise StateError(f"state {backend.description} does not exist yet (nothing was applied)")
    decode(data, backend.description)
    return data


def push(
    backend: Backend,
    data: bytes,
    *,
    force: bool = False,
    timeout: float = 0.0,
    source: str = "the pushed document",
) -> str:
    """Store ``data`` (read from ``source``) as the state, byte for byte; refuse another
    lineage unless ``force``."""
    incoming = decode(data, source)
    with locked_state(backend, timeout=timeout):
        current, version = backend.read()
        if current is not None and not force:
            existing = decode(current, backend.description)
            if existing.lineage != incoming.lineage:
                raise StateError(
                    f"refusing to push: the document is from a different state lineage "
                    f"({incoming.lineage}) than {backend.description} ({existing.lineage}); its "
                    "fingerprints and records belong to another history. Pass --force to "
                    "replace it anyway"
                )
        backend.write(data, version)
    return incoming.lineage


@dataclass(frozen=True)
class Migration:
    """What ``migrate`` did."""

    source: str
    destination: str
    resources: int
    bytes: int
    lineage: str
    copied: bool  # False when the destination already held the same document


def migrate(
    source: Backend, destination: Backend, *, force: bool = False, timeout: float = 0.0
) -> Migration:
    """Copy the state to another backend under both locks, then read it back and compare."""
    with locked_state(source, timeout=timeout), locked_state(destination, timeout=timeout):
        data, _ = source.read()
        if data is None:
            raise StateError(f"state {source.description} does not exist: nothing to migrate")
        state = decode(data, source.description)
        there, version = destination.read()
        copied = there != data
        if there is not None and copied and not force:
            raise StateError(
                f"{destination.description} already holds a different state; nothing was copied "
                "(pass --force to replace it)"
            )
        if copied:
            destination.write(data, version)
        check, _ = destination.read()
        if check != data:
            raise StateError(
                f"verification failed: {destination.description} does not hold the document "
                "just copied; the source was left as it is"
            )
    return Migration(
        source=source.description,
        destination=destination.description,
        resources=len(state.resources),
        bytes=len(data),
        lineage=state.lineage,
        copied=copied,
    )
