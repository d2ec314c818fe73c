"""Recording what apply did in state, and saving it paced and coalesced.

After an action ends, ``StateRecorder`` records it: a pipe's managed fields and secret
fingerprints, an organization's observed values, a dashboard's id, owner and content hash
(moving a renamed dashboard's record to its new name), a reverse private endpoint's id and
whether this tool created it. State is saved as actions end: a
dashboard's record at once and awaited (losing it could mean creating the dashboard twice),
others at most every ``SAVE_INTERVAL`` together with whatever piled up meanwhile; ``flush``
writes the last changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping

from reconciler.apply.verify import leaf_paths
from reconciler.model.endpoints import ENDPOINT
from reconciler.model.identity import Bound, Record
from reconciler.model.json import JsonMapping, JsonValue
from reconciler.plan.actions import Action, Op, Request
from reconciler.plan.diff import ORGANIZATION_FIELDS, ChangeKind
from reconciler.plan.lifecycle import sent_hash
from reconciler.state.document import State

__all__: list[str] = []


# Records that are not urgent (pipes, organizations) are saved at most this often (seconds).
SAVE_INTERVAL = 0.5


class StateRecorder:
    """Records apply's outcomes in a ``State`` and saves it, paced and coalesced."""

    def __init__(self, state: State) -> None:
        self.state = state
        self._dirty = False
        self._writer: asyncio.Task[None] | None = None
        self._urgent = asyncio.Event()
        self._pending: asyncio.Future[None] | None = None
        self._last_save = float("-inf")

    async def applied(self, action: Action, live: JsonValue) -> None:
        """Record an applied action (from the last answer ``live``) and save it."""
        # Every field the manifest manages (not only the changed ones), secrets included.
        # A create's basis names the object it replaces, not fields the manifest manages.
        made = action.kind == "Pipe" and action.operation in (Op.CREATE, Op.REPLACE)
        managed = sorted(
            {".".join(map(str, p)) for p in leaf_paths(None if made else action.basis)}
            | {
                c.dotted
                for c in action.changes
                if c.kind in (ChangeKind.SET, ChangeKind.SENSITIVE, ChangeKind.RESET)
            }
        )
        if action.kind == "Pipe" and action.operation == Op.DELETE:
            self.state.forget(action.key)  # a pruned pipe: nothing left to remember
        elif action.kind == "Pipe":
            self.move_renamed(action)
            if action.operation in (Op.CREATE, Op.REPLACE):
                # A new pipe: the fingerprints recorded for the old one describe nothing.
                self.state.record(action.key, secrets=None)
            # Merge the fingerprints of the secrets this action sent; an update that sent none
            # keeps the recorded ones (``record`` drops a key given as None, which made the
            # next plan re-send every secret).
            sent = {"secrets": dict(action.secrets)} if action.secrets else {}
            self.state.record(action.key, **sent)
            self.state.forget_fingerprints(action.key, action.forget_secrets)
            managed = sorted(set(managed) | set(self.state.fingerprints(action.key)))
            self.state.record(action.key, managed=managed or None)
            self.record_identity(action, live)
        elif action.kind == ENDPOINT:
            self._record_endpoint(action, live)
        elif action.kind == "Organization" and isinstance(live, Mapping):
            kept = (*ORGANIZATION_FIELDS, "privateEndpoints")
            observed: JsonMapping = {k: live[k] for k in kept if k in live}
            self.state.record(action.key, observed=observed, target=dict(action.target))
        elif action.kind == "Dashboard":
            self.move_renamed(action)
            if action.operation == Op.DELETE:
                self.state.forget(action.key)
            elif isinstance(live, Mapping):
                previous = self.state.dashboard(action.name)
                self.state.record(
                    action.key,
                    id=str(live.get("id")),
                    displayName=live.get("name") or action.target.get("name"),
                    contentHash=action.content_hash,
                    createdByUs=ours(action, previous, str(live.get("id"))),
                    uncertain=None,
                    replaced=[
                        *(self.state.resources.get(action.key, {}).get("replaced") or []),
                        previous.id,
                    ]
                    if action.operation == Op.REPLACE and previous and previous.id
                    else None,
                )
        if action.key in self.state.resources and action.kind in ("Pipe", "Dashboard"):
            # Where the manifest was: a later run that does not read that file, while it still
            # exists, cannot take another manifest for a rename of this one.
            self.state.record(action.key, manifest=action.location.file or None)
        # A dashboard's or a pipe's identity is urgent: losing it could mean creating it twice.
        await self.persist(urgent=action.kind == "Dashboard" or _identity_changed(action))

    def record_identity(self, action: Action, live: JsonValue) -> None:
        """Record which live pipe a pipe manifest is bound to (the id is its identity from now).

        Whether the pipe is this tool's own (prune may delete it later) is ``ours``.
        """
        target = dict(action.target)
        made = action.operation in (Op.CREATE, Op.REPLACE)
        if (made or not target.get("pipeId")) and isinstance(live, Mapping) and live.get("id"):
            target["pipeId"] = str(live["id"])  # the pipe the create made
        previous = self.state.record_of("Pipe", action.name)
        name = live.get("name") if isinstance(live, Mapping) else None
        self.state.record(
            action.key,
            target=target,
            id=target.get("pipeId") or None,
            createdByUs=ours(action, previous, target.get("pipeId")) or None,
            displayName=name or (previous.display_name if previous else None),
            uncertain=None,
            contentHash=None,  # the pending create's fingerprint: settled now
        )

    def _record_endpoint(self, action: Action, live: object) -> None:
        """Record which live endpoint an endpoint manifest is bound to (forgotten on delete)."""
        if action.operation == Op.DELETE:
            self.state.forget(action.key)
            return
        target = dict(action.target)
        if isinstance(live, Mapping) and live.get("id"):
            target["reversePrivateEndpointId"] = str(live["id"])
        previous = self.state.record_of(ENDPOINT, action.name)
        self.state.record(
            action.key,
            target=target,
            id=target.get("reversePrivateEndpointId"),
            createdByUs=ours(action, previous, target.get("reversePrivateEndpointId")) or None,
            displayName=live.get("description") if isinstance(live, Mapping) else None,
            uncertain=None,
        )

    async def endpoint_created(self, action: Action, live: JsonMapping) -> None:
        """Right after an endpoint's create answered: record it as ours before waiting."""
        self._record_endpoint(dataclasses.replace(action, operation=Op.CREATE), live)
        await self.persist(urgent=True)

    async def creating(self, action: Action, request: Request) -> None:
        """Before a pipe's create is sent: record that it may exist, with the fingerprint of
        the body sent (a kill or a lost answer before its id is known is healed by adoption by
        name, which knows this tool created it only if the pipe shows that body)."""
        target = {k: v for k, v in action.target.items() if k != "pipeId"}
        sent = sent_hash(request.body or {})
        self.state.record(
            action.key, uncertain=True, createdByUs=True, target=target, contentHash=sent
        )
        await self.persist(urgent=True)

    async def not_created(self, action: Action) -> None:
        """A pipe's create was refused: forget the mark ``creating`` left (nothing was made)."""
        entry = self.state.resources.get(action.key)
        if action.kind != "Pipe" or entry is None:
            return
        if "id" in entry:  # the record of a pipe gone from the server: it stays, unmarked
            self.state.record(action.key, uncertain=None, contentHash=None)
        else:
            self.state.forget(action.key)
        await self.persist(urgent=False)

    async def created(self, action: Action, live: JsonMapping) -> None:
        """Right after a pipe's create answered: record its id before anything else happens."""
        target = {**action.target, "pipeId": str(live.get("id"))}
        self.state.record(
            action.key,
            id=str(live.get("id")),
            target=target,
            createdByUs=True,
            displayName=live.get("name"),
            uncertain=None,
            contentHash=None,
        )
        await self.persist(urgent=True)

    def move_renamed(self, action: Action) -> bool:
        """Move a renamed manifest's record to its new ``metadata.name`` (same id, same owner)."""
        old_key = f"{action.kind}/{action.renamed_from}"
        if action.renamed_from is None or old_key not in self.state.resources:
            return False
        entry = dict(self.state.resources[old_key])
        entry.pop("appliedAt", None)
        self.state.forget(old_key)
        self.state.record(action.key, **entry)
        return True

    async def unchanged(self, action: Action) -> None:
        """Record what an unchanged action still teaches (a rename, an adopted id, values)."""
        if action.forget_secrets:  # pipes only
            await self.forget_secrets(action)
        if action.kind == "Dashboard" and self.move_renamed(action):
            self.state.record(action.key, displayName=action.target.get("name"))
            await self.persist(urgent=True)
        elif (
            action.kind == ENDPOINT
            and action.bound == "adopted"
            and (self.state.record_of(ENDPOINT, action.name) or _NONE).id
            != action.target.get("reversePrivateEndpointId")
        ):
            self._record_endpoint(action, None)  # adopted by description: the id from now on
            await self.persist(urgent=True)
        elif action.kind == "Pipe" and (
            self.move_renamed(action)
            or (
                action.bound == "adopted"
                and action.target.get("pipeId")
                and (self.state.record_of("Pipe", action.name) or _NONE).id
                != action.target["pipeId"]
            )
        ):
            # Adopted by name (or renamed): the id is its identity from now on.
            self.record_identity(action, None)
            await self.persist(urgent=True)
        elif (
            action.kind == "Dashboard"
            and action.target.get("id")
            and (self.state.dashboard(action.name) or _NONE).id != action.target["id"]
        ):
            # Adopted by name (in place of a recorded one gone from the server, too): remember
            # the id so renames on the server do not lose it. Never ours: see ``ours``.
            self.state.record(
                action.key,
                id=action.target["id"],
                displayName=action.target.get("name"),
                contentHash=action.content_hash,
                createdByUs=False,
                uncertain=None,
            )
            await self.persist(urgent=True)
        elif (
            action.kind == "Organization"
            and isinstance(action.basis, Mapping)
            and action.basis
            and self.state.organization_values(action.key) != dict(action.basis)
        ):
            self.state.record(action.key, observed=dict(action.basis), target=dict(action.target))
            await self.persist(urgent=False)

    async def forget_secrets(self, action: Action) -> None:
        """Forget the fingerprints of secrets the manifest no longer states (nothing is sent)."""
        if self.state.forget_fingerprints(action.key, action.forget_secrets):
            managed = self.state.resources[action.key].get("managed")
            if isinstance(managed, list):
                kept = [p for p in managed if p not in action.forget_secrets]
                self.state.record(action.key, managed=kept or None)
            await self.persist(urgent=False)

    async def persist(self, *, urgent: bool) -> None:
        """Save the state off the event loop, paced and coalesced.

        A dashboard's record is urgent: it is written at once and awaited before the action
        reports done (losing it could mean creating the dashboard twice). A pipe's or
        organization's record only holds fingerprints and paths, which the next run recomputes
        (at worst re-sending those secrets): it is written at most every ``SAVE_INTERVAL`` s
        together with whatever piled up meanwhile, so a remote state costs a fast apply a few
        writes, not one per action; ``apply`` writes the last changes before it returns.
        """
        loop = asyncio.get_running_loop()
        self._dirty = True
        if self._pending is None:
            self._pending = loop.create_future()
        saved = self._pending  # resolved by the write whose snapshot includes this change
        if urgent:
            self._urgent.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_loop())
        if urgent:
            await asyncio.shield(saved)

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while self._dirty:
            wait = self._last_save + SAVE_INTERVAL - loop.time()
            if wait > 0 and not self._urgent.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._urgent.wait(), wait)
            self._urgent.clear()
            self._dirty = False
            done, self._pending = self._pending, loop.create_future()
            data = self.state.serialize()  # a snapshot taken on the loop, between actions
            try:
                await asyncio.to_thread(self.state.write, data)
            except BaseException as exc:
                if done is not None and not done.done():
                    done.set_exception(exc)
                    done.add_done_callback(lambda f: f.exception())
                raise
            finally:
                self._last_save = loop.time()
            if done is not None and not done.done():
                done.set_result(None)

    async def flush(self) -> None:
        """Write every recorded change now and wait until it is stored."""
        while self._writer is not None and not self._writer.done():
            self._urgent.set()  # no pacing for the last write
            await asyncio.shield(self._writer)
        if self._writer is not None:
            self._writer.result()


_NONE = Record(None)


def ours(action: Action, previous: Record | None, bound_id: str | None) -> bool:
    """Tell whether the object an applied action leaves bound is this tool's own (the only
    kind prune deletes): one its create's answer made, an adopted pipe proven the one its lost
    create made (``Action.made_by_us``), or the very object a record of ours names. An object
    adopted by name is never ours otherwise, whatever the record said before."""
    if action.operation in (Op.CREATE, Op.REPLACE) or action.made_by_us:
        return True
    if action.bound == Bound.ADOPTED or previous is None or not previous.created_by_us:
        return False
    return bool(bound_id) and previous.id == bound_id


def _identity_changed(action: Action) -> bool:
    """Tell whether applying ``action`` changed which live pipe its manifest is bound to."""
    return action.kind in ("Pipe", ENDPOINT) and (
        action.operation in (Op.CREATE, Op.REPLACE, Op.DELETE)
        or action.bound == "adopted"
        or action.renamed_from is not None
    )
