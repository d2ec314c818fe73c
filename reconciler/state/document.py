"""The state document: what the API cannot tell us, the same JSON in every backend.

The service never returns write-only secrets, and (with only the create endpoint) cannot list
dashboards, so reconcile records, per resource: secret fingerprints (HMAC-SHA256 with a random
key created with the state — never a secret), the managed field paths last applied, the
dashboard id and content hash per ``metadata.name``, and the organization's values after the
last apply (for servers that cannot read an organization). The document is versioned JSON
(``formatVersion``); the key doubles as the state's lineage: two documents with different keys
are different histories (their fingerprints cannot be compared).

A ``State`` is decoded from bytes and written back through a sink the backend session gives it
(a compare-and-set write); it knows nothing about where it lives.
"""

from __future__ import annotations

import hashlib
import json
import secrets as _random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from reconciler.model.errors import StateError
from reconciler.model.identity import Record
from reconciler.model.json import JsonLike, JsonObject

__all__ = ["DashboardRecord", "State"]


STATE_FORMAT_VERSION = 1

Sink = Callable[[bytes], None]


# What state remembers about a dashboard (the record every bound kind shares).
DashboardRecord = Record


def _no_sink(data: bytes) -> None:
    raise StateError("this state was opened read-only; it cannot be written")


@dataclass
class State:
    """The decoded state document, and where writes go (``location`` names it for messages)."""

    location: str
    key: bytes
    # Any: each record's members are read through ``record``/``Record`` and written whole.
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    exists: bool = False
    # The environment and organization this workspace belongs to (recorded on its first write).
    owner: dict[str, str] | None = None
    sink: Sink = field(default=_no_sink, repr=False, compare=False)
    # Each resource's serialised line, kept between saves (entries change through record/forget).
    _lines: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    # -- reads ---------------------------------------------------------------------------------

    @property
    def lineage(self) -> str:
        """Return a short id of this state's history (derived from its key; never the key)."""
        return hashlib.sha256(b"reconcile-lineage:" + self.key).hexdigest()[:16]

    def fingerprints(self, resource_key: str) -> dict[str, str]:
        """Return the secret fingerprints recorded for a resource."""
        entry = self.resources.get(resource_key, {})
        raw = entry.get("secrets", {})
        return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}

    def record_of(self, kind: str, name: str) -> Record | None:
        """Return the identity state recorded for the ``kind`` manifest named ``name``.

        A pipe's entry holds its id in ``id`` (and, before identities were recorded, only in
        ``target.pipeId``: an entry written for a pinned pipe), its organization and service in
        ``target`` (while a create's answer is pending, ``uncertain`` and the fingerprint of the
        body sent in ``contentHash``); a dashboard's its id, display name and content hash.
        """
        entry = self.resources.get(f"{kind}/{name}")
        if not entry:
            return None
        target = entry.get("target")
        scope = (
            {k: str(target[k]) for k in ("organizationId", "serviceId") if k in target}
            if isinstance(target, dict)
            else None
        )
        ident = entry.get("id")
        if ident is None and kind == "Pipe" and isinstance(target, dict):
            ident = target.get("pipeId")
        if ident is None and kind == "Pipe" and not entry.get("uncertain"):
            return None  # fingerprints only: nothing binds
        return Record(
            id=str(ident) if ident is not None else None,
            content_hash=entry.get("contentHash"),
            created_by_us=bool(entry.get("createdByUs")),
            uncertain=bool(entry.get("uncertain")),
            display_name=entry.get("displayName"),
            scope=scope or None,
            manifest=entry.get("manifest"),
        )

    def records(self, kind: str) -> dict[str, Record]:
        """Return every record of ``kind`` by ``metadata.name``."""
        prefix = f"{kind}/"
        out: dict[str, Record] = {}
        for key in self.resources:
            if key.startswith(prefix):
                record = self.record_of(kind, key[len(prefix) :])
                if record is not None:
                    out[key[len(prefix) :]] = record
        return out

    def dashboard(self, name: str) -> DashboardRecord | None:
        """Return what state recorded for the dashboard named ``name``."""
        return self.record_of("Dashboard", name)

    def dashboards(self) -> dict[str, DashboardRecord]:
        """Return every dashboard record by name."""
        return self.records("Dashboard")

    def organization_values(self, resource_key: str) -> JsonObject | None:
        """Return the organization values recorded at the last apply, if any."""
        entry = self.resources.get(resource_key, {})
        values = entry.get("observed")
        return dict(values) if isinstance(values, dict) else None

    # -- writes --------------------------------------------------------------------------------

    def claim(self, environment: str | None, organization: str | None, workspace: str) -> None:
        """Check that this workspace belongs to ``environment`` (and its organization), and
        record them as its owner when none is (written with the next save).

        Raise ``StateError`` when another environment or organization owns it: one environment
        must never rebind or rewrite another's records (``--workspace OTHER``).
        """
        if environment is None:
            return
        mine = {"environment": environment, "organizationId": organization or ""}
        if self.owner is None:
            self.owner = mine
            return
        if self.owner.get("environment") == environment and (
            not organization or self.owner.get("organizationId") in ("", organization)
        ):
            if organization and not self.owner.get("organizationId"):
                self.owner = mine
            return
        theirs = self.owner.get("organizationId") or "none"
        raise StateError(
            f"state {self.location}: workspace {workspace} belongs to environment "
            f"{self.owner.get('environment')} (organization {theirs}); this run is environment "
            f"{environment} (organization {organization or 'none'}): a workspace is written by "
            "one environment and organization only, so use this environment's own workspace "
            "(drop --workspace); an environment moved to another organization starts a new "
            "workspace (its records name the old organization's objects)"
        )

    def record(self, resource_key: str, **values: JsonLike) -> None:
        """Merge ``values`` into a resource's entry (None removes a key) and stamp it."""
        self._lines.pop(resource_key, None)
        entry = self.resources.setdefault(resource_key, {})
        for name, value in values.items():
            if value is None:
                entry.pop(name, None)
            elif name == "secrets":
                entry.setdefault("secrets", {}).update(value)
            else:
                entry[name] = value
        entry["appliedAt"] = datetime.now(UTC).isoformat(timespec="seconds")

    def forget_fingerprints(self, resource_key: str, names: Iterable[str]) -> bool:
        """Drop the named secret fingerprints of a resource; tell whether any was recorded."""
        secrets = self.resources.get(resource_key, {}).get("secrets")
        if not isinstance(secrets, dict):
            return False
        dropped = [name for name in names if secrets.pop(name, None) is not None]
        if dropped:
            self._lines.pop(resource_key, None)
            if not secrets:
                del self.resources[resource_key]["secrets"]
        return bool(dropped)

    def forget(self, resource_key: str) -> None:
        """Drop a resource's entry."""
        self._lines.pop(resource_key, None)
        self.resources.pop(resource_key, None)

    def rename(self, old: str, new: str) -> None:
        """Move a resource's entry to another address (kept as it is)."""
        self._lines.pop(old, None)
        self._lines.pop(new, None)
        self.resources[new] = self.resources.pop(old)

    def to_json(self) -> JsonObject:
        """Return the document."""
        head: JsonObject = {"formatVersion": STATE_FORMAT_VERSION, "key": self.key.hex()}
        if self.owner is not None:
            head["owner"] = dict(self.owner)
        return {
            **head,
            "resources": {k: self.resources[k] for k in sorted(self.resources)},
        }

    def save(self) -> None:
        """Write the state now, through its backend (atomic, compare-and-set)."""
        self.write(self.serialize())

    def serialize(self) -> str:
        """Return the document's text for the state as it is now (a consistent snapshot)."""
        return _dumps(self.to_json(), self._lines)

    def write(self, data: str) -> None:
        """Write ``data`` (from ``serialize``); safe to call from a worker thread."""
        self.sink(data.encode("utf-8"))
        self.exists = True


def _dumps(document: dict[str, Any], cache: dict[str, str]) -> str:
    """Return the state as JSON with one resource per line (json's C encoder: saved per action)."""
    # json.dumps(indent=2) runs the pure-Python encoder, and a save follows every action: it
    # dominated a 1,000-pipe apply (quadratic). One line per resource keeps the file readable,
    # and ``cache`` keeps the lines of the resources no action touched since the last save.
    head = {k: v for k, v in document.items() if k != "resources"}
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    items = []
    for key, value in document["resources"].items():
        line = cache.get(key)
        if line is None:
            line = cache[key] = (
                f"    {json.dumps(key)}: {json.dumps(value, separators=(', ', ': '))}"
            )
        items.append(line)
    body = "{}" if not items else "{\n" + ",\n".join(items) + "\n  }"
    return "{\n" + "\n".join(lines) + f'\n  "resources": {body}\n}}\n'


def new_state(location: str) -> State:
    """Return a new, empty state with a fresh random key (nothing is written)."""
    return State(location=location, key=_random.token_bytes(32))


def decode(data: bytes, location: str) -> State:
    """Decode a state document; a corrupt or newer-format one is refused (and never written)."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateError(
            f"state {location} is unreadable or corrupt ({exc}); it was left untouched"
        ) from None
    if not isinstance(raw, dict) or type(raw.get("formatVersion")) is not int:
        raise StateError(f"state {location} is not a reconcile state file; it was left untouched")
    version = raw["formatVersion"]
    if version > STATE_FORMAT_VERSION:
        raise StateError(
            f"state {location} has format {version}, newer than this reconcile understands "
            f"({STATE_FORMAT_VERSION}); upgrade reconcile (the state was left untouched)"
        )
    try:
        key = bytes.fromhex(str(raw["key"]))
        resources = raw.get("resources", {})
        if len(key) < 16 or not isinstance(resources, dict):
            raise ValueError("bad key or resources")
    except (KeyError, ValueError) as exc:
        raise StateError(f"state {location} is corrupt ({exc}); it was left untouched") from None
    stated = raw.get("owner")
    owner = (
        {str(k): str(v) for k, v in stated.items() if isinstance(v, str)}
        if isinstance(stated, dict)
        else None
    )
    return State(location=location, key=key, resources=resources, exists=True, owner=owner)
