"""The bodies of the organization-wide resources: the organization PATCH and a dashboard.

The organization PATCH names its private endpoints by the real service's cloud provider and
region enumerations (listed here) and answers a bad field with the management 400; a
dashboard (the dashboards interface, kept per organization) answers with that interface's
own message shape, ``Body validation failed: tiles.0.x: …``. Both are built from the
combinators of ``validation``, so ``openapi`` describes them from the same objects.
"""

from __future__ import annotations

from typing import Any

from reconciler.emulator.validation import (
    array,
    boolean,
    integer,
    management,
    obj,
    string,
    validated,
)

__all__: list[str] = []


# The real service's cloud provider and region enums.
CLOUD_PROVIDERS = ("aws", "gcp", "azure")
REGIONS = (
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-south-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ca-central-1",
    "eu-central-1",
    "eu-west-1",
    "eu-west-2",
    "il-central-1",
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "us-east1",
    "us-central1",
    "europe-west2",
    "europe-west4",
    "asia-southeast1",
    "asia-northeast1",
    "eastus",
    "eastus2",
    "westus3",
    "germanywestcentral",
    "centralus",
)
_ENDPOINT = obj(
    {
        "id": string(1),
        "description": string(),
        "cloudProvider": string(enum=CLOUD_PROVIDERS),
        "region": string(enum=REGIONS),
    },
    required=("id",),
)
ORGANIZATION_UPDATE = obj(
    {
        "name": string(1, 255),
        "privateEndpoints": obj({"add": array(_ENDPOINT), "remove": array(_ENDPOINT)}),
        "enableCoreDumps": boolean(),
    }
)

_SERIES = obj(
    {
        "type": string(enum=("time", "table", "number", "search", "markdown")),
        "dataSource": string(enum=("events", "metrics")),
        "aggFn": string(),
        "where": string(),
        "groupBy": array(string()),
    },
    required=("type",),
)
_TILE = obj(
    {
        "id": string(),
        "name": string(),
        "x": integer(0, 23),
        "y": integer(0),
        "w": integer(1, 24),
        "h": integer(1),
        "asRatio": boolean(),
        "series": array(_SERIES),
    },
    required=("name", "x", "y", "w", "h", "series"),
)
DASHBOARD = obj(
    {"id": string(), "name": string(1), "tiles": array(_TILE), "tags": array(string())},
    required=("name",),
)


def validate_organization_update(body: Any) -> dict[str, Any]:
    """The normalised organization PATCH body, or a 400 naming the first bad field."""
    return management(ORGANIZATION_UPDATE, body)


def validate_dashboard(body: Any) -> dict[str, Any]:
    """The dashboard body, or a 400 in the dashboards interface's message shape."""
    return validated(
        DASHBOARD,
        body,
        "Body validation failed: body must be a JSON object",
        lambda e: f"Body validation failed: {e.path}: {e.why}",
    )
