"""Pieces of the command that need no server: following a log, the gate's rule, seeds."""

from __future__ import annotations

import pytest
import typer

from carril_client.cli.app import seeds_parse
from carril_client.cli.ci import Numbers, gate_passes
from carril_client.cli.jobs import _after


def test_following_a_log_prints_only_the_lines_after_the_last_ones_seen():
    assert _after(["a", "b", "c"], ["b", "c", "d", "e"]) == ["d", "e"]
    assert _after(["a", "b"], ["a", "b"]) == []
    assert _after([], ["x"]) == ["x"]
    # Repeated lines: the last place the seen end appears counts.
    assert _after(["x", "y"], ["x", "y", "z", "x", "y", "w"]) == ["w"]


def numbers(value):
    return Numbers(version="v", source="s", metrics={"mAP50-95": value})


@pytest.mark.parametrize(
    ("candidate", "serving", "margin", "passes"),
    [
        (0.5, 0.48, 0.01, True),
        (0.5, 0.495, 0.01, False),
        (0.1, None, 0.5, True),
        (0.0, None, 0, False),
    ],
)
def test_the_gate_wants_the_margin_over_serving_or_anything_learned_when_nothing_serves(
    candidate, serving, margin, passes
):
    theirs = numbers(serving) if serving is not None else None
    assert gate_passes("mAP50-95", numbers(candidate), theirs, margin) is passes


def test_seeds_are_integers_separated_by_commas():
    assert seeds_parse("1, 2,3") == [1, 2, 3]
    with pytest.raises(typer.BadParameter):
        seeds_parse("one")
