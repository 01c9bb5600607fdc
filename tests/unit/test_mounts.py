"""docker/mounts.py's pure parts: the tars it puts, the merge of what it fetches, and which
containers a rewritten file goes to. (The engine side is tests/integration/test_remote_files.py.)"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from zkjepsen.docker import mounts


def _names(data: bytes) -> dict[str, bytes | None]:
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return {
            m.name: (t.extractfile(m).read() if m.isfile() else None)  # type: ignore[union-attr]
            for m in t.getmembers()
        }


def _dir_tar(name: str, files: dict[str, bytes]) -> bytes:
    """What get_archive returns for a directory: its own name first."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"{name}/{rel}")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_tar_puts_each_bind_at_its_container_path_without_bytecode(tmp_path):
    src = tmp_path / "pkg"
    (src / "__pycache__").mkdir(parents=True)
    (src / "mod.py").write_text("x = 1\n")
    (src / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    one = tmp_path / "token"
    one.write_text("t\n")
    names = _names(mounts.tar_of([(str(src), "/opt/zkjepsen/src/pkg")], {"/ctl/token": one}))
    assert names["opt/zkjepsen/src/pkg/mod.py"] == b"x = 1\n"
    assert names["ctl/token"] == b"t\n"
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_merge_appends_only_new_bytes_and_rewrites_a_file_that_shrank(tmp_path):
    out = tmp_path / "out"
    mounts._merge(_dir_tar("out", {"h.jsonl": b'{"a":1}\n{"b"'}), out)
    assert (out / "h.jsonl").read_bytes() == b'{"a":1}\n{"b"'
    ino = (out / "h.jsonl").stat().st_ino
    mounts._merge(_dir_tar("out", {"h.jsonl": b'{"a":1}\n{"b":2}\n'}), out)
    assert (out / "h.jsonl").read_bytes() == b'{"a":1}\n{"b":2}\n'
    assert (out / "h.jsonl").stat().st_ino == ino  # appended in place: a tailer's offset holds
    mounts._merge(_dir_tar("out", {"log": b"rolled\n"}), out)
    mounts._merge(_dir_tar("out", {"log": b"r\n"}), out)
    assert (out / "log").read_bytes() == b"r\n"


def test_merge_never_writes_outside_the_dir(tmp_path):
    mounts._merge(_dir_tar("out", {"../../escape": b"x"}), tmp_path / "out")
    assert not (tmp_path / "escape").exists() and not (tmp_path.parent / "escape").exists()


class FakeApi:
    def __init__(self) -> None:
        self.puts: list[tuple[str, dict]] = []

    def put_archive(self, cid: str, path: str, data: bytes) -> None:
        assert path == "/"
        self.puts.append((cid, _names(data)))


class FakeClient:
    def __init__(self) -> None:
        self.api = FakeApi()


def test_shared_engine_keeps_bind_mounts_and_copies_nothing(tmp_path):
    files = mounts.Files(FakeClient(), shared=True)
    binds = {str(tmp_path): {"bind": "/x", "mode": "ro"}}
    assert files.binds(binds) == binds
    files.attach("c1", binds)
    files.push(tmp_path / "f")
    assert files.client.api.puts == [] and files.mode == "bind"


def test_copying_engine_puts_binds_before_start_and_rewrites_where_mounted(tmp_path):
    ctl, other = tmp_path / "ctl", tmp_path / "other"
    ctl.mkdir()
    other.mkdir()
    (ctl / "clock").write_text("+0 x1\n")
    files = mounts.Files(FakeClient(), shared=False)
    a = {str(ctl): {"bind": "/control", "mode": "ro"}}
    b = {str(other): {"bind": "/other", "mode": "ro"}}
    assert files.binds(a) == {}
    files.attach("ca", a)
    files.attach("cb", b)
    puts = files.client.api.puts
    assert puts == [("ca", {"control": None, "control/clock": b"+0 x1\n"}), ("cb", {"other": None})]
    (ctl / "clock").write_text("+5\n")
    files.push(ctl / "clock")
    assert puts[-1] == ("ca", {"control/clock": b"+5\n"}) and len(puts) == 3


def test_static_binds_are_tarred_once_per_run(tmp_path, monkeypatch):
    code = tmp_path / "code"
    code.mkdir()
    (code / "m.py").write_text("")
    calls: list[object] = []
    real = mounts.tar_of
    monkeypatch.setattr(mounts, "tar_of", lambda *a, **k: calls.append(a) or real(*a, **k))
    files = mounts.Files(FakeClient(), shared=False)
    for cid in ("c1", "c2", "c3"):
        out = tmp_path / cid
        out.mkdir()
        binds = {str(code): {"bind": "/code", "mode": "ro"}, str(out): {"bind": "/out"}}
        files.attach(cid, binds, out=["/out"], static={str(code)})
    assert sum(1 for a in calls if a[0] == ((str(code), "/code"),)) == 1
    assert len(files.client.api.puts) == 6
    assert Path(files._out["c2"][0][1]) == tmp_path / "c2"


def test_stopped_clients_are_fetched_once_and_the_rest_before_removal(tmp_path):
    fetched: list[str] = []

    class Api(FakeApi):
        def get_archive(self, cid: str, path: str):
            fetched.append(cid)
            return iter([_dir_tar("out", {"h": cid.encode()})]), {}

    files = mounts.Files(FakeClient(), shared=False)
    files.client.api = Api()
    for cid in ("server", "client"):
        (tmp_path / cid).mkdir()
        files.attach(cid, {str(tmp_path / cid): {"bind": "/out"}}, out=["/out"])
    files.collect(["client"])  # the pool, once its clients stopped
    files.collect()  # the backend, before it removes the containers
    assert fetched == ["client", "server"]  # each once
    assert (tmp_path / "client" / "h").read_text() == "client"
