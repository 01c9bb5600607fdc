"""Property (issue 48): the one opener (store/regular.py) on any kind of file, size and nesting.

Each example puts one file where a command would read one: a regular file of JSON or TOML nested
0-200 levels and of any size around a limit, or a named pipe, a directory, a link loop, a link to
/dev/zero, a dangling link, bytes that are not UTF-8, a 300 MB sparse file, a link that leads out
of the folder it is read in. The oracle: the opener returns exactly what a plain parse of a
well-formed file gives (a config nested at most 64 levels, a JSON document 128: it may quote
records; within the limit; inside `within` when given), or refuses with BadInput in one line;
never another exception, never a hang past the bound.
Then the same files through the commands that read them: `check HISTORY` and `test --config`
(exit 254 in one line with nothing created, or the answer the well-formed file gives).

The counts are printed; ZKJEPSEN_OPENER_EXAMPLES (default 150) and ZKJEPSEN_OPENER_SEED
explore further.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hostile import (
    BOUND_S,
    DEAD_ENGINE,
    Hung,
    Tally,
    examples,
    hang_guard,
    hung,
    make_kind,
    nested,
    refusal_wrong,
    run_bounded,
    seeded,
    snapshot,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkjepsen.errors import BadInput
from zkjepsen.store import config, regular
from zkjepsen.store.regular import MAX_DEPTH, MAX_DOCUMENT_DEPTH

EXAMPLES = examples("ZKJEPSEN_OPENER_EXAMPLES", 150)
SEEDED = os.environ.get("ZKJEPSEN_OPENER_SEED")
HOSTILE = ("fifo", "dir", "loop", "device", "dangling", "binary", "sparse", "outside")


@dataclass(frozen=True)
class File:
    kind: str  # "json", "toml" or a hostile kind
    depth: int = 1  # how deeply the document nests (the root table counts 1)
    pad: int = 0  # bytes of padding (a string field), to cross a limit
    linked: bool = False  # read through a link inside the folder (a link that stays is fine)

    def __repr__(self) -> str:
        return f"{self.kind} depth {self.depth} pad {self.pad}" + (" linked" if self.linked else "")


def json_doc(depth: int, pad: int) -> str:
    """A table nested `depth` levels in all (the table itself is one), with `pad` bytes more."""
    return json.dumps({"pad": "x" * pad, "v": json.loads(nested(depth - 1))})


def toml_doc(depth: int, pad: int) -> str:
    return f'pad = "{"x" * pad}"\nv = {"[" * (depth - 1)}1{"]" * (depth - 1)}\n'


def make(folder: Path, f: File) -> Path:
    path = folder / ("doc.toml" if f.kind == "toml" else "doc.json")
    target = folder / "real" if f.linked else path
    if f.kind == "json":
        target.write_text(json_doc(f.depth, f.pad))
    elif f.kind == "toml":
        target.write_text(toml_doc(f.depth, f.pad))
    else:
        target.write_text("{}")
        make_kind(target, f.kind, outside=Path("/etc/hostname"))
    if f.linked:
        path.symlink_to("real")
    return path


FILES = st.one_of(
    st.builds(
        File,
        st.sampled_from(["json", "toml"]),
        st.integers(1, 3 * MAX_DEPTH),  # past both bounds
        st.integers(0, 3000),
        st.booleans(),
    ),
    st.builds(File, st.sampled_from(HOSTILE), st.just(1), st.just(0), st.booleans()),
)
LIMIT = 2048  # a small limit, so that sizes around it are cheap to make


def bound_of(f: File) -> int:
    """How deeply it may nest: a config as a record, a JSON document twice that (it may quote
    records: a verdict's evidence quotes ops)."""
    return MAX_DOCUMENT_DEPTH if f.kind == "json" else MAX_DEPTH


def expected(f: File) -> tuple[str, Any]:
    """What the opener must do with `f`, read with `within` its folder and LIMIT."""
    if f.kind in HOSTILE:
        return "refused", None
    text = json_doc(f.depth, f.pad) if f.kind == "json" else toml_doc(f.depth, f.pad)
    if len(text.encode()) > LIMIT:
        return "refused", None
    if f.depth > bound_of(f):
        return "refused", None
    return "read", json.loads(text) if f.kind == "json" else tomllib.loads(text)


def opened(path: Path, f: File, folder: Path) -> tuple[str, Any]:
    """What the opener did: ("read", the value) or ("refused", the sentence)."""
    try:
        with hang_guard(BOUND_S):
            if f.kind == "toml":
                text = regular.read_text(path, "config", LIMIT, within=folder)
                return "read", config.parse_toml(text, "config")
            return "read", regular.read_json(path, "document", limit=LIMIT, within=folder)
    except BadInput as e:
        return "refused", str(e)
    except Hung:
        return f"still reading: {hung(BOUND_S)}", None
    except BaseException as e:  # noqa: BLE001 - anything else is the finding
        return f"raised {type(e).__name__}: {e}", None


def test_the_opener_reads_exactly_what_it_may_and_refuses_the_rest(tmp_path, request):
    tally = Tally()
    count = iter(range(10**9))

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=SEEDED is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(FILES)
    def one(f: File) -> None:
        folder = tmp_path / f"f{next(count)}"
        folder.mkdir()
        path = make(folder, f)
        want, value = expected(f)
        got, said = opened(path, f, folder)
        if got != want:
            why: str | None = f"{got} ({str(said)[:200]}), expected {want}"
        elif got == "read" and said != value:
            why = f"read {str(said)[:200]}, not what the file holds"
        elif got == "refused" and len(str(said).splitlines()) != 1:
            why = f"refused in {len(str(said).splitlines())} lines"
        else:
            why = None
        what = (
            f.kind
            if f.kind in HOSTILE
            else f"{f.kind} "
            + ("too deep" if f.depth > bound_of(f) else "too big" if want == "refused" else "fine")
        )
        tally.add(what, repr(f), why)

    seeded(one, "ZKJEPSEN_OPENER_SEED")()
    summary = tally.report(request, "opener: files")
    tally.assert_none_wrong(summary)
    assert len(tally.tried) >= 8


def test_the_real_limits_hold_on_a_sparse_file_and_a_deep_one(tmp_path):
    """The defaults, not LIMIT: a 300 MB sparse file is refused on its size before a byte is
    read; a config nested 64 levels is read, 65 refused; a JSON document 128 and 129."""
    big = tmp_path / "big.json"
    make_kind(big, "sparse")
    for read in (regular.read_json, regular.read_text, regular.read_bytes):
        try:
            read(big, "document")
            raise AssertionError(f"{read.__name__} read a 300 MB file")
        except BadInput as e:
            assert "larger than 256 MiB" in str(e)
    for read, bound in ((regular.read_json, MAX_DOCUMENT_DEPTH), (config.read_toml, MAX_DEPTH)):
        path = tmp_path / ("d.json" if read is regular.read_json else "d.toml")
        for depth, ok in ((bound, True), (bound + 1, False)):
            path.write_text((json_doc if read is regular.read_json else toml_doc)(depth, 0))
            try:
                read(path, "document")
                assert ok, f"{read.__name__} read a document nested {depth} levels"
            except BadInput as e:
                assert not ok and f"deeper than {bound}" in str(e), e


# ---- through the commands -------------------------------------------------------------------
HISTORY = (
    '{"index":0,"time":1,"process":1,"type":"invoke","f":"write","value":%s}\n'
    '{"index":1,"time":2,"process":1,"type":"ok","f":"write","value":%s}\n'
)
COMMAND_FILES = st.one_of(
    st.tuples(st.sampled_from(["history", "config"]), st.sampled_from(HOSTILE)),
    st.tuples(st.just("history"), st.integers(0, 3 * MAX_DEPTH).map(str)),
    st.tuples(st.just("config"), st.integers(1, 3 * MAX_DEPTH).map(str)),
)


def test_the_commands_read_through_the_opener(tmp_path, monkeypatch, request):
    """`check HISTORY` and `test --config FILE`: a hostile kind of file, or one nested too deep,
    is refused in one line (254) with nothing created; a well-formed one gets the answer it
    gets anyway (check: a verdict; test: past every check of its settings, the dead engine)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", DEAD_ENGINE)
    tally = Tally()
    count = iter(range(10**9))

    @settings(
        max_examples=max(20, EXAMPLES // 3),
        deadline=None,
        database=None,
        derandomize=SEEDED is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(COMMAND_FILES)
    def one(case: tuple[str, str]) -> None:
        surface, kind = case
        ws = tmp_path / f"w{next(count)}"
        ws.mkdir()
        path = ws / ("h.jsonl" if surface == "history" else "c.toml")
        depth = int(kind) if kind.isdigit() else None
        if depth is None:
            path.write_text("{}")
            make_kind(path, kind)
        elif surface == "history":
            v = nested(depth)
            path.write_text(HISTORY % (v, v))
        else:
            lists = "[" * (depth - 1) + "1" + "]" * (depth - 1)  # in all: depth + 1 levels
            path.write_text(f"recipe = 'kazoo'\n[params]\nv = {lists}\n")
        argv = (
            ["check", str(path), "--model", "register", "--html", str(ws / "ce.html")]
            if surface == "history"
            else ["test", "--config", str(path), "--store", str(ws / "store")]
        )
        before = snapshot(ws)
        code, _, err = run_bounded(argv)
        created = snapshot(ws) - before
        refuse = depth is None or depth + 1 > MAX_DEPTH  # a record nests its value once more
        if refuse:
            why = refusal_wrong(code, err, created)
        elif surface == "history":
            why = None if code in (0, 1, 2) else f"exit {code}: {err[-300:]}"
        else:  # a config within every bound reaches for the engine, which is dead: 255
            why = None if code in (254, 255) and "Traceback" not in err else f"exit {code}: {err}"
        tally.add(f"{surface} {'deep' if depth is not None else kind}", f"{argv}", why)

    seeded(one, "ZKJEPSEN_OPENER_SEED")()
    summary = tally.report(request, "opener: through check and test --config")
    tally.assert_none_wrong(summary)
