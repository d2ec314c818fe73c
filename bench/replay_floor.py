"""A bare client replaying an apply's requests under the same limit: the floor any client pays.

``replay_wall`` takes the request log of an ``apply`` against the emulator, writes its requests
to a file and times a fresh Python process (``python -c REPLAY``, httpx and asyncio imported as
any client must) that sends them again to the same emulator: the reads first (the services
list, then every pipe list at once, as a client needs them before it can plan), then the
writes from as many loops as the limit allows requests per window, each loop sending its next
request one window after its previous answer, with no margin. It reads no manifest, plans
nothing and keeps no state, so its wall is what Python, the HTTP stack and the limit itself
cost on this machine in this run: the "ideal measured in the same run" that the apply's wall
is compared with (``bench/plan_scale.py`` scenario R).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPLAY = r"""
import asyncio, json, ssl, sys, time
sys.modules.setdefault("httpx._main", None)  # httpx's own command line (rich): not a client's
import httpx

spec = json.loads(open(sys.argv[1]).read())
count, window = spec["count"], spec["window"]

async def main():
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    bare = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # plain http: no CA bundle to load
    async with httpx.AsyncClient(
        base_url=spec["url"], auth=tuple(spec["auth"]), limits=limits, timeout=60, verify=bare
    ) as http:
        refused = 0

        async def send(request):
            nonlocal refused
            answer = await http.request(
                request["method"], request["path"], json=request.get("body")
            )
            refused += answer.status_code == 429
            await answer.aread()
            return time.monotonic()

        reads, writes = spec["reads"], spec["writes"]
        heard = [await send(reads[0])] if reads else []
        heard += await asyncio.gather(*(send(r) for r in reads[1:]))
        queue = list(reversed(writes))

        async def loop(free_at):
            while queue:
                request = queue.pop()  # taken first: a loop waits only with one to send
                wait = free_at + window - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                free_at = await send(request)

        idle = time.monotonic() - window  # a place never used is free now
        places = heard + [idle] * (count - len(heard))
        await asyncio.gather(*(loop(t) for t in places))
        print(json.dumps({"refused": refused}))

asyncio.run(main())
"""


def replay_wall(
    url: str, auth: tuple[str, str], log: list[dict[str, Any]], work: Path, rate: tuple[int, float]
) -> tuple[float, int]:
    """Return the wall seconds of a fresh process replaying ``log``'s requests, and its 429s."""
    own = [e for e in sorted(log, key=lambda e: e["time"]) if e["status"] != 429]
    reads = [_request(e) for e in own if e["method"] == "GET"]
    writes = [_request(e) for e in own if e["method"] != "GET"]
    spec = {
        "url": url,
        "auth": list(auth),
        "count": rate[0],
        "window": rate[1],
        "reads": reads,
        "writes": writes,
    }
    path = work / "replay.json"
    path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", REPLAY, str(path)],
        env=env,
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    wall = time.perf_counter() - start
    return wall, int(json.loads(done.stdout)["refused"])


def _request(entry: dict[str, Any]) -> dict[str, Any]:
    query = entry.get("query") or ""
    request: dict[str, Any] = {
        "method": entry["method"],
        "path": entry["path"] + (f"?{query}" if query else ""),
    }
    if entry.get("body") is not None:
        request["body"] = entry["body"]
    return request
