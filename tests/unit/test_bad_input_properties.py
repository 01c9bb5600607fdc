"""Property: for every subcommand and every option or argument it declares, a bad value (of the
wrong type, out of range, empty, a path that cannot be written or read, an unknown name) is
refused first: exit 254 (or 2, `check`'s "unknown"), never 255 or a traceback, exactly one line
on stderr, and nothing created (no store folder, no file in the working directory, no scratch
dir, no container of this process on the machine's engine).

The values are generated from each parameter's own declared type (click's IntRange, FloatRange,
Choice, Path...; argparse's type and choices for `check`), and for a plain string from what it
means (KINDS: a duration, a recipe name, a host list...; a new option missing there fails the
test). Each bad value goes into an otherwise valid command line (BASE). DOCKER_HOST points to a
dead socket: a value that is not refused reaches for the engine and ends in 255, which fails.

The figures (bad inputs tried, refused right) are printed at the end of the run;
ZKJEPSEN_BAD_INPUT_EXAMPLES (per parameter, default 6) and ZKJEPSEN_BAD_INPUT_SEED (default:
fixed, for a stable CI) explore further.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from zkjepsen.cli import main
from zkjepsen.cli.app import cli

DEAD_ENGINE = "unix:///nonexistent/zkjepsen-property-test.sock"
UNWRITABLE = "/proc/zkj-nowhere"  # creating anything here fails, even as root
EXAMPLES = int(os.environ.get("ZKJEPSEN_BAD_INPUT_EXAMPLES", "6"))
SEED = os.environ.get("ZKJEPSEN_BAD_INPUT_SEED")

# A valid command line for each subcommand (values by parameter name, in this order; a bad
# value replaces its parameter's). {run}: a stored run folder, {hist}: a history file, {matrix}:
# a matrix store; all made in the working directory first.
BASE: dict[str, list[tuple[str, str]]] = {
    "analyze": [("store_dir", "{run}")],
    "check": [("history", "{hist}"), ("model_name", "mutex")],
    "cleanup": [],
    "client check": [("cmd", "true")],
    "cluster down": [],
    "cluster status": [],
    "cluster up": [],
    "demo": [],
    "gate": [],
    "hunt": [],
    "image build": [],
    "list": [("what", "recipes")],
    "matrix": [("recipes", "kazoo"), ("nemeses", "none")],
    "merge": [("stores", "{matrix}")],
    "replay": [("store_dir", "{run}")],
    "report": [("store", "{run}"), ("out", "site")],
    "scenario list": [],
    "scenario run": [("names", "client-pause")],
    "serve": [("store", "{run}")],
    "shrink": [("store_dir", "{run}")],
    "sweep": [
        ("recipe", "redis-setnx"),
        ("nemesis", "clock-skew-client"),
        ("over", "offset_s=0:4:2"),
    ],
    "test": [],
}

# What a parameter whose declared type is a plain string (or a number with a meaning, like
# seconds) means, so that its bad values can be made. Flags have no bad value.
KINDS: dict[tuple[str, str], str] = {
    ("analyze", "store_dir"): "run",
    ("check", "history"): "history",
    ("check", "model_name"): "model",
    ("check", "initial"): "json",
    ("check", "time_limit"): "seconds",
    ("check", "html_path"): "out",
    ("check", "memory_limit"): "positive-int",
    ("cleanup", "engines"): "engine",
    ("scenario run", "cluster"): "cluster",
    ("cleanup", "run_ids"): "run-id",
    ("client check", "cmd"): "command",
    ("client check", "recipe"): "recipe",
    ("client check", "backend"): "backend",
    ("client check", "client_dir"): "dir-to-read",
    ("client check", "hosts"): "hosts",
    ("client check", "session_timeout"): "duration",
    ("client check", "request_timeout"): "duration",
    ("client check", "image"): "image",
    ("cluster down", "run_id"): "run-id",
    ("cluster status", "run_id"): "run-id",
    ("cluster up", "store_root"): "store",
    ("cluster up", "image"): "image",
    ("cluster up", "backend"): "backend",
    ("cluster up", "zk_version"): "zk-version",
    ("cluster up", "etcd_version"): "etcd-version",
    ("cluster up", "client_suite"): "client-suite",
    ("cluster up", "fsync"): "fsync",
    ("matrix", "fsync"): "fsync",
    ("scenario run", "fsync"): "fsync",
    ("test", "fsync"): "fsync",
    ("gate", "fsync"): "fsync",
    ("demo", "time_limit"): "seconds",
    ("demo", "image"): "image",
    ("gate", "recipe"): "recipe",
    ("gate", "backend"): "backend",
    ("hunt", "recipe"): "recipe",
    ("hunt", "backend"): "backend",
    ("hunt", "client_cmd"): "command",
    ("hunt", "client_dir"): "dir-to-read",
    ("hunt", "workload"): "workload",
    ("hunt", "params"): "param",
    ("hunt", "session_timeout"): "duration",
    ("hunt", "time_limit"): "duration",
    ("hunt", "config"): "config",
    ("hunt", "budget"): "duration",
    ("hunt", "faults"): "nemesis-list",
    ("hunt", "image"): "image",
    ("hunt", "store_root"): "store",
    ("hunt", "shrink_budget"): "duration",
    ("hunt", "cluster"): "cluster",
    ("hunt", "junit_xml"): "out",
    ("gate", "hunt_budget"): "duration",
    ("gate", "client_cmd"): "command",
    ("gate", "client_dir"): "dir-to-read",
    ("gate", "workload"): "workload",
    ("gate", "params"): "param",
    ("gate", "scenarios"): "gate-scenarios",
    ("gate", "time_limit"): "duration",
    ("gate", "until_power"): "rate",
    ("gate", "image"): "image",
    ("gate", "cluster"): "cluster",
    ("gate", "store_root"): "store",
    ("gate", "junit_xml"): "out",
    ("test", "junit_xml"): "out",
    ("matrix", "junit_xml"): "out",
    ("scenario run", "junit_xml"): "out",
    ("image build", "backend"): "backend",
    ("image build", "zk_version"): "zk-version",
    ("image build", "etcd_version"): "etcd-version",
    ("matrix", "recipes"): "recipe-list",
    ("matrix", "nemeses"): "nemesis-list",
    ("matrix", "workload"): "workload",
    ("matrix", "time_limit"): "seconds",
    ("matrix", "session_timeout"): "seconds",
    ("matrix", "params"): "param",
    ("matrix", "out"): "out",
    ("matrix", "store_root"): "store",
    ("matrix", "shard"): "shard",
    ("matrix", "zk_version"): "zk-version",
    ("matrix", "client_suite"): "client-suite",
    ("matrix", "zk_versions"): "zk-versions",
    ("matrix", "engine"): "engine",
    ("matrix", "cluster"): "cluster",
    ("matrix", "etcd_version"): "etcd-version",
    ("merge", "stores"): "matrix-store",
    ("merge", "out"): "out",
    ("replay", "store_dir"): "run",
    ("report", "store"): "run",
    ("report", "out"): "site-out",
    ("serve", "store"): "run",
    ("serve", "host"): "listen-host",
    ("replay", "store_root"): "store",
    ("replay", "engine"): "engine",
    ("replay", "cluster"): "cluster",
    ("scenario run", "names"): "scenario",
    ("scenario run", "recipes"): "scenario-recipe",
    ("scenario run", "store_root"): "store",
    ("scenario run", "zk_version"): "zk-version",
    ("scenario run", "client_suite"): "client-suite",
    ("scenario run", "zk_versions"): "zk-versions",
    ("scenario run", "etcd_version"): "etcd-version",
    ("shrink", "store_dir"): "run",
    ("shrink", "budget"): "duration",
    ("shrink", "kinds"): "violation-kind",
    ("shrink", "store_root"): "store",
    ("shrink", "engine"): "engine",
    ("shrink", "cluster"): "cluster",
    ("test", "recipe"): "recipe",
    ("test", "workload"): "workload",
    ("test", "nemesis"): "nemesis-list",
    ("test", "backend"): "backend",
    ("test", "time_limit"): "duration",
    ("test", "interval"): "duration",
    ("test", "fault_trigger"): "fault-trigger",
    ("test", "session_timeout"): "duration",
    ("test", "image"): "image",
    ("test", "params"): "param",
    ("test", "config"): "config",
    ("test", "store_root"): "store",
    ("test", "client_cmd"): "command",
    ("test", "client_dir"): "dir-to-read",
    ("test", "engine"): "engine",
    ("test", "zk_version"): "zk-version",
    ("test", "etcd_version"): "etcd-version",
    ("test", "client_suite"): "client-suite",
    ("test", "until_power"): "rate",
    ("sweep", "recipe"): "recipe",
    ("sweep", "backend"): "backend",
    ("sweep", "nemesis"): "nemesis-list",
    ("sweep", "over"): "sweep-over",
    ("sweep", "workload"): "workload",
    ("sweep", "params"): "param",
    ("sweep", "store_root"): "store",
    ("sweep", "json_out"): "out",
    ("sweep", "zk_version"): "zk-version",
    ("sweep", "client_suite"): "client-suite",
    ("sweep", "fsync"): "fsync",
    ("sweep", "etcd_version"): "etcd-version",
    ("sweep", "engine"): "engine",
    ("sweep", "cluster"): "cluster",
    ("sweep", "junit_xml"): "out",
}


# ---- the parameters -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    command: str  # "client check"
    name: str  # the parameter's name (click) or dest (argparse)
    flag: str | None  # "--nodes"; None for a positional argument
    kind: str  # "int", "float", "choice", "path" or a KINDS entry
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()


def click_commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    out: dict[str, click.Command] = {}

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*path, name])
        elif path != ["check"]:  # argparse, below
            out[" ".join(path)] = cmd

    walk(cli, [])
    return out


def declared(command: str, p: click.Parameter) -> Param | None:
    """The parameter as its declared click type describes it; None for a flag."""
    if isinstance(p, click.Option) and (p.is_flag or p.name == "help"):
        return None
    flag = p.opts[0] if isinstance(p, click.Option) else None
    t = p.type
    kind = KINDS.get((command, p.name))
    if isinstance(t, click.IntRange):
        return Param(command, p.name, flag, "int", t.min, t.max)
    if isinstance(t, click.FloatRange):
        return Param(command, p.name, flag, "float", t.min, t.max)
    if isinstance(t, click.Choice):
        return Param(command, p.name, flag, "choice", choices=tuple(t.choices))
    if t is click.INT:
        return Param(command, p.name, flag, "int")
    if t is click.FLOAT or isinstance(t, click.Path) or t is click.STRING:
        return Param(command, p.name, flag, kind or f"unclassified {t.name}")
    return Param(command, p.name, flag, f"unclassified {t.name}")


def check_params() -> list[Param]:
    from zkjepsen.cli.check import parser

    out = []
    for a in parser()._actions:
        if a.dest in ("help", "as_json"):
            continue
        flag = a.option_strings[0] if a.option_strings else None
        if a.choices:
            out.append(Param("check", a.dest, flag, "choice", choices=tuple(a.choices)))
        else:
            out.append(Param("check", a.dest, flag, KINDS.get(("check", a.dest), "unclassified")))
    return out


def all_params() -> list[Param]:
    out = []
    for name, cmd in click_commands().items():
        out += [q for p in cmd.params if (q := declared(name, p)) is not None]
    return out + check_params()


# ---- bad values ---------------------------------------------------------------------------------
def not_matching(pattern: str) -> st.SearchStrategy[str]:
    return st.text(max_size=8).filter(lambda s: not re.fullmatch(pattern, s.strip()))


def unknown(known: set[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.from_regex(r"[a-z][a-z0-9-]{2,12}", fullmatch=True).filter(lambda s: s not in known),
        st.sampled_from(["", " "]),
    )


NOT_INT = st.one_of(st.sampled_from(["", "x", "1.5", "nan", "0x10", "1e3"]), not_matching(r"\d+"))
NOT_SECONDS = st.sampled_from(["nan", "inf", "-inf", "-1", "0", "x", "", "-0.5"])
BAD_TOML = {
    "int": ['"x"', "3.5", "true", "[1]"],
    "float": ['"soon"', "true", "nan", "inf", "[1.0]"],
    "str": ["3", "[1]", "true", '""'],
    "bool": ["2", '"yes"'],
    "nemesis": ["3", "[1]", "{a = 1}"],
    "params": ["3", '"x"', "[1]"],
}
TOML_FIELDS = {
    "nodes": ("int", "--nodes=3"),
    "clients": ("int", "--clients=2"),
    "seed": ("int", "--seed=1"),
    "tick_ms": ("int", None),
    "time_limit_s": ("float", "--time-limit=5"),
    "session_timeout_s": ("float", "--session-timeout=4s"),
    "recovery_s": ("float", None),
    "interval_s": ("float", None),
    "recipe": ("str", "--recipe=kazoo"),
    "workload": ("str", "--workload=lock"),
    "image": ("str", None),
    "pin_clients": ("bool", None),
    "proxy": ("bool", None),
    "nemesis": ("nemesis", "--nemesis=none"),
    "params": ("params", "--param=hold_s=1"),
}


@dataclass
class Bad:
    """One bad input: the value, files to make first, and extra arguments it needs."""

    value: str
    files: dict[str, str] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)


def bad_config() -> st.SearchStrategy[Bad]:
    """A TOML file with one setting of the wrong type, the same key on the command line or not."""

    def make(key: str, value: str, hide: bool) -> Bad:
        kind, option = TOML_FIELDS[key]
        extra = [option] if hide and option else []
        return Bad("bad.toml", {"bad.toml": f"{key} = {value}\n"}, extra)

    keyed = st.sampled_from(sorted(TOML_FIELDS)).flatmap(
        lambda k: st.tuples(st.just(k), st.sampled_from(BAD_TOML[TOML_FIELDS[k][0]]))
    )
    files = st.sampled_from(
        [
            Bad("missing.toml"),
            Bad("."),
            Bad(""),
            Bad("junk.toml", {"junk.toml": "nodes = [\n"}),
            Bad("unknown.toml", {"unknown.toml": "bogus = 1\n"}),
        ]
    )
    return st.one_of(
        st.builds(lambda kv, hide: make(kv[0], kv[1], hide), keyed, st.booleans()), files
    )


def bad_run() -> st.SearchStrategy[Bad]:
    """A stored run folder that is not one: missing, a file, empty, or with broken files."""
    spec = {"recipe": "kazoo", "workload": "lock", "nodes": 3, "clients": 2}
    broken = {
        "test.json": ["[1, 2]", '{"nodes": "many"}', "garbage", '{"bogus": 1}'],
        "schedule.json": ["garbage", '{"faults": 3}', '{"faults": [{"f": "x"}]}'],
        "results.json": ["{not json", "[1]"],
    }

    def folder(name: str, text: str) -> Bad:
        files = {"bad/test.json": json.dumps(spec), "bad/results.json": '{"valid": false}'}
        files[f"bad/{name}"] = text
        return Bad("bad", files)

    made = st.sampled_from(sorted(broken)).flatmap(
        lambda n: st.sampled_from(broken[n]).map(lambda t: folder(n, t))
    )
    simple = st.sampled_from([Bad("missing"), Bad("a-file"), Bad("empty-dir"), Bad("")])
    return st.one_of(simple, made)


def strings(values: st.SearchStrategy[str]) -> st.SearchStrategy[Bad]:
    return values.map(Bad)


def names_of(what: str) -> set[str]:
    if what == "recipe":
        from zkjepsen.recipes import RECIPES

        return set(RECIPES) | {"exec"}
    if what == "workload":
        from zkjepsen.workloads import WORKLOADS

        return set(WORKLOADS)
    if what == "nemesis":
        from zkjepsen.nemesis.faults import KINDS

        return set(KINDS)
    if what == "backend":
        from zkjepsen.backends.registry import backends

        return set(backends())
    if what == "scenario":
        from zkjepsen.reproduce.scenarios import SCENARIOS

        return set(SCENARIOS)
    if what == "model":
        from zkjepsen.checker.linear import MODELS
        from zkjepsen.cli.check import OTHER_CHECKERS

        return set(MODELS) | set(OTHER_CHECKERS)
    from zkjepsen.backends.zookeeper import versions as zkversions

    return set(zkversions.VERSIONS) | set(zkversions.SUITES)


def bad_values(p: Param) -> st.SearchStrategy[Bad]:
    k = p.kind
    if k == "int" or k == "positive-int":
        lo = 1 if k == "positive-int" else p.lo
        parts = [NOT_INT]
        if lo is not None:
            parts.append(st.integers(max_value=int(lo) - 1).map(str))
        if p.hi is not None:
            parts.append(st.integers(min_value=int(p.hi) + 1).map(str))
        return strings(st.one_of(parts))
    if k == "float":
        parts = [st.sampled_from(["x", "", "nan"])]
        if p.lo is not None:
            parts.append(st.floats(max_value=p.lo, exclude_max=True).map(repr))
        if p.hi is not None:
            parts.append(st.floats(min_value=p.hi, exclude_min=True).map(repr))
        return strings(st.one_of(parts))
    if k == "seconds":  # a number of seconds: positive and finite
        return strings(st.one_of(NOT_SECONDS, st.floats(max_value=0).map(repr)))
    if k == "duration":  # 4s, 500ms, 2m or a number: positive and finite
        junk = not_matching(r"[0-9.eE+-]+(ms|s|m)?")
        return strings(st.one_of(NOT_SECONDS, st.sampled_from(["-5s", "0ms", "nanm"]), junk))
    if k == "choice":
        return strings(st.text(max_size=10).filter(lambda s: s not in p.choices))
    if k in ("recipe", "workload", "backend", "scenario", "model"):
        return strings(unknown(names_of(k)))
    if k == "fault-trigger":
        from zkjepsen.run.spec import FAULT_TRIGGERS

        return strings(unknown(set(FAULT_TRIGGERS)))
    if k == "scenario-recipe":
        return strings(unknown(names_of("recipe")))
    if k == "fsync":  # a durability preset: strict or relaxed
        return strings(unknown({"strict", "relaxed"}))
    if k in ("zk-version", "client-suite"):
        return strings(unknown(names_of(k)) | st.from_regex(r"[0-9]\.[0-9]{1,2}", fullmatch=True))
    if k == "etcd-version":
        from zkjepsen.backends.etcd import versions as etcd_versions

        known = set(etcd_versions.VERSIONS)
        numbers = st.from_regex(r"[0-9]\.[0-9]{1,2}", fullmatch=True)
        return strings(unknown(known) | numbers.filter(lambda s: s not in known))
    if k == "zk-versions":
        return strings(st.sampled_from(["", ",", "3.8,nosuch", "2.0"]))
    if k in ("recipe-list", "nemesis-list"):
        known = names_of(k.split("-")[0])
        return strings(st.one_of(unknown(known), st.sampled_from([",", " , "])))
    if k == "param":
        return strings(st.sampled_from(["novalue", "=1", "", "nosuch=1", "hold_s=fast"]))
    if k == "image":
        return strings(
            st.sampled_from(["Not Valid", "UPPER/x", "a b", "", ":tag", "x@sha256:zz", "-x"])
        )
    if k == "engine":
        return strings(st.sampled_from(["nosuch-context-zkj", "ftp://x", "unix://", ""]))
    if k == "cluster":  # malformed: refused before any connection (an unreachable one is 255)
        return strings(st.sampled_from(["localhost", "tcp://", "http://h:8786", "tcp://h:0", ""]))
    if k == "shard":
        return strings(st.sampled_from(["0/2", "3/2", "x", "1/0", "", "1/2/3", "/"]))
    if k == "hosts":
        return strings(
            st.sampled_from(
                ["not a host list", "", "a:99999", ",", "a b:1", ":1", "a..b:1", "256.1.1.1:1"]
            )
        )
    if k == "command":
        return strings(st.sampled_from(["", "  ", "\t"]))
    if k == "run-id":
        return strings(st.sampled_from(["not a run", "", "../x", "x y", "zkj-../../etc"]))
    if k == "json":
        return strings(st.sampled_from(["{", "nope", "[1,", "'x'"]))
    if k == "dir-to-read":
        return strings(st.sampled_from(["missing", "a-file", ""]))
    if k == "store":
        return strings(
            st.sampled_from([UNWRITABLE, f"{UNWRITABLE}/deeper", "a-file", "a-file/sub", ""])
        )
    if k == "out":
        return strings(st.sampled_from([f"{UNWRITABLE}/m.md", ".", "empty-dir", "a-file/m.md", ""]))
    if k == "site-out":  # a folder for the pages: not the store, nor a folder of other files
        return strings(
            st.sampled_from(
                [UNWRITABLE, f"{UNWRITABLE}/deeper", "a-file", "a-file/sub", "", ".", "run/site"]
            )
        )
    if k == "listen-host":  # never one that can be listened on: the server would serve on
        return strings(st.sampled_from(["", " ", "not a host", "a b", "256.1.1.1", "-x"]))
    if k == "history":
        return st.one_of(
            strings(st.sampled_from(["missing.jsonl", "empty-dir", ""])),
            st.text(min_size=1, max_size=40).map(lambda t: Bad("h2.jsonl", {"h2.jsonl": t})),
        )
    if k == "config":
        return bad_config()
    if k in ("run", "matrix-store"):
        return bad_run()
    if k == "rate":  # a rate strictly between 0 and 1
        return strings(st.sampled_from(["x", "", "nan", "0", "1", "1.5", "-0.1", "inf"]))
    if k == "gate-scenarios":
        return strings(st.sampled_from(["nosuch", "", ",", "client-pause,nosuch"]))
    if k == "sweep-over":  # not NAME=START:STOP:STEP, or a range the fault cannot run
        return strings(
            st.sampled_from(
                ["", "offset_s", "rate=1:2:1", "offset_s=8:0:2", "offset_s=0:8:0",
                 "offset_s=2:2:1", "offset_s=0:400:1", "offset_s=0:3:0.5", "offset_s=1x:2:1"]
            )
        )  # fmt: skip
    if k == "violation-kind":
        return strings(st.sampled_from(["bogus:nothing", ""]))
    raise AssertionError(f"no bad values for {p}")


# ---- running one ------------------------------------------------------------------------------
def argv_for(p: Param, bad: Bad) -> list[str]:
    """The command's valid command line with `bad` as p's value."""
    words = p.command.split()
    positional, options = [], []
    for name, value in BASE[p.command]:
        if name == p.name:
            continue
        flag = next((q.flag for q in PARAMS if q.command == p.command and q.name == name), None)
        if flag:
            options.append(f"{flag}={value}")
        else:
            positional.append(value)
    if p.flag:
        options.append(f"{p.flag}={bad.value}")
    else:
        positional.append(bad.value)
    return [*words, *options, *bad.extra, "--", *positional]


def snapshot(root: Path) -> set[str]:
    return {str(q.relative_to(root)) for q in root.rglob("*")}


@dataclass
class Tally:
    tried: Counter = field(default_factory=Counter)
    right: Counter = field(default_factory=Counter)
    failures: dict[str, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)


def run_one(argv: list[str]) -> tuple[int | str, str]:
    out, err = io.StringIO(), io.StringIO()
    limits = resource.getrlimit(resource.RLIMIT_AS)  # `check` sets its --memory-limit
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
                code: int | str = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException as e:  # noqa: BLE001 - a traceback is the finding
                code = f"raised {type(e).__name__}: {e}"
    finally:
        resource.setrlimit(resource.RLIMIT_AS, limits)
    return code, err.getvalue()


def judge(code: int | str, err: str, created: set[str]) -> str | None:
    lines = [x for x in err.splitlines() if x.strip()]
    if not isinstance(code, int):
        return code
    if code not in (254, 2):
        return f"exit {code}: {' | '.join(lines)[:300]}"
    if "Traceback" in err or len(lines) != 1:
        return f"{len(lines)} lines on stderr: {' | '.join(lines)[:300]}"
    if created:
        return f"created {sorted(created)[:5]}"
    return None


def make_workspace(root: Path) -> None:
    from zkjepsen.report import findings

    run = root / "run"
    run.mkdir()
    (run / "test.json").write_text(json.dumps({"recipe": "kazoo", "workload": "lock", "nodes": 3}))
    (run / "results.json").write_text(json.dumps({"valid": False, "lock": {"valid": False}}))
    (root / "h.jsonl").write_text(
        '{"index": 0, "time": 1, "process": 1, "type": "invoke", "f": "acquire"}\n'
    )
    (root / "a-file").write_text("a file where a directory is expected\n")
    (root / "empty-dir").mkdir()
    settings = {"recipes": ["kazoo"], "nemeses": ["none"], "runs": 1, "workload": "lock"}
    findings.write_manifest(root / "matrix", settings, None, [])


PARAMS = all_params()


def test_every_parameter_is_classified():
    """A new option of plain string type needs its meaning in KINDS (and so its bad values)."""
    unclassified = [f"{p.command} {p.flag or p.name}" for p in PARAMS if " " in p.kind]
    assert not unclassified, unclassified
    assert set(BASE) == {*click_commands(), "check"}


def test_bad_values_of_every_parameter_are_refused_first(tmp_path, monkeypatch, request):
    from zkjepsen import store
    from zkjepsen.docker import resources

    ws = tmp_path / "ws"
    ws.mkdir()
    make_workspace(ws)
    monkeypatch.chdir(ws)
    monkeypatch.setenv("DOCKER_HOST", DEAD_ENGINE)
    for name in ("DOCKER_CONTEXT", "ZKJEPSEN_STORE", "ZKJEPSEN_FILES", "ZKJEPSEN_CONTROLLER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(store, "DEFAULT_ROOT", Path("store"))
    monkeypatch.setattr(resources, "SCRATCH_ROOT", ws / "scratch")
    tally = Tally()
    placeholders = {"{run}": "run", "{hist}": "h.jsonl", "{matrix}": "matrix"}

    def one(p: Param, bad: Bad) -> None:
        argv = argv_for(p, bad)
        argv = [placeholders.get(a, a) for a in argv]
        key = json.dumps([argv, bad.files])
        if key in tally.seen:
            return
        tally.seen.add(key)
        for rel, text in bad.files.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        before = snapshot(ws)
        code, err = run_one(argv)
        created = snapshot(ws) - before
        for rel in bad.files:
            (ws / rel).unlink(missing_ok=True)
        why = judge(code, err, created)
        for rel in sorted(created, reverse=True):  # undo, so later examples start clean
            q = ws / rel
            q.rmdir() if q.is_dir() and not q.is_symlink() else q.unlink()
        where = f"{p.command} {p.flag or p.name}"
        tally.tried[where] += 1
        if why is None:
            tally.right[where] += 1
        else:
            tally.failures.setdefault(f"zkjepsen {' '.join(argv)!s}", why)

    def explore(p: Param):
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=SEED is None,
            suppress_health_check=list(HealthCheck),
        )
        @given(bad_values(p))
        def examples(bad: Bad) -> None:
            one(p, bad)

        return seed(int(SEED))(examples) if SEED is not None else examples

    for p in PARAMS:
        if " " not in p.kind:
            explore(p)()

    tried, right = sum(tally.tried.values()), sum(tally.right.values())
    summary = (
        f"bad inputs: {tried} tried over {len(tally.tried)} parameters of "
        f"{len({p.command for p in PARAMS})} subcommands, {right} refused right, "
        f"{tried - right} not"
    )
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\n{summary}", flush=True)  # the figures, on the terminal whatever -q or -s
    assert not tally.failures, (
        summary
        + "\n"
        + "\n".join(f"{argv}\n    -> {why}" for argv, why in list(tally.failures.items())[:80])
    )
    assert tried >= len(tally.tried) * 2 > 100


MODULE_STARTED = [float("inf")]


@pytest.fixture(autouse=True, scope="module")
def _module_started():
    """When this module's first test started (whole seconds, as Docker's `Created`)."""
    import math
    import time

    MODULE_STARTED[0] = math.floor(time.time())
    yield


def test_no_container_of_this_process_exists():
    """With the engine unreachable nothing could be created; asked of the machine's engine too,
    when there is one (this process's owner label)."""
    from zkjepsen.docker import resources

    try:
        import docker

        client = docker.DockerClient(base_url="unix:///var/run/docker.sock", timeout=5)
        containers = client.api.containers(all=True, filters={"label": resources.OWNER_LABEL})
    except Exception:  # noqa: BLE001 - no engine here: nothing to ask
        pytest.skip("no Docker engine on this machine")
    mine = resources.owner_token()
    # Under xdist this module may run in the worker whose session fixtures own a cluster (the
    # integration tests' shared ensemble, made before this module started): only what this
    # module's bad inputs could have made counts.
    made = [
        c
        for c in containers
        if c["Labels"].get(resources.OWNER_LABEL) == mine and c["Created"] >= MODULE_STARTED[0]
    ]
    assert made == []
