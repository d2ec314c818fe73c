"""``make test``'s server installers (tools/ensure-*): before installing a system package they
say, in one line, what they install and why; with the package present they install nothing.

apt-get is replaced by a recorder on PATH (nothing is installed); the PostgreSQL binaries the
machine has are hidden under a private mount namespace's empty tmpfs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXPECTED = {
    "ensure-chromium": (
        "make test: installing Debian's chromium (about 115 MB to download with its libraries): "
        "the watch tests open its status page in a headless browser"
    ),
    "ensure-postgres": (
        "make test: installing Debian's postgresql server package (about 20 MB to download): "
        "the shared-state tests start a throwaway PostgreSQL cluster on a loopback port"
    ),
}


def without_the_package(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    """Run ``tools/SCRIPT`` as root on a PATH holding only ``id`` and an apt-get recorder."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recorder = bin_dir / "apt-get"
    recorder.write_text('#!/bin/sh\necho "APT-GET $*" >&2\n', encoding="utf-8")
    recorder.chmod(0o755)
    id_tool = shutil.which("id")
    assert id_tool is not None
    (bin_dir / "id").symlink_to(id_tool)
    command = f"/bin/bash {REPO / 'tools' / script}"
    if Path("/usr/lib/postgresql").is_dir() and script == "ensure-postgres":
        command = f"{shutil.which('mount')} -t tmpfs none /usr/lib/postgresql && {command}"
    return subprocess.run(
        [str(shutil.which("unshare")), "--mount", "/bin/bash", "-c", command],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_an_installer_says_what_it_installs_and_why_in_one_line_before_installing(
    tmp_path: Path, script: str
) -> None:
    done = without_the_package(tmp_path, script)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == EXPECTED[script], done.stderr
    assert [line.split()[1] for line in lines[1:]] == ["update", "install"], done.stderr


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_an_installer_says_nothing_and_installs_nothing_when_the_package_is_there(
    script: str,
) -> None:
    done = subprocess.run(
        ["bash", str(REPO / "tools" / script)], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
