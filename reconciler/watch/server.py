"""The watch's HTTP endpoint: health, readiness, metrics, a status page and its JSON.

``/healthz`` answers 200 while the loop runs; ``/readyz`` 200 once a cycle completed and the
last one did not fail, else 503 with the reason; ``/metrics`` the Prometheus text of the watch
families (and of any extra registry given, e.g. the run families of ``--metrics-file``); ``/``
a server-rendered HTML page (no script: the leader, the last cycles, one row per resource with
its manifest file:line); ``/api/status`` the same as JSON. Every value on the page goes through
``html.escape``, after ``model.text.shown`` (control characters and bidirectional overrides
escaped, a message cut at 1,000 characters): names and messages come from manifests and servers. Nothing served holds a
secret: the status rows carry no field values, only names, locations and plan messages.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from reconciler.model.json import as_items, as_mapping
from reconciler.model.text import MAX_SERVER_MESSAGE, shown
from reconciler.watch.status import WatchStatus

CONTENT_TYPE_PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


def build_app(status: WatchStatus, metrics: Callable[[], bytes]) -> Starlette:
    """Return the endpoint's ASGI application over ``status`` and a metrics renderer."""

    async def healthz(request: Request) -> Response:
        if status.running:
            return PlainTextResponse("ok\n")
        return PlainTextResponse("the watch loop is not running\n", status_code=503)

    async def readyz(request: Request) -> Response:
        reason = status.not_ready()
        if reason is None:
            return PlainTextResponse("ready\n")
        return PlainTextResponse(f"not ready: {reason}\n", status_code=503)

    async def metrics_page(request: Request) -> Response:
        return Response(metrics(), media_type=CONTENT_TYPE_PROMETHEUS)

    async def api_status(request: Request) -> Response:
        return JSONResponse(status.document())

    async def page(request: Request) -> Response:
        return HTMLResponse(render_page(status))

    return Starlette(
        routes=[
            Route("/", page),
            Route("/api/status", api_status),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics_page),
        ]
    )


def _e(value: object, limit: int | None = None) -> str:
    # Controls and bidirectional overrides shown escaped (``model.text``), then HTML-escaped.
    return html.escape(shown(value, limit), quote=True)


_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
.in-sync{color:#176f2c}.drifted,.drift,.interrupted{color:#9a6700}.corrected{color:#0b5cad}
.failed,.invalid{color:#b00020}.unknown{color:#666}
"""


def render_page(status: WatchStatus) -> str:
    """Return the status page's HTML (every value escaped)."""
    doc = status.document()
    holder = as_mapping(doc["holder"])
    leader = (
        "this replica"
        if doc["leader"]
        else (f"pid {holder.get('pid')} on {holder.get('host')}" if holder else "unknown")
    )
    ready = "ready" if doc["ready"] else f"not ready: {doc['notReadyReason']}"
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='refresh' content='10'>",
        f"<title>reconcile watch: {_e(doc['workspace'])}</title><style>{_STYLE}</style></head><body>",
        "<h1>reconcile watch</h1>",
        "<dl id='summary'>",
        f"<dt>Leader</dt><dd id='leader'>{_e(leader)}</dd>",
        f"<dt>Mode</dt><dd id='mode'>{_e(doc['mode'])} every {_e(doc['intervalSeconds'])} s</dd>",
        f"<dt>Environment</dt><dd id='environment'>{_e(doc['environment'] or '-')}</dd>",
        f"<dt>Organization</dt><dd id='organization'>{_e(doc['organizationId'] or '-')}</dd>",
        f"<dt>Workspace</dt><dd id='workspace'>{_e(doc['workspace'])}</dd>",
        f"<dt>State</dt><dd>{_e(doc['state'])}</dd>",
        f"<dt>Readiness</dt><dd id='ready'>{_e(ready, MAX_SERVER_MESSAGE)}</dd>",
        f"<dt>Last success</dt><dd>{_e(doc['lastSuccessAt'] or '-')}</dd>",
        "</dl>",
    ]
    errors = status.manifest_errors()
    if errors:
        parts.append(
            f"<p id='invalid' class='invalid'>The manifests are invalid since "
            f"{_e(doc['invalidSince'])}: nothing is sent, and no resource's standing is known "
            "until they are fixed.</p>"
        )
        parts.append("<h2>Manifest errors (nothing was sent)</h2><table id='errors'>")
        parts.append("<tr><th>Where</th><th>Field</th><th>Message</th></tr>")
        for error in map(as_mapping, errors):
            parts.append(
                f"<tr><td>{_e(error['location'])}</td><td>{_e(error['path'])}</td>"
                f"<td>{_e(error['message'], MAX_SERVER_MESSAGE)}</td></tr>"
            )
        parts.append("</table>")
    parts.append("<h2>Resources</h2><table id='resources'>")
    parts.append("<tr><th>Resource</th><th>Status</th><th>Manifest</th></tr>")
    for key in sorted(status.resources):  # the order of /api/status
        row = status.resources[key]
        parts.append(
            f"<tr class='{_e(row.state)}'><td>{_e(row.key)}</td>"
            f"<td class='{_e(row.state)}'>{_e(row.describe(), MAX_SERVER_MESSAGE)}</td>"
            f"<td>{_e(row.location)}</td></tr>"
        )
    parts.append("</table><h2>Last cycles</h2><table id='cycles'>")
    parts.append(
        "<tr><th>#</th><th>Started</th><th>Result</th><th>Found</th><th>Corrected</th>"
        "<th>Requests</th><th>Seconds</th><th>Message</th></tr>"
    )
    for cycle in map(as_mapping, as_items(doc["cycles"])):
        parts.append(
            f"<tr><td>{_e(cycle['number'])}</td><td>{_e(cycle['startedAt'])}</td>"
            f"<td class='{_e(cycle['result'])}'>{_e(cycle['result'])}</td>"
            f"<td>{_e(cycle['changesFound'])}</td><td>{_e(cycle['changesCorrected'])}</td>"
            f"<td>{_e(cycle['requests'])}</td><td>{_e(cycle['durationSeconds'])}</td>"
            f"<td>{_e(cycle['message'], MAX_SERVER_MESSAGE)}</td></tr>"
        )
    parts.append("</table></body></html>\n")
    return "".join(parts)


__all__: list[str] = []
