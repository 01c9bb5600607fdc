"""`zkjepsen check`: verdict line, exit status, HTML on failure, one sentence for bad input."""

from __future__ import annotations

import gc
import json

import pytest

from zkjepsen.cli import main

REGISTER_BAD = [
    {"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "write", "value": 1},
    {"index": 1, "time": 10, "process": 0, "type": "ok", "f": "write", "value": 1},
    {"index": 2, "time": 20, "process": 1, "type": "invoke", "f": "read"},
    {"index": 3, "time": 30, "process": 1, "type": "ok", "f": "read", "value": 2},
]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a default counterexample path must not land in the repo


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_valid_history_exits_0(tmp_path, capsys):
    h = write_jsonl(tmp_path / "h.jsonl", REGISTER_BAD[:2])
    code, out, _ = run(["check", str(h), "--model", "register"], capsys)
    assert code == 0 and out.strip().endswith(": valid")


def test_a_long_history_is_checked_with_the_collector_paused_and_on_again_after(
    tmp_path, capsys, monkeypatch
):
    """check_file pauses the cyclic collector for a long history's check (the process's);
    an in-process caller gets it back on, and the verdict is the same."""
    from zkjepsen.checker import linear as linearizability  # the API: check_file reads BIG there

    monkeypatch.setattr(linearizability, "BIG", 1)
    seen = []
    real = linearizability.Linearizable.check
    monkeypatch.setattr(
        linearizability.Linearizable,
        "check",
        lambda self, h: seen.append(gc.isenabled()) or real(self, h),
    )
    h = write_jsonl(tmp_path / "h.jsonl", REGISTER_BAD[:2])
    assert gc.isenabled()
    code, out, _ = run(["check", str(h), "--model", "register"], capsys)
    assert code == 0 and out.strip().endswith(": valid")
    assert seen == [False] and gc.isenabled()


def test_a_read_from_refutation_says_so(tmp_path, capsys):
    # 1 is written, then 3 (a crashed write a read saw), then a read of 1 after that read
    recs = [
        (0, 0, "invoke", "write", 1), (10, 0, "ok", "write", 1),
        (5, 2, "invoke", "write", 3),
        (12, 3, "invoke", "read", None), (14, 3, "ok", "read", 3),
        (20, 1, "invoke", "read", None), (30, 1, "ok", "read", 1),
    ]  # fmt: skip
    recs.sort()
    h = write_jsonl(
        tmp_path / "h.jsonl",
        [
            {"index": i, "time": t, "process": p, "type": typ, "f": f, "value": v}
            for i, (t, p, typ, f, v) in enumerate(recs)
        ],
    )
    code, out, _ = run(["check", str(h), "--model", "register"], capsys)
    assert code == 1
    assert "read 1 by process 1 cannot be placed" in out and "(read-from path)" in out


def test_default_html_path_is_next_to_the_history(tmp_path, capsys, monkeypatch):
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # checking a corpus must not litter the working directory
    h = write_jsonl(tmp_path / "h.jsonl", REGISTER_BAD)
    code, out, _ = run(["check", str(h), "--model", "register"], capsys)
    assert code == 1 and f"counterexample: {tmp_path / 'h.jsonl.counterexample.html'}" in out
    assert (tmp_path / "h.jsonl.counterexample.html").exists()
    assert list(elsewhere.iterdir()) == []


def test_invalid_history_exits_1_and_writes_html(tmp_path, capsys):
    h = write_jsonl(tmp_path / "h.jsonl", REGISTER_BAD)
    page = tmp_path / "cx.html"
    code, out, _ = run(["check", str(h), "--model", "register", "--html", str(page)], capsys)
    assert code == 1
    assert "NOT linearizable: read 2 by process 1 cannot be placed" in out
    assert page.read_text().startswith("<!doctype html>")
    assert not list(tmp_path.glob("*.tmp"))


def test_unknown_exits_2(tmp_path, capsys):
    recs = []
    for p in range(16):  # 16 concurrent crashed writes make the refutation exponential
        recs.append(  # (one value written twice: the read-from path would decide it at once)
            {"index": p, "time": p, "process": p, "type": "invoke", "f": "write", "value": p % 15}
        )
    recs += [
        {"index": 20, "time": 20, "process": 99, "type": "invoke", "f": "read"},
        {"index": 21, "time": 21, "process": 99, "type": "ok", "f": "read", "value": -1},
        {"index": 22, "time": 22, "process": 98, "type": "invoke", "f": "read"},
        {"index": 23, "time": 23, "process": 98, "type": "ok", "f": "read", "value": 3},
    ]
    h = write_jsonl(tmp_path / "h.jsonl", recs)
    code, out, _ = run(["check", str(h), "--model", "register", "--time-limit", "0.05"], capsys)
    assert code == 2 and "unknown: time limit" in out


def test_malformed_line_exits_254_with_one_sentence(tmp_path, capsys):
    h = tmp_path / "h.jsonl"
    h.write_text(json.dumps(REGISTER_BAD[0]) + '\n{"index": 1, oops\n')
    page = tmp_path / "cx.html"
    code, out, err = run(["check", str(h), "--model", "register", "--html", str(page)], capsys)
    assert code == 254
    assert err.startswith("zkjepsen: history line 2: not valid JSON") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not page.exists()


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--model", "nope"], "unknown model 'nope'"),
        (["--model", "register", "--initial", "{bad"], "--initial must be JSON"),
        (["--model", "register", "--format", "edn"], "line 1 (op 1): missing"),
    ],
)
def test_bad_arguments_exit_254(tmp_path, capsys, argv, msg):
    h = write_jsonl(tmp_path / "h.jsonl", REGISTER_BAD[:2])
    code, _, err = run(["check", str(h), *argv], capsys)
    assert code == 254 and msg in err


def test_other_checkers_and_json_output(tmp_path, capsys):
    recs = [
        {"index": 0, "time": 0, "process": 1, "type": "invoke", "f": "acquire", "key": "/l"},
        {
            "index": 1,
            "time": 1,
            "process": 1,
            "type": "ok",
            "f": "acquire",
            "key": "/l",
            "value": {"token": 1},
        },
        {"index": 2, "time": 2, "process": 2, "type": "invoke", "f": "acquire", "key": "/l"},
        {
            "index": 3,
            "time": 3,
            "process": 2,
            "type": "ok",
            "f": "acquire",
            "key": "/l",
            "value": {"token": 2},
        },
    ]
    h = write_jsonl(tmp_path / "h.jsonl", recs)
    code, out, err = run(["check", str(h), "--model", "lock", "--json"], capsys)
    assert code == 1 and "1 belief overlap" in err
    doc = json.loads(out)  # stdout is the one JSON document, the human lines are on stderr
    assert doc["valid"] is False and doc["belief_overlaps"][0]["clients"] == [1, 2]


def test_json_output_is_one_document_with_a_counterexample(tmp_path, capsys):
    h = write_jsonl(tmp_path / "h.jsonl", REGISTER_BAD)
    code, out, err = run(["check", str(h), "--model", "register", "--json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["valid"] is False and doc["violations"]
    assert doc["html"] == str(tmp_path / "h.jsonl.counterexample.html")
    assert "NOT linearizable" in err and "counterexample: " in err


@pytest.mark.parametrize(
    "model,rec",
    [
        ("multi-register", {"f": "txn", "value": [["read"]]}),
        ("counter", {"f": "add", "value": "one"}),
        ("jepsen-counter", {"f": "add", "value": "one"}),
        ("cas-register", {"f": "cas", "value": 3}),
    ],
)
def test_values_a_model_cannot_use_are_bad_input_not_a_crash(tmp_path, capsys, model, rec):
    recs = [
        {"index": 0, "time": 0, "process": 0, "type": "invoke", **rec},
        {"index": 1, "time": 1, "process": 0, "type": "ok", **rec},
    ]
    if model != "multi-register":  # a read to make the search combine the odd values
        recs += [
            {"index": 2, "time": 2, "process": 1, "type": "invoke", "f": "read"},
            {"index": 3, "time": 3, "process": 1, "type": "ok", "f": "read", "value": 1},
        ]
    h = write_jsonl(tmp_path / "h.jsonl", recs)
    code, _, err = run(["check", str(h), "--model", model], capsys)
    assert code == 254 and "internal error" not in err and len(err.strip().splitlines()) == 1
    assert any(w in err for w in ("does not fit", "cannot", "must be"))


def test_memory_limit_is_real_and_unknown(tmp_path):
    """A history too big for --memory-limit is `unknown` (exit 2), never a crash or a swap."""
    import subprocess
    import sys

    recs = []
    for k in range(60_000):
        recs += [
            {
                "index": 2 * k,
                "time": 2 * k,
                "process": k % 5,
                "type": "invoke",
                "f": "write",
                "value": k,
            },
            {
                "index": 2 * k + 1,
                "time": 2 * k + 1,
                "process": k % 5,
                "type": "ok",
                "f": "write",
                "value": k,
            },
        ]
    h = write_jsonl(tmp_path / "big.jsonl", recs)
    args = [
        sys.executable,
        "-m",
        "zkjepsen.cli",
        "check",
        str(h),
        "--model",
        "register",
        "--time-limit",
        "600",
    ]  # the verdict must come from memory, not the clock
    small = subprocess.run([*args, "--memory-limit", "20"], capture_output=True, text=True)
    assert small.returncode == 2, small.stdout + small.stderr
    assert "memory limit of 20 MiB" in small.stdout
    quiet = subprocess.run(
        [*args, "--memory-limit", "20", "--json"], capture_output=True, text=True
    )  # with --json, even this answer is one JSON document on stdout
    assert quiet.returncode == 2 and json.loads(quiet.stdout)["valid"] == "unknown"
    assert "memory limit of 20 MiB" in quiet.stderr
    h2 = write_jsonl(tmp_path / "small.jsonl", recs[:200])
    args[4] = str(h2)
    enough = subprocess.run([*args, "--memory-limit", "20"], capture_output=True, text=True)
    assert enough.returncode == 0, enough.stdout + enough.stderr


def test_the_help_speaks_of_every_service() -> None:
    """`zkjepsen --help` and `cluster --help` name the four services (issue 40)."""
    from click.testing import CliRunner

    from zkjepsen.cli.app import cli

    for args in (["--help"], ["cluster", "--help"]):
        out = " ".join(CliRunner().invoke(cli, args).output.split())
        for service in ("ZooKeeper", "etcd", "Redis", "PostgreSQL"):
            assert service in out, (args, service, out)


@pytest.mark.parametrize("fails", ["time", "memory"])
def test_json_output_stays_one_document_when_the_check_cannot_finish(
    tmp_path, capsys, monkeypatch, fails
):
    # The limits themselves are the machine's; what is asserted is what --json prints when
    # one is reached: stdout one document saying unknown, the sentence on stderr.
    import zkjepsen.cli.check as check_cli

    def out_of_it(*args, **kwargs):
        raise check_cli.OutOfTime if fails == "time" else MemoryError

    monkeypatch.setattr(check_cli, "check_file", out_of_it)
    h = write_jsonl(tmp_path / "h.jsonl", REGISTER_BAD)
    code, out, err = run(["check", str(h), "--model", "register", "--json"], capsys)
    doc = json.loads(out)
    assert code == 2 and doc["valid"] == "unknown" and fails in doc["reason"]
    assert f"{h}: unknown: " in err
