"""`zkjepsen report STORE --out DIR` and `zkjepsen serve [STORE]`: a store as pages to browse
(report/site.py reads it, report/site_pages.py draws them). `serve` is the standard library's
HTTP server over the pages it writes to a temporary folder, on the loopback interface unless
told otherwise; it redraws them when the index is asked for again, so new runs appear."""

from __future__ import annotations

import functools
import http.server
import shutil
import tempfile
import threading
from pathlib import Path

import click

from zkjepsen.errors import BadInput
from zkjepsen.store import DEFAULT_ROOT
from zkjepsen.store.writable import check_directory

OUT_FIX = "give --out a new or empty folder you can write to (or an earlier report's)"


def _check_run(d: Path) -> None:
    """A stored run checked whole, as analyze, replay and shrink check it (run/stored.py)."""
    from zkjepsen.run.stored import StoredRun

    StoredRun.load(d)


def build(store: Path, out: Path) -> Path:
    from zkjepsen.report.site import read_store
    from zkjepsen.report.site_pages import write_site

    return write_site(read_store(store, _check_run), out)


def _store(text: str) -> Path:
    from zkjepsen.report.site import check_store

    return check_store(Path(text) if text else Path(""))


def _check_out(text: str, store: Path) -> Path:
    if not text:
        raise BadInput(f"an empty --out names no folder; {OUT_FIX}")
    out = Path(text)
    check_directory(out, "--out", OUT_FIX)
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out} is a file; {OUT_FIX}")
    if out.resolve() == store.resolve() or store.resolve() in out.resolve().parents:
        raise BadInput(f"--out {out} is inside the store {store}; {OUT_FIX}")
    if out.is_dir() and any(out.iterdir()) and not (out / "index.html").exists():
        raise BadInput(f"--out {out} holds other files; {OUT_FIX}")
    return out


@click.command("report")
@click.argument("store")
@click.option(
    "--out",
    required=True,
    help="Folder to write the pages to (index.html first; each run's timeline, plots and "
    "tables copied beside its page): a CI artifact, or `python -m http.server` over it.",
)
def report_command(store: str, out: str) -> None:
    """Write a store's pages as static files: every run with its verdict (filterable), each
    test, matrix, gate, scenario run and shrink, each run's timeline, plots and verdict."""
    root = _store(store)
    index = build(root, _check_out(out, root))
    click.echo(f"wrote {index}")


class _Handler(http.server.SimpleHTTPRequestHandler):
    rebuild: functools.partial | None = None
    lock = threading.Lock()

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        if self.path in ("/", "/index.html") and self.rebuild is not None:
            with self.lock:  # the index again: the store may have new runs
                try:
                    self.rebuild()
                except BadInput as e:
                    self.send_error(500, str(e))
                    return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib's name
        pass  # a line per request would bury the one line that says where the pages are


def _listen(host: str, port: int, handler) -> http.server.ThreadingHTTPServer:
    if not host.strip():
        raise BadInput("an empty --host would listen on every interface; give an address")
    try:
        return http.server.ThreadingHTTPServer((host, port), handler)
    except (OSError, UnicodeError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise BadInput(
            f"cannot listen on {host}:{port} ({why}); give another --host or --port"
        ) from None


@click.command("serve")
@click.argument("store", required=False)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port (0: any free one; the line printed says which).",
)
def serve_command(store: str | None, host: str, port: int) -> None:
    """Serve a store's pages (as `report` writes them) until Ctrl-C; STORE defaults to the
    store every command writes to (ZKJEPSEN_STORE, else ./store)."""
    root = _store(store) if store is not None else _store(str(DEFAULT_ROOT))
    out = Path(tempfile.mkdtemp(prefix="zkjepsen-site-"))
    try:
        rebuild = functools.partial(build, root, out)
        handler = type("Handler", (_Handler,), {"rebuild": rebuild})
        server = _listen(host, port, functools.partial(handler, directory=str(out)))
        with server:
            rebuild()  # a bad store is refused here, before anything is served
            bound = server.server_address[1]
            click.echo(f"serving {root} at http://{host}:{bound}/ (Ctrl-C to stop)", err=True)
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                pass
    finally:
        shutil.rmtree(out, ignore_errors=True)
