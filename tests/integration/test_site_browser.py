"""The store's pages in a real browser (Debian's headless Chromium, installed by `./run test`),
made from real runs: a one-cell matrix of kazoo's Lock with no fault (VALID) and the
reentrant-release scenario on kazoo-291 (INVALID: a nested release frees the lock under its
holder). `zkjepsen serve` serves them; the test reads what Chromium rendered (`--dump-dom`,
after the page's own script ran): the index lists both runs with their verdicts, a filter keeps
only the failing one, its page shows its first violation, and its timeline is reached by its
link. Screenshots of the index, the matrix page and the failing run's page are kept beside the
test's store (the CI artifact)."""

from __future__ import annotations

import html
import json
import os
import re
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from zkjepsen.docker import resources
from zkjepsen.report.summary import summarise

ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]
BROWSERS = ("chromium", "chromium-browser")


def browser() -> str:
    found = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if found is None:
        pytest.fail(
            "Chromium is not installed (`./run test` installs it: apt-get install chromium)"
        )
    return found


def address_space_capped() -> bool:
    """Whether this process lives under a hard address-space limit (`ulimit -v`, as CI sets).
    Chromium reserves tens of GiB of address space it never touches (V8's cage, PartitionAlloc's
    pools); under such a limit it dies of SIGTRAP before it loads a page, which is the machine's
    limit and not the page's behaviour. A soft limit alone is lifted for the browser."""
    return resource.getrlimit(resource.RLIMIT_AS)[1] != resource.RLIM_INFINITY


def lift_soft_address_space() -> None:
    """In the browser's child, before exec: the soft limit up to the (unlimited) hard one."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


@pytest.fixture(scope="module")
def chromium(zk_image):
    """A function: what Chromium printed for its arguments. Under a hard address-space cap the
    same host browser is started through Docker (`chroot` into the host's root from a container
    of the suite's own ZooKeeper image, on the host's network), whose processes take their limits
    from the engine and not from this process; the container is labelled with a run id and removed
    whatever happens."""
    run_id = resources.new_run_id()
    capped = address_space_capped()

    def launch(*argv: str) -> str:
        # --no-sandbox: the suite runs as root, where Chromium's sandbox refuses to start.
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        flags += ["--disable-dev-shm-usage", "--no-first-run", "--disable-crash-reporter"]
        for attempt in (1, 2):
            out = once([*flags, *argv])
            if capped and out.returncode > 128:  # Docker reports a signal death as 128 + signal
                out.returncode = 128 - out.returncode
            if out.returncode >= 0:
                break
            # A fresh clone's suite once saw SIGTRAP with nothing on stderr where the same call
            # passed alone: a browser's crash is not the page's behaviour, so it starts again.
            print(f"chromium died of signal {-out.returncode} (attempt {attempt})")
        assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
        return out.stdout

    def once(argv: list[str]) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory(prefix="zkj-chromium-") as profile:
            command = [browser(), f"--user-data-dir={profile}", *argv]
            name = f"{run_id}-browser-{secrets.token_hex(3)}"
            if capped:
                label = [f"--label={k}={v}" for k, v in resources.labels(run_id, "browser").items()]
                command = ["docker", "run", "--rm", f"--name={name}", *label, "--network=host",
                           "--volume=/:/host", "--entrypoint=chroot", zk_image, "/host",
                           *command]  # fmt: skip
            try:
                return subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    timeout=180,
                    check=False,
                    preexec_fn=None if capped else lift_soft_address_space,
                )
            finally:
                if capped:
                    subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)

    return launch


def zkj(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*ZKJEPSEN, *argv], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def served(tmp_path_factory, zk_image):
    """A store made by real runs, and `zkjepsen serve` over it: (its URL, the store)."""
    store = tmp_path_factory.mktemp("site") / "store"
    small = ["--nodes", "3", "--clients", "3", "--time-limit", "6", "--session-timeout", "3"]
    # The two runs at once (each its own run and folder in the store), not one after the other.
    scenario = subprocess.Popen(
        [*ZKJEPSEN, "scenario", "run", "reentrant-release", "--recipe", "kazoo-291",
         "--runs", "1", "--store", str(store)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        m = zkj("matrix", "--recipes", "kazoo", "--nemeses", "none", "--runs", "1", *small,
                "--store", str(store), "--out", str(store.parent / "matrix.md"))  # fmt: skip
    finally:
        _, err = scenario.communicate(timeout=600)
    assert m.returncode in (0, 1), m.stderr[-2000:]
    assert scenario.returncode in (0, 1), err[-2000:]
    server = subprocess.Popen(
        [*ZKJEPSEN, "serve", str(store), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()  # "serving STORE at http://127.0.0.1:PORT/ ..."
        url = re.search(r"http://\S+/", line)
        assert url, line
        yield url.group(0), store
    finally:
        server.terminate()
        server.wait(timeout=30)


def results(store: Path) -> dict[str, dict]:
    """Each run's results.json, by its folder relative to the store."""
    return {
        p.parent.relative_to(store).as_posix(): json.loads(p.read_text())
        for p in store.glob("*/*/results.json")
        if not p.parent.is_symlink()  # a test's `latest`
    }


def rows(dom: str) -> list[tuple[str, str]]:
    """(run folder, verdict) of each row of the index's runs table a reader sees."""
    found = re.findall(r'<tr data-verdict="([^"]*)"( hidden="")?><td><a href="runs/([^"]+)/', dom)
    return [(rel, verdict) for verdict, hidden, rel in found if not hidden]


def test_the_index_shows_every_run_with_its_verdict_and_a_click_reaches_the_timeline(
    served, chromium
):
    url, store = served
    runs = results(store)
    words = {True: "VALID", False: "INVALID", "unknown": "UNKNOWN"}
    assert len(runs) == 2, sorted(runs)
    dom = chromium("--dump-dom", url)
    assert sorted(rows(dom)) == sorted((rel, words[r["valid"]]) for rel, r in runs.items())
    failing = [rel for rel, r in runs.items() if r["valid"] is False]
    assert len(failing) == 1, runs  # kazoo-291's nested release splits the lock
    (bad,) = failing

    # The filter (the page's own script, run by the browser) keeps the failing run alone.
    filtered = chromium("--dump-dom", f"{url}index.html?q=kazoo-291&verdict=INVALID")
    assert rows(filtered) == [(bad, "INVALID")]

    page = chromium("--dump-dom", f"{url}runs/{bad}/index.html")
    first = summarise(runs[bad]["lock"])  # the lock's first violation, in the console's words
    # a DOM dump escapes only &, < and > in text (an apostrophe stays as it is)
    assert "INVALID" in page and html.escape(first, quote=False) in page, first
    href = re.search(r'href="(timeline\.html)"', page)
    assert href, page[-2000:]
    timeline = chromium("--dump-dom", f"{url}runs/{bad}/{href.group(1)}")
    assert "<svg" in timeline or "<table" in timeline  # the timeline itself, not a 404 page

    shots = store.parent / "screenshots"
    shots.mkdir(exist_ok=True)
    (matrix,) = re.findall(r'href="(matrix/\d+\.html)"', dom)
    for name, at in (("index", ""), ("matrix", matrix), ("failing-run", f"runs/{bad}/index.html")):
        png = shots / f"{name}.png"
        chromium("--window-size=1280,900", f"--screenshot={png}", url + at)
        assert png.stat().st_size > 10_000, png  # a rendered page, not an empty canvas
    print(f"screenshots in {shots}: {sorted(os.listdir(shots))}")
