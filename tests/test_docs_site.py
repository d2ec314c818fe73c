"""The documentation site builds with ``mkdocs build --strict`` (no broken link, no missing page,
every generated reference page generated), its references cover what the code defines — every
command and flag of the click tree, every manifest field of the schemas, every environment
variable — and headless chromium renders the home page, a search over the index and a
generated reference page."""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from reconciler.cli import cli
from reconciler.load.schema import KIND_FILES
from tests.support.docs import REPO, Browser, build_site

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for the module."""
    out = tmp_path_factory.mktemp("site")
    done = build_site(out)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on a loopback port (search runs in a web worker: not file://)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            """Keep the test output clean."""

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless chromium for the module."""
    opened = Browser()
    yield opened
    opened.close()


def text_of(html: str) -> str:
    """A page's text, tags dropped and whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def every_command(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    """Every command of the tree, by its full name (``state migrate``)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        full = f"{prefix}{name}"
        yield full, command
        if isinstance(command, click.Group):
            yield from every_command(command, full + " ")


def test_the_command_reference_names_every_command_and_flag(site: Path) -> None:
    page = (site / "reference" / "commands" / "index.html").read_text(encoding="utf-8")
    text = text_of(page)
    missing = []
    for name, command in every_command(cli):
        if f"reconcile {name}" not in text:
            missing.append(f"reconcile {name}")
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                missing += [f"{name} {opt}" for opt in param.opts if opt not in text]
    assert not missing, missing
    assert "Sentinel" not in text  # click's unset default, never shown to a reader


@pytest.mark.parametrize(
    "kind", [name.removesuffix(".schema.json") for name in KIND_FILES.values()]
)
def test_the_manifest_reference_has_a_row_for_every_field_of_the_schema(
    site: Path, kind: str
) -> None:
    page = (site / "reference" / "manifests" / kind / "index.html").read_text(encoding="utf-8")
    schema = json.loads((REPO / "schemas" / f"{kind}.schema.json").read_text(encoding="utf-8"))
    spec = schema["properties"]["spec"]
    fields = (schema["$defs"]["spec"] if "$ref" in spec else spec)["properties"]
    for field in fields:
        assert f"<code>{field}</code>" in page, field
    rows = re.findall(r"<tr>\s*<td><code>", page)
    assert len(rows) > len(fields)  # nested fields have rows too


def test_fields_show_type_bounds_default_access_and_an_example(site: Path) -> None:
    page = text_of((site / "reference" / "manifests" / "pipe" / "index.html").read_text())
    assert (
        "engine_max_threads integer or null 0 Query threads (0 to 64; 0 means automatic). null "
        "resets it to the service's default (0). Bounds: ≥ 0; ≤ 64 Access: writable: changed by "
        "the pipe update (PATCH) Example: 8"
    ) in page  # default 0 from the schema, example 8 from manifests/pipes/orders.yaml
    assert re.search(
        r"topics (\(required\) )?string .{0,200}Access: create-time: sent when the pipe is created",
        page,
    )


def test_a_field_only_one_form_of_a_field_requires_is_not_marked_required(site: Path) -> None:
    page = text_of((site / "reference" / "manifests" / "pipe" / "index.html").read_text())
    # a secret reference is {fromEnv} or {fromFile}; Kafka credentials take one of four shapes
    assert "fromEnv string" in page and "fromEnv (required)" not in page
    assert "fromFile (required)" not in page
    assert "username {fromEnv: NAME} or" in page
    assert "privateKey (required)" not in page
    # a nullable object's members: required whenever the object is given
    assert "accessKeyId (required) {fromEnv: NAME} or" in page


def test_a_type_written_in_braces_is_shown_whole_not_read_as_html_attributes(
    site: Path,
) -> None:
    html = (site / "reference" / "manifests" / "pipe" / "index.html").read_text()
    assert re.findall(r"<td [^>]*>", html) == []
    assert "password {fromEnv: NAME} or {fromFile: PATH} Secret reference" in text_of(html)


def test_the_environment_page_names_every_variable_the_code_reads(site: Path) -> None:
    page = text_of((site / "reference" / "environment" / "index.html").read_text())
    source = "".join(p.read_text(encoding="utf-8") for p in (REPO / "reconciler").rglob("*.py"))
    variables = set(re.findall(r"\bRECONCILE_[A-Z_]+[A-Z]\b", source))
    assert {"RECONCILE_BASE_URL", "RECONCILE_LOAD_WORKERS"} <= variables
    assert sorted(v for v in variables if v not in page) == []


def test_the_emulator_page_gives_both_organizations_and_their_credentials(site: Path) -> None:
    from reconciler.emulator import protocol

    page = text_of((site / "how-to" / "emulator" / "index.html").read_text(encoding="utf-8"))
    source = Path(protocol.__file__).read_text(encoding="utf-8")
    other = re.search(r'Identity\(OTHER_ORG_ID, "([^"]+)", "([^"]+)", "([^"]+)"\)', source)
    assert other is not None
    for value in (protocol.OTHER_ORG_ID, *other.groups()):
        assert value in page, value
    for value in ("demo-key-id", "demo-key-secret", "demo-dashboards-token"):
        assert value in page, value


def test_the_changelog_page_shows_the_changelog_or_says_where_it_is(site: Path) -> None:
    page = text_of((site / "changelog" / "index.html").read_text(encoding="utf-8"))
    changelog = REPO / "CHANGELOG.md"
    if changelog.is_file():
        first = next(line for line in changelog.read_text().splitlines() if line.startswith("## "))
        assert first.lstrip("# ").split("]")[0].lstrip("[") in page
    else:
        assert "CHANGELOG.md" in page


def test_chromium_renders_the_home_page(served: str, browser: Browser) -> None:
    browser.open(served)
    assert browser.wait_for(
        "location.href.startsWith('http') && document.readyState === 'complete'"
    )
    assert browser.evaluate("document.title") == "reconcile"
    nav = browser.evaluate(
        "[...document.querySelectorAll('.md-nav__link')].map(a => a.textContent.trim())"
    )
    for section in ("Getting started", "Concepts", "How-to guides", "Reference", "Changelog"):
        assert section in nav
    links = browser.evaluate(
        "[...document.querySelectorAll('.md-content a')].map(a => a.getAttribute('href'))"
    )
    assert "getting-started/" in links and "reference/commands/" in links


def test_chromium_searches_the_index(served: str, browser: Browser) -> None:
    browser.open(served + "?q=demo-key-secret")
    found = browser.wait_for(
        "[...document.querySelectorAll('.md-search-result__item h1')]"
        ".map(h => h.textContent.trim())"
    )
    assert found and "Use the emulator" in found, found


def test_chromium_renders_a_generated_reference_page(served: str, browser: Browser) -> None:
    browser.open(served + "reference/manifests/pipe/")
    # the page is long: count its rows once it is parsed whole, not while it still loads
    assert browser.wait_for(
        "location.pathname.endsWith('/manifests/pipe/') && document.readyState === 'complete'"
    )
    headings = browser.wait_for(
        "[...document.querySelectorAll('.md-content h2')].map(h => h.textContent.trim())"
    )
    assert "spec.source.kafka" in " ".join(headings), headings
    rows = browser.evaluate("document.querySelectorAll('.md-content table tbody tr').length")
    assert rows > 100
    width = browser.evaluate("document.querySelector('.md-content table').offsetWidth")
    assert width > 300  # laid out by the theme's stylesheet, not an unstyled page
