"""The pipe PATCH body (the contract's ``PipePatchRequest``) and its validation.

Every source kind has its own patch shape: what can change after creation (credentials,
authentication, TLS, table mappings of a database pipe, …); the create-time fields are not
allowed. ``null`` follows the contract's nullability: for the top-level fields and a source
kind it changes nothing, for a setting it restores the default, for an optional field
(``validation.ABSENT``) it removes the field, for a field the pipe cannot lack
(``validation.KEEP``) it leaves it as it is.
"""

from __future__ import annotations

from typing import Any

from reconciler.emulator.databases import PATCH as DATABASE_PATCH
from reconciler.emulator.pipe_bodies import SERVICE_ACCOUNT
from reconciler.emulator.pipe_rules import (
    ACCESS_KEY,
    KAFKA_AUTHENTICATION,
    KAFKA_CREDENTIALS,
    PIPE_SETTINGS,
    object_storage_authentication,
)
from reconciler.emulator.validation import (
    ABSENT,
    KEEP,
    Nullable,
    array,
    boolean,
    integer,
    management,
    obj,
    string,
    uuid_string,
)

__all__: list[str] = []


_SOURCE = obj(
    {
        "kafka": Nullable(
            obj(
                {
                    "authentication": Nullable(string(enum=KAFKA_AUTHENTICATION), "PLAIN"),
                    "iamRole": Nullable(string(), None),
                    "caCertificate": Nullable(string(), None),
                    "reversePrivateEndpointIds": array(uuid_string()),
                    "credentials": KAFKA_CREDENTIALS,
                }
            ),
            KEEP,
        ),
        "objectStorage": Nullable(
            obj(
                {
                    "authentication": Nullable(object_storage_authentication(), ABSENT),
                    "skipInitialLoad": Nullable(boolean(), False),
                    "startAfter": Nullable(string(1), None),
                    "iamRole": Nullable(string(), None),
                    "connectionString": Nullable(string(), None),
                    "path": Nullable(string(), None),
                    "azureContainerName": Nullable(string(), None),
                    "accessKey": Nullable(ACCESS_KEY, None),
                    "serviceAccountKey": Nullable(string(1), None),
                }
            ),
            KEEP,
        ),
        "kinesis": Nullable(
            obj(
                {
                    "authentication": Nullable(string(enum=("IAM_ROLE", "IAM_USER")), KEEP),
                    "iamRole": Nullable(string(), None),
                    "accessKey": Nullable(ACCESS_KEY, ABSENT),
                }
            ),
            KEEP,
        ),
        "pubsub": Nullable(
            obj(
                {
                    "authentication": Nullable(string(enum=("SERVICE_ACCOUNT",)), KEEP),
                    "ackDeadline": Nullable(integer(10, 600), ABSENT),
                    "serviceAccountKey": Nullable(SERVICE_ACCOUNT, KEEP),
                },
                required=("authentication", "serviceAccountKey"),
            ),
            KEEP,
        ),
        # The contract does not let a postgres source be null (the other kinds may be).
        "postgres": DATABASE_PATCH["postgres"],
        "mysql": Nullable(DATABASE_PATCH["mysql"], KEEP),
        "mongodb": Nullable(DATABASE_PATCH["mongodb"], KEEP),
        "validateSamples": boolean(),
    }
)

PIPE_UPDATE = obj(
    {
        "name": Nullable(string(1, 255), KEEP),
        "source": Nullable(_SOURCE, KEEP),
        "destination": Nullable(
            obj(
                {
                    "columns": array(
                        obj({"name": string(1), "type": string(1)}, required=("name", "type"))
                    )
                }
            ),
            KEEP,
        ),
        "fieldMappings": array(
            obj(
                {"sourceField": string(1), "destinationField": string(1)},
                required=("sourceField", "destinationField"),
            )
        ),
        "settings": Nullable(PIPE_SETTINGS, KEEP),
    }
)


def validate_pipe_update(body: Any) -> dict[str, Any]:
    """The normalised pipe PATCH body (fields that change nothing dropped), or a 400."""
    result = {k: v for k, v in management(PIPE_UPDATE, body).items() if v is not KEEP}
    if "source" in result:
        result["source"] = {k: v for k, v in result["source"].items() if v is not KEEP}
    return result
