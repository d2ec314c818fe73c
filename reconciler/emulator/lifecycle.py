"""The pipe state machine: which command leads where, and transitions settled lazily.

A command (or a create) puts the pipe in a transitional state at once and records, in the
store's ``transitions`` table, the state it reaches and when: ``--transition-ms`` later. No
background task moves it: every lookup of the pipe first *settles* a transition that is due,
so the state a client reads is a pure function of the clock (tests move the store's clock
instead of sleeping), and a store saved to ``--data`` resumes where it was.

Decisions where the real service's behaviour is not described:

* a command that asks for the state the pipe is in, or already heading to, is a 200 no-op
  (``start`` on Running or Provisioning, ``stop`` on Stopped, Paused, Stopping or Pausing);
* any other command, even during a transition, starts a new transition from now (the last
  command wins, as a user pressing stop during provisioning would expect);
* ``resync`` applies to database pipes only (Resync → Running) and always restarts one;
* a Completed pipe takes no command (400, as it takes no update);
* ``start`` goes through Provisioning; ``stop`` through Stopping to Stopped, or for a database
  pipe (``DATABASE_KINDS``) through Pausing to Paused.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from reconciler.emulator.protocol import ApiError, iso_ms, parse_iso

__all__: list[str] = []


# The source kinds that copy a database's tables (the others read streams or files).
DATABASE_KINDS = ("postgres", "mysql", "mongodb", "bigquery")


class Command(StrEnum):
    """The commands of ``PATCH …/pipes/{pipeId}/state``."""

    START = "start"
    STOP = "stop"
    RESYNC = "resync"


# States in which a command's goal is already met or being reached.
_SATISFIED = {
    Command.START: frozenset({"Running", "Provisioning"}),
    Command.STOP: frozenset({"Stopped", "Paused", "Stopping", "Pausing"}),
    Command.RESYNC: frozenset({"Resync"}),
}


def route(command: Command, kind: str) -> tuple[str, str]:
    """(transitional state, final state) of ``command`` on a pipe of source ``kind``."""
    if command is Command.START:
        return "Provisioning", "Running"
    if command is Command.RESYNC:
        return "Resync", "Running"
    return ("Pausing", "Paused") if kind in DATABASE_KINDS else ("Stopping", "Stopped")


def begin(
    data: dict[str, Any], pipe: dict[str, Any], states: tuple[str, str], at: datetime
) -> None:
    """Put ``pipe`` in the transitional state now, to reach the final one at ``at``."""
    transitional, final = states
    pipe["state"] = transitional
    data.setdefault("transitions", {})[pipe["id"]] = {"state": final, "at": iso_ms(at)}


def settle(data: dict[str, Any], pipe: dict[str, Any], now: datetime) -> bool:
    """Move ``pipe`` to its final state if its transition is due; True when it moved."""
    pending = data.get("transitions", {}).get(pipe["id"])
    if pending is None or parse_iso(pending["at"]) > now:
        return False
    pipe["state"] = pending["state"]
    del data["transitions"][pipe["id"]]
    return True


def forget(data: dict[str, Any], pipe_id: str) -> None:
    """Drop any pending transition of the pipe (deleted, or its state forced by an admin)."""
    data.get("transitions", {}).pop(pipe_id, None)


def command(
    data: dict[str, Any],
    pipe: dict[str, Any],
    kind: str,
    wanted: Command,
    now: datetime,
    transition_ms: int,
) -> bool:
    """Apply ``wanted`` to a settled pipe; False when it was a no-op (see the module's rules)."""
    if pipe["state"] == "Completed":
        raise ApiError(400, f"Pipe {pipe['id']} is Completed and takes no state command")
    if wanted is Command.RESYNC and kind not in DATABASE_KINDS:
        raise ApiError(
            400,
            f"resync applies to database pipes only ({', '.join(DATABASE_KINDS)}); "
            f"pipe {pipe['id']} is {kind}",
        )
    if pipe["state"] in _SATISFIED[wanted]:
        pending = data.get("transitions", {}).get(pipe["id"])
        # A transitional state counts only when it leads where the command does.
        if pending is None or pending["state"] == route(wanted, kind)[1]:
            return False
    begin(data, pipe, route(wanted, kind), now + timedelta(milliseconds=transition_ms))
    return True
