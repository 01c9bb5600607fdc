"""The verdict, spelled once (issue 49B): `checker.Verdict` knows its word, its stored form and
its exit status, and every place that shows a verdict (the console, JUnit, the site, the
pytest plugin, the stored-file check) reads it from there. Pure: no engine."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from zkjepsen import errors
from zkjepsen.checker import Result, Verdict, merge_valid
from zkjepsen.cli.display import verdict_word
from zkjepsen.report.junit import verdict_word as junit_word
from zkjepsen.run.stored_files import VERDICT
from zkjepsen.store.schema import Wrong

STORED = st.one_of(
    st.booleans(),
    st.just("unknown"),
    st.none(),
    st.integers(-2, 2),
    st.text(max_size=8),
    st.floats(allow_nan=False),
)


def test_each_verdict_has_its_word_its_stored_form_and_its_exit_status():
    assert [(v.word, v.valid, v.exit_code) for v in Verdict] == [
        ("VALID", True, errors.EXIT_VALID),
        ("INVALID", False, errors.EXIT_INVALID),
        ("UNKNOWN", "unknown", errors.EXIT_UNKNOWN),
    ]
    # results.json keeps what it always kept: true, false, "unknown".
    assert [json.dumps(v.valid) for v in Verdict] == ["true", "false", '"unknown"']
    for v in Verdict:
        assert Verdict.of(v.valid) is v
        assert Result(v.valid).to_json()["valid"] == v.valid  # a Result stores the same form


@given(STORED)
def test_anything_but_true_or_false_is_unknown_everywhere_it_is_shown(valid):
    verdict = Verdict.of(valid)
    if valid is True or valid is False:
        assert verdict.valid is valid
    else:
        assert verdict is Verdict.UNKNOWN  # 1 is not true, 0 is not false
    assert verdict_word(valid)[0] == junit_word(valid) == verdict.word


@given(STORED)
def test_the_stored_file_check_takes_exactly_the_stored_forms(valid):
    try:
        VERDICT.check(valid, "valid")
        taken = True
    except Wrong:
        taken = False
    stored_form = any(type(valid) is type(v.valid) and valid == v.valid for v in Verdict)
    assert taken == stored_form


@given(st.lists(st.sampled_from(list(Verdict))))
def test_merging_is_invalid_over_unknown_over_valid(verdicts):
    merged = Verdict.of(merge_valid([v.valid for v in verdicts]))
    if Verdict.INVALID in verdicts:
        assert merged is Verdict.INVALID
    elif Verdict.UNKNOWN in verdicts or not verdicts:
        assert merged is Verdict.UNKNOWN  # nothing judged is never valid
    else:
        assert merged is Verdict.VALID
