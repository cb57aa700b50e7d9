"""The parity rule: boxes matched by class and IoU, confidences within the tolerance."""

from __future__ import annotations

from gpu_service.contract import PARITY_CONF_TOLERANCE
from gpu_service.workloads.export.parity import compare

BOX = (0, 0.8, 10.0, 10.0, 50.0, 50.0)


def test_identical_boxes_pass_with_everything_matched():
    result = compare([[BOX]], [[BOX]])

    assert result["passed"] is True
    assert result["matched_fraction"] == 1.0
    assert result["max_conf_diff"] == 0.0
    assert (result["boxes_reference"], result["boxes_export"]) == (1, 1)


def test_a_confidence_moved_beyond_the_tolerance_fails():
    moved = (0, 0.8 - PARITY_CONF_TOLERANCE - 0.01, 10.0, 10.0, 50.0, 50.0)

    result = compare([[BOX]], [[moved]])

    assert result["passed"] is False
    assert result["matched_fraction"] == 1.0
    assert result["max_conf_diff"] > PARITY_CONF_TOLERANCE


def test_another_class_or_a_shifted_box_is_not_a_match():
    other_class = (1, *BOX[1:])
    shifted = (0, 0.8, 14.0, 14.0, 54.0, 54.0)  # IoU about 0.68

    assert compare([[BOX]], [[other_class]])["matched_fraction"] == 0.0
    assert compare([[BOX]], [[shifted]])["passed"] is False


def test_a_box_that_slipped_just_under_the_threshold_still_matches():
    slipped = (0, 0.24, 10.0, 10.0, 50.0, 50.0)
    at_threshold = (0, 0.26, 10.0, 10.0, 50.0, 50.0)

    result = compare([[at_threshold]], [[slipped]])

    assert result["passed"] is True
    assert result["boxes_export"] == 0


def test_a_missing_box_lowers_the_matched_fraction():
    second = (0, 0.9, 100.0, 100.0, 140.0, 140.0)

    result = compare([[BOX, second]], [[BOX]])

    assert result["matched_fraction"] == round(2 / 3, 4)
    assert result["passed"] is False


def test_no_boxes_on_either_side_is_parity():
    assert compare([[], []], [[], []])["passed"] is True


def test_among_equal_boxes_the_closest_confidence_is_the_match():
    faint = (0, 0.1, 10.0, 10.0, 50.0, 50.0)

    result = compare([[BOX, faint]], [[faint, BOX]], conf=0.0)

    assert result["max_conf_diff"] == 0.0
    assert result["matched_fraction"] == 1.0
