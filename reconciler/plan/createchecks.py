"""What a pipe cannot be created without: the checks a create body is held to before it is sent.

``create_errors`` lists what a pipe lacks to be created, each naming the manifest place: the
fields the pipe schema marks ``requiredToCreate``, and the rules between fields (the credential
an authentication takes, a timestamp a start position needs); the service marks none
required, so these are inferred from what a pipe needs to run. A plan says them as errors of
the create, so nothing is sent. ``mapping_note`` says what a create without ``fieldMappings``
does instead of failing: the service maps fields by column name.

Pure: imports neither httpx nor click.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.model.fields import (
    DATABASE_KINDS,
    DESTINATION_REQUIRED,
    REQUIRED_TO_CREATE,
    database_kind,
)
from reconciler.model.resources import Resource
from reconciler.model.secrets import SecretTree

__all__: list[str] = []


# Per source kind and authentication: the field that carries the credential.
_AUTH_NEEDS: dict[str, dict[str, str]] = {
    "kafka": {
        "PLAIN": "credentials",
        "SCRAM-SHA-256": "credentials",
        "SCRAM-SHA-512": "credentials",
        "IAM_USER": "credentials",
        "MUTUAL_TLS": "credentials",
        "IAM_ROLE": "iamRole",
    },
    "objectStorage": {
        "IAM_USER": "accessKey",
        "IAM_ROLE": "iamRole",
        "CONNECTION_STRING": "connectionString",
        "SERVICE_ACCOUNT": "serviceAccountKey",
    },
    "kinesis": {"IAM_USER": "accessKey", "IAM_ROLE": "iamRole"},
    "mysql": {"IAM_ROLE": "iamRole"},
}
_DEFAULT_AUTH = {"kafka": "PLAIN", "kinesis": "IAM_ROLE"}


def create_errors(resource: Resource, spec: Mapping[str, SecretTree]) -> list[str]:
    """List what a pipe lacks to be created, each naming the manifest place (inferred rules)."""
    source: Mapping[str, Any] = _mapping(spec.get("source"))
    kinds = [k for k in source if k in REQUIRED_TO_CREATE]
    if not kinds:
        return [f"{resource.locate_spec()}: spec.source is required to create the pipe"]
    kind = kinds[0]
    sub = _mapping(source[kind])
    missing = [f for f in REQUIRED_TO_CREATE[kind] if _at(sub, f) in (None, "", [])]
    if kind == "objectStorage" and sub.get("type") != "azureblobstorage" and not sub.get("url"):
        missing.append("url")
    if kind == "objectStorage" and sub.get("type") == "azureblobstorage":
        missing += [f for f in ("path", "azureContainerName") if not sub.get(f)]
    auth = sub.get("authentication") or _DEFAULT_AUTH.get(kind)
    needs = _AUTH_NEEDS.get(kind, {}).get(str(auth)) if auth else None
    if needs and sub.get(needs) in (None, "") and needs not in missing:
        missing.append(needs)
    if kind == "kinesis" and sub.get("iteratorType") == "AT_TIMESTAMP" and "timestamp" not in sub:
        missing.append("timestamp")
    if kind == "pubsub" and sub.get("seekType") == "timestamp" and "seekTimestamp" not in sub:
        missing.append("seekTimestamp")
    offset = sub.get("offset") if kind == "kafka" else None
    if (
        isinstance(offset, Mapping)
        and offset.get("strategy") == "from_timestamp"
        and not offset.get("timestamp")
    ):
        missing.append("offset.timestamp")
    errors = [
        f"{resource.locate_spec('source', kind)}: spec.source.{kind}.{f} is required to create "
        "the pipe" + (f" (authentication {auth})" if f == needs else "")
        for f in missing
    ]
    destination = _mapping(spec.get("destination"))
    where = resource.locate_spec("destination") if destination else resource.locate_spec()
    if kind in DATABASE_KINDS:
        # Said at the spec, with why: a database pipe's tables come from its mappings.
        where, why = resource.locate_spec(), " (the database its tables are replicated into)"
    else:
        why = ""
    errors += [
        f"{where}: spec.destination.{f} is required to create the pipe{why}"
        for f in DESTINATION_REQUIRED[kind]
        if not destination.get(f)
    ]
    return errors


def mapping_note(spec: Mapping[str, SecretTree]) -> tuple[str, ...]:
    """What a create without ``fieldMappings`` does (said in the plan): map by column name."""
    source = _mapping(spec.get("source"))
    if "fieldMappings" in spec or database_kind(source) or not source:
        return ()
    return (
        "no fieldMappings stated: the service maps each source field to the destination "
        "column of the same name",
    )


def _at(sub: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted path under a source (``settings.replicationMode``)."""
    value: Any = sub
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
