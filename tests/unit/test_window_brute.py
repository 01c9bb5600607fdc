"""benchmarks/window_brute.py's reduced search gives the plain search's answer (issue 54): the
once/twice histories' 20x1k windows are out of the plain search's reach, so their verdicts
rest on the reductions; here both run on small random windows of a register with repeated
values, crashed and optional ops, failed cas and free ops, valid and not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import window_brute as wb  # noqa: E402

B = 12  # the window's end: an op that returned by then is a must
VALUES = [0, 1, 2]


@st.composite
def an_op(draw: st.DrawFn) -> tuple[Any, ...]:
    f = draw(st.sampled_from(["read", "write", "cas"]))
    start = draw(st.integers(0, 10))
    status = draw(
        st.sampled_from(["ok", "ok", "fail", "info"] if f == "cas" else ["ok", "ok", "info"])
    )
    if f == "read":
        status = "ok"  # the window leaves crashed reads out
    arg = (
        None
        if f == "read"
        else draw(st.sampled_from(VALUES))
        if f == "write"
        else [draw(st.sampled_from(VALUES)), draw(st.sampled_from(VALUES))]
    )
    got = draw(st.sampled_from(VALUES)) if f == "read" else None
    end = None if status == "info" else start + draw(st.integers(0, 5))
    must = status != "info" and end is not None and end <= B
    return (f, arg, status, got, start, end if must else None, must)


FREE = st.sets(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(VALUES)),
        st.tuples(st.just("cas"), st.tuples(st.sampled_from(VALUES), st.sampled_from(VALUES))),
    ),
    max_size=2,
)


@settings(max_examples=600, deadline=None)
@given(st.lists(an_op(), min_size=1, max_size=8), FREE, st.sampled_from([[], [0], VALUES]))
def test_the_reduced_search_answers_as_every_order_does(ops: list, free: set, domain: list) -> None:
    """`domain`: the states the register may hold at the window's start, besides None."""
    assert wb._reduced(ops, free, domain) == wb._plain(ops, free, domain)


def test_an_optional_op_is_placed_by_its_earliest_call() -> None:
    """Two crashed `write 1`s, called at 0 and at 10, and a read of 1 that returned at 2: only
    the earlier write can explain it (the later one is called after the read returned)."""
    early = ("write", 1, "info", None, 0, None, False)
    late = ("write", 1, "info", None, 10, None, False)
    read = ("read", None, "ok", 1, 1, 2, True)
    for ops in ([early, late, read], [late, early, read]):
        assert wb._plain(ops, set(), [0]) and wb._reduced(ops, set(), [0])
        assert not wb._reduced([late, read], set(), [0])


def test_a_read_explained_once_but_not_twice() -> None:
    """The once/twice pattern by hand: a crashed write of 9, a read of 9, a completed write of
    0 after it; a second read of 9 after that is refuted, without it the window has an order."""
    crashed = ("write", 9, "info", None, 0, None, False)
    r1 = ("read", None, "ok", 9, 1, 2, True)
    j = ("write", 0, "ok", None, 3, 4, True)
    r2 = ("read", None, "ok", 9, 5, 6, True)
    for search in (wb._plain, wb._reduced):
        assert search([crashed, r1, j], set(), [0])
        assert not search([crashed, r1, j, r2], set(), [0])


def test_the_register_holds_at_the_window_start_only_what_was_written_before_it() -> None:
    """The window opens at the crashed `write 9`'s call: 9, which nothing called before it
    writes, is not a value the register may hold there (else it would explain the first read
    of 9, and the crashed write the second)."""
    cs = [  # (f, arg, status, got, start, end, process)
        ("write", 0, "ok", None, 0, 1, 0),
        ("write", 9, "info", None, 2, None, 1),
        ("read", None, "ok", 9, 3, 4, 2),
        ("write", 0, "ok", None, 5, 6, 0),
        ("read", None, "ok", 9, 7, 8, 3),
    ]
    for reduced in (False, True):
        assert wb.window(cs, 2, 2, [0, 1, 9], False, reduced)[0]  # up to the first read
        assert not wb.window(cs, 4, 2, [0, 1, 9], False, reduced)[0]  # up to the second
