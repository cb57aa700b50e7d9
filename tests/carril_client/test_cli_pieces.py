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


def test_a_refusal_for_misplaced_labels_prints_the_files_and_the_expected_layout(capsys):
    from carril_client.cli.datasets import report_print
    from carril_client.cli.output import Output

    report = {
        "problems_total": 1,
        "problems": [
            {
                "code": "labels_misplaced",
                "message": "22 label files named like an image but not where...",
                "file": None,
                "line": None,
                "details": {
                    "files": ["annotations/train/a.txt", "annotations/train/b.txt"],
                    "files_total": 22,
                    "expected_layout": "dataset.zip\n└── labels/",
                },
            }
        ],
    }
    report_print(report, Output())
    err = capsys.readouterr().err
    assert "(archive): labels_misplaced: 22 label files" in err
    assert "      annotations/train/b.txt\n      ... and 20 more" in err
    assert "expected layout:\n      dataset.zip\n      └── labels/" in err


def test_a_dataset_is_printed_with_its_warnings(capsys):
    from carril_client.cli.datasets import dataset_print
    from carril_client.cli.output import Output

    dataset = {
        "id": "d1",
        "name": "shapes",
        "classes": ["a"],
        "splits": {"train": {"images": 4, "labels": 1, "instances": 1}},
        "report": {"warnings": [{"code": "mostly_background", "message": "3 of 4 train"}]},
    }
    dataset_print(dataset, Output())
    assert "warning: mostly_background: 3 of 4 train" in capsys.readouterr().out
