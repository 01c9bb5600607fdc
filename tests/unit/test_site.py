"""`zkjepsen report` and `serve` on a store laid out as runs write it (the pages' logic: what each
page lists and links; tests/integration/test_site_browser.py loads them in a real browser, from
real runs), and bad input: one sentence, exit 254, nothing written."""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from pathlib import Path

import pytest
from stored_folder import stored_spec  # tests/unit/stored_folder.py

from zkjepsen.cli import main


def _run(store: Path, test: str, stamp: str, valid, **spec) -> Path:
    d = store / test / stamp
    d.mkdir(parents=True)
    (d / "test.json").write_text(json.dumps(stored_spec(recipe="kazoo", **spec)))
    if valid is not None:
        (d / "results.json").write_text(json.dumps({"valid": valid, "lock": {"valid": valid}}))
    (d / "timeline.html").write_text("<html><body>the timeline</body></html>")
    (store / test / "latest").unlink(missing_ok=True)
    (store / test / "latest").symlink_to(stamp)
    return d


def _cli(*argv: str) -> int:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    return int(e.value.code or 0)


def test_the_index_lists_every_run_with_its_verdict_and_each_run_page_links_its_files(tmp_path):
    store, out = tmp_path / "store", tmp_path / "site"
    _run(store, "kazoo-lock-pause-client", "20261128T101500", False, nemesis=["pause-client"])
    _run(store, "gate-kazoo", "20261128T111500", True, nemesis=["kill-leader"])
    _run(store, "gate-kazoo", "20261128T111600", None)  # interrupted before its verdict
    (store / "gate-kazoo" / "20261128T111500" / "minimal").mkdir()
    (store / "gate-kazoo" / "20261128T111500" / "minimal" / "schedule.json").write_text("{}")
    assert _cli("report", str(store), "--out", str(out)) == 0
    index = (out / "index.html").read_text()
    assert index.count('<tr data-verdict="') == 3  # the links named `latest` are not runs
    assert 'data-verdict="INVALID"' in index and 'data-verdict="VALID"' in index
    assert 'data-verdict="NOT CHECKED"' in index and "pause-client" in index
    assert "http" not in index.replace("http-equiv", "")  # nothing from a network
    page = out / "runs" / "gate-kazoo" / "20261128T111500" / "index.html"
    text = page.read_text()
    assert 'href="timeline.html"' in text and 'href="minimal/schedule.json"' in text
    assert (page.parent / "timeline.html").read_text().endswith("the timeline</body></html>")
    assert (page.parent / "minimal" / "schedule.json").exists()
    assert "test/gate-kazoo.html" in index and (out / "test" / "gate-kazoo.html").exists()


def test_serve_serves_the_same_pages(tmp_path, monkeypatch):
    store = tmp_path / "store"
    _run(store, "kazoo-lock-none", "20261128T101500", True)
    from zkjepsen.cli import site

    seen = {}
    real = site.http.server.ThreadingHTTPServer.serve_forever

    def serve_forever(self):  # serve one request, then stop as Ctrl-C would
        t = threading.Thread(target=real, args=(self,), daemon=True)
        t.start()
        try:
            url = f"http://127.0.0.1:{self.server_address[1]}/"
            seen["index"] = urllib.request.urlopen(url, timeout=60).read().decode()
        finally:
            self.shutdown()
            t.join()
        raise KeyboardInterrupt

    monkeypatch.setattr(site.http.server.ThreadingHTTPServer, "serve_forever", serve_forever)
    assert _cli("serve", str(store), "--port", "0") == 0
    assert 'data-verdict="VALID"' in seen["index"]


CASES = ["missing", "a file", "no run", "out inside", "out a file", "out busy", "a fifo"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_sentence_and_exit_254(tmp_path, capsys, case):
    store, out = tmp_path / "store", tmp_path / "site"
    d = _run(store, "t", "20261128T101500", True)
    if case == "missing":
        store = tmp_path / "nowhere"
    elif case == "a file":
        store = d / "test.json"
    elif case == "no run":
        store = tmp_path / "empty"
        store.mkdir()
    elif case == "out busy":  # a folder of other files, not an earlier report
        (out / "notes.txt").parent.mkdir()
        (out / "notes.txt").write_text("mine")
    elif case == "out inside":
        out = store / "site"
    elif case == "out a file":
        out = d / "test.json"
    else:
        (d / "results.json").unlink()
        os.mkfifo(d / "results.json")  # would block a plain open() for ever
    assert _cli("report", str(store), "--out", str(out)) == 254
    err = capsys.readouterr().err.strip()
    assert err.startswith("zkjepsen: ") and "\n" not in err and "Traceback" not in err
    assert not (out / "index.html").exists()
