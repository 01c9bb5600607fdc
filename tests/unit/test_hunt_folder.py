"""`zkjepsen analyze <hunt folder>` (run/hunt_folder.py, cli/hunt.py): a hunt's folder, whole or
cut by an interrupt, is summarised from its hunt.jsonl and finding.json with the hunt's exit
code; one with no run's line is one sentence, 254."""

from __future__ import annotations

import json

import pytest

from zkjepsen.cli import main
from zkjepsen.run.hunt_folder import FINDING_JSON, HuntFolder, is_hunt_folder


def line(i, reached="landed", valid=True, **kw):
    return {
        "run": i,
        "choice": {"moment": "on-acquire", "fault": "pause-client", "magnitude": "1.5x"},
        "reached": reached,
        "words": f"words {i}",
        "valid": valid,
        "folder": f"/nowhere/run{i}",
        "elapsed_s": 30.0 * (i + 1),
        **kw,
    }


def hunt_folder(tmp_path, lines, tail="", finding=None):
    (tmp_path / "hunt.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + tail)
    if finding is not None:
        (tmp_path / FINDING_JSON).write_text(json.dumps(finding))
    return tmp_path


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    return e.value.code, capsys.readouterr().err


def test_a_hunt_cut_by_an_interrupt_is_read_up_to_its_last_whole_line(tmp_path):
    f = hunt_folder(tmp_path, [line(0), line(1, valid="unknown")], tail='{"run": 2, "cho')
    h = HuntFolder.load(f)
    assert [x["run"] for x in h.lines] == [0, 1] and h.unreadable == 1
    assert h.verdict() is True and h.found() is None
    text = "\n".join(h.summary())
    assert "no violation in 2 runs / 1.0 min, 1 (moment, fault) pairs tried" in text
    assert "1 line(s) of hunt.jsonl unreadable" in text and "/nowhere/run1" in text


def test_a_hunt_that_found_something_says_what_and_what_it_left(tmp_path):
    finding = {
        "confirmed": {"hits": 2, "runs": 3},
        "shrunk": "1 faults [...]",
        "reproducer": "/h/test_reproduce_x.py",
        "entry": "/h/catalogue_entry.py",
    }
    f = hunt_folder(tmp_path, [line(0), line(1, "found", False)], finding=finding)
    h = HuntFolder.load(f)
    assert h.verdict() is False
    text = "\n".join(h.summary())
    assert "found by run 1: words 1" in text and "confirmed 2 of 3" in text
    assert "reproducer: /h/test_reproduce_x.py" in text


def test_analyze_of_a_hunt_folder_summarises_it_with_the_hunts_exit_code(tmp_path, capsys):
    f = hunt_folder(tmp_path, [line(0, valid="unknown"), line(1, "found", False)])
    assert is_hunt_folder(f)
    code, err = run_cli(["analyze", str(f)], capsys)
    assert code == 1 and "Traceback" not in err
    assert "a violation in 2 runs" in err and "found by run 1" in err
    g = tmp_path / "g"
    g.mkdir()
    hunt_folder(g, [line(0, "missed", "unknown")])
    assert run_cli(["analyze", str(g)], capsys)[0] == 2


@pytest.mark.parametrize("text", ["", "not json\n", '{"no": "run"}\n'])
def test_a_hunt_folder_with_no_runs_line_is_one_sentence(text, tmp_path, capsys):
    (tmp_path / "hunt.jsonl").write_text(text)
    code, err = run_cli(["analyze", str(tmp_path)], capsys)
    assert code == 254 and len(err.strip().splitlines()) == 1, err
    assert "no run's line" in err
