"""Pipe manifests the CLI tests apply to the emulator, and the live pipes they look for.

``kafka_spec`` is a complete Kafka pipe in the analytics service (no pipeId: a create);
``kafka_pipe`` a private Kafka pipe naming reverse private endpoints by manifest, ``MSK`` such
an endpoint; ``pipes_named`` the emulator's live pipes of one name.
"""

from __future__ import annotations

from typing import Any

from tests.support.emulator import Emulator
from tests.support.seed_ids import ORG_ID


def kafka_spec(
    name: str = "returns", topics: str = "returns", table: str = "returns", **extra: Any
) -> dict[str, Any]:
    """A complete Kafka pipe spec without pipeId, in the analytics service."""
    credentials = {"username": {"fromEnv": "KAFKA_USER"}, "password": {"fromEnv": "KAFKA_PASSWORD"}}
    return {
        "organizationId": ORG_ID,
        "service": "analytics",
        "name": name,
        "source": {
            "kafka": {
                "type": "kafka",
                "format": "JSONEachRow",
                "brokers": "broker-1.example.com:9092",
                "topics": topics,
                "authentication": "PLAIN",
                "credentials": credentials,
            }
        },
        "destination": {
            "database": "sales",
            "table": table,
            "managedTable": True,
            "columns": [{"name": "id", "type": "String"}, {"name": "amount", "type": "Float64"}],
        },
        "fieldMappings": [
            {"sourceField": "id", "destinationField": "id"},
            {"sourceField": "total", "destinationField": "amount"},
        ],
        **extra,
    }


def pipes_named(emulator: Emulator, name: str) -> list[dict[str, Any]]:
    """The live pipes called ``name`` (in any service)."""
    return [p for p in emulator.data()["pipes"].values() if p["name"] == name]


MSK = {
    "organizationId": ORG_ID,
    "service": "analytics",
    "description": "orders cluster",
    "type": "MSK_MULTI_VPC",
    "mskClusterArn": "arn:aws:kafka:us-east-1:123456789012:cluster/orders/1a2b3c4d",
    "mskAuthentication": "SASL_IAM",
}


def kafka_pipe(endpoints_named: list[str], **kafka: Any) -> dict[str, Any]:
    """A Kafka pipe on the staging service that names endpoints by manifest."""
    return {
        "organizationId": ORG_ID,
        "service": "staging",
        "name": "orders-private",
        "source": {
            "kafka": {
                "type": "msk",
                "format": "JSONEachRow",
                "brokers": "b-1.orders.internal:9096",
                "topics": "orders",
                "authentication": "IAM_ROLE",
                "iamRole": "arn:aws:iam::123456789012:role/pipes",
                "reversePrivateEndpoints": endpoints_named,
                **kafka,
            }
        },
        "destination": {
            "database": "sales",
            "table": "orders_private",
            "managedTable": True,
            "columns": [{"name": "id", "type": "String"}],
        },
    }
