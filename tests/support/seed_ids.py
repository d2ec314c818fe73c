"""The demo seed's stable ids, for tests and fixtures (the emulator's seed defines them)."""

from __future__ import annotations

from types import SimpleNamespace

ORG_ID = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"
OTHER_ORG_ID = "5d2f8e1a-6b3c-4d7e-9f0a-1b2c3d4e5f60"
ANALYTICS = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"
STAGING = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a72"
ARCHIVE = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a73"
OTHER_ANALYTICS = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a74"  # the second organization's service
KAFKA_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61"
OBJECT_STORAGE_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c62"
KINESIS_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c63"
POSTGRES_PAUSED_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c64"
POSTGRES_RUNNING_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c65"
KAFKA_IAM_USER_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c66"
KAFKA_CONNECTION_STRING_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c67"
KAFKA_MUTUAL_TLS_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c68"
ENDPOINT_READY = "e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51"
ENDPOINT_PROVISIONING = "e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e52"
PRIVATE_ENDPOINT = "pe-0a1b2c3d4e5f"

# Which service each demo pipe lives on.
PIPE_SERVICE = {
    KAFKA_PIPE: ANALYTICS,
    OBJECT_STORAGE_PIPE: ANALYTICS,
    KINESIS_PIPE: STAGING,
    POSTGRES_PAUSED_PIPE: ANALYTICS,
    POSTGRES_RUNNING_PIPE: STAGING,
    KAFKA_IAM_USER_PIPE: ANALYTICS,
    KAFKA_CONNECTION_STRING_PIPE: ANALYTICS,
    KAFKA_MUTUAL_TLS_PIPE: ANALYTICS,
}

SEED = SimpleNamespace(
    org_id=ORG_ID,
    other_org_id=OTHER_ORG_ID,
    analytics=ANALYTICS,
    staging=STAGING,
    archive=ARCHIVE,
    kafka_pipe=KAFKA_PIPE,
    object_storage_pipe=OBJECT_STORAGE_PIPE,
    kinesis_pipe=KINESIS_PIPE,
    postgres_paused_pipe=POSTGRES_PAUSED_PIPE,
    postgres_running_pipe=POSTGRES_RUNNING_PIPE,
    endpoint_ready=ENDPOINT_READY,
    endpoint_provisioning=ENDPOINT_PROVISIONING,
    private_endpoint=PRIVATE_ENDPOINT,
    pipe_service=PIPE_SERVICE,
)
