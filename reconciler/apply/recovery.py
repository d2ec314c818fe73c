"""What a write did when its answer was lost or it was refused: found by re-reading, never by
a blind resend.

A merge-style PATCH of absolute values may simply be repeated (the client does that). A
table-mapping or private-endpoint add/remove, or a create, whose answer was lost is resolved
here by re-reading the live object: if the write shows, it took effect; if it does not, it
never did, and sending it once more is safe. A dashboard or pipe create is never resent: the
one new object of that name is adopted, else the action is uncertain and the next run creates
it. A table-mapping edit the server refused is re-read too, since a killed run's request may
have landed after this run's read.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

from reconciler.apply.results import RequestResult, already_made, ok
from reconciler.apply.verify import value_at, without_edits_made, write_visible
from reconciler.client import reads
from reconciler.client.api import Client, OutcomeUnknown
from reconciler.client.responses import RequestRecord, Undecoded
from reconciler.model.apierrors import ApiError, AuthenticationFailed, InterfaceDown, Unsupported
from reconciler.model.endpoints import ENDPOINT
from reconciler.model.fields import database_kind
from reconciler.model.json import JsonLike, JsonObject, JsonValue
from reconciler.model.resources import JsonPath
from reconciler.model.secrets import SecretTree
from reconciler.plan.actions import Action, Request
from reconciler.plan.lifecycle import shows_body
from reconciler.state.document import State

__all__: list[str] = []


class Recovery:
    """Sends an action's requests with their secrets, and finds out what a lost write did."""

    def __init__(
        self, client: Client, state: State, secrets: Mapping[str, Mapping[JsonPath, Any]]
    ) -> None:
        self.client = client
        self.state = state
        self.secrets = secrets

    async def after_refusal(
        self, action: Action, request: Request, exc: ApiError, label: str
    ) -> tuple[JsonValue | Undecoded, RequestResult] | ApiError:
        """Re-read a pipe whose table-mapping edit was refused; drop the edits it shows made.

        A killed run's request can land after this run read the pipe: its removal then finds
        no mapping to remove and the server refuses the whole body. Which status and message
        the service uses is not specified, so the re-read decides: with edits made, the rest
        is sent once more (or, if nothing is left, the write is done); with none, ``exc``
        stands. Returns the answer and the request's result, or the error that ends it.
        """
        body = request.body or {}
        postgres = value_at(body, ("source", database_kind(body.get("source")) or "postgres"))
        edits = isinstance(postgres, Mapping) and (
            postgres.get("tableMappingsToRemove") or postgres.get("tableMappingsToAdd")
        )
        if action.kind != "Pipe" or not edits:
            return exc
        try:
            live = await self.client.get(request.path, resource=label)
        except AuthenticationFailed:  # the run stops
            raise
        except (ApiError, InterfaceDown):  # cannot tell: the refusal stands
            return exc
        rest = without_edits_made(request.body or {}, live) if isinstance(live, Mapping) else None
        if rest is None:
            return exc
        if not rest:
            return live, already_made(request, exc)
        narrowed = self.with_secrets(action, dataclasses.replace(request, body=rest))
        try:
            answer, record = await self.send(request, narrowed, label, idempotent=False)
        except AuthenticationFailed:
            raise
        except ApiError as final:
            return final
        return answer, ok(request, record)

    async def send(
        self,
        request: Request,
        body: Mapping[str, SecretTree] | None,
        label: str | None,
        idempotent: bool,
        *,
        method: str | None = None,
    ) -> tuple[JsonValue | Undecoded, RequestRecord]:
        """Send ``request`` with ``body`` (its own method unless ``method``), named ``label``."""
        return await self.client.call(
            request.interface,
            method or request.method,
            request.path,
            body,
            resource=label,
            idempotent=idempotent,
        )

    def with_secrets(self, action: Action, request: Request) -> Mapping[str, SecretTree] | None:
        if request.body is None:
            return None
        values = self.secrets.get(action.key)
        if not values:
            return request.body
        body: dict[str, Any] = copy.deepcopy(dict(request.body))
        for path, value in values.items():
            node: Any = body
            for part in path[:-1]:
                if not isinstance(node, dict) or part not in node:
                    node = None
                    break
                node = node[part]
            if isinstance(node, dict) and path[-1] in node:
                node[str(path[-1])] = value
        return body

    async def resolve_unknown(
        self, action: Action, request: Request, exc: OutcomeUnknown
    ) -> JsonLike | Undecoded | None:
        """Re-read after a lost answer; return the live object if the write took effect."""
        try:
            if action.kind == "Dashboard" and request.method == "POST":
                try:
                    listed = await reads.list_dashboards(self.client)
                except (Unsupported, InterfaceDown):  # cannot tell: never create it blindly again
                    self.state.record(action.key, uncertain=True, contentHash=action.content_hash)
                    return None
                known = {r.id for r in self.state.dashboards().values()}
                for item in listed:
                    if (
                        item.get("name") == (request.body or {}).get("name")
                        and str(item.get("id")) not in known
                    ):
                        return item
                return None
            if action.kind == "Pipe" and request.method == "POST":
                return await self.find_created_pipe(action, request)
            if action.kind == ENDPOINT and request.method == "POST":
                return await self.find_created_endpoint(action, request)
            live = await self.client.get(
                request.path, resource=f"{action.kind.lower()} {action.name}"
            )
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except (ApiError, InterfaceDown):
            return None
        if not isinstance(live, Mapping):
            return None
        if write_visible(action, request, live):
            return live
        # Not applied: the request never took effect, so sending it once more is safe.
        try:
            result, _ = await self.send(
                request, self.with_secrets(action, request), None, idempotent=False
            )
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except (ApiError, InterfaceDown):
            return None
        return result

    async def find_created_endpoint(self, action: Action, request: Request) -> JsonObject | None:
        """After an endpoint create whose answer was lost: the one endpoint with its description
        that no other manifest's record holds, if any (never sent again blindly)."""
        org, service = action.target["organizationId"], action.target["serviceId"]
        listed = await reads.list_endpoints(self.client, org, service)
        held = {r.id for n, r in self.state.records(ENDPOINT).items() if n != action.name}
        described = (request.body or {}).get("description")
        found = [
            e for e in listed if e.get("description") == described and str(e.get("id")) not in held
        ]
        return found[0] if len(found) == 1 else None

    async def find_created_pipe(self, action: Action, request: Request) -> JsonObject | None:
        """After a pipe create whose answer was lost: the one new pipe of that name showing the
        exact body sent, if any (only that proves it this tool's own).

        Never sent again blindly: if the create took effect the pipe is listed (and adopted,
        as the next run would); if not, the action is uncertain and the next run decides.
        """
        org, service = action.target["organizationId"], action.target["serviceId"]
        listed = await reads.list_pipes(self.client, org, service)
        held = {r.id for n, r in self.state.records("Pipe").items() if n != action.name}
        body = request.body or {}
        found = [
            p
            for p in listed
            if p.get("name") == body.get("name")
            and str(p.get("id")) not in held
            and shows_body(body, p)
        ]
        return found[0] if len(found) == 1 else None
