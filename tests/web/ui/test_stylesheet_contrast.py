"""The stylesheet's colours meet WCAG contrast: every status badge's text on its own
background (4.5:1, text), and the focus ring against white and the top bar (3:1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.accessibility import TOPBAR, WHITE, contrast

CSS = Path(__file__).resolve().parents[3] / "web/ui/static/ui/css/carril.css"


def _hex(value: str) -> tuple[int, int, int]:
    value = value.lstrip("#")
    if len(value) == 3:
        value = "".join(c * 2 for c in value)
    return (int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16))


def _rules() -> dict[str, dict[str, str]]:
    """Selector -> declarations, with var(--x) resolved from :root."""
    text = re.sub(r"/\*.*?\*/", "", CSS.read_text(), flags=re.S)
    rules: dict[str, dict[str, str]] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", text):
        declarations = dict(
            (k.strip(), v.strip()) for k, v in re.findall(r"([\w-]+)\s*:\s*([^;]+);", body)
        )
        for selector in selectors.split(","):
            rules.setdefault(selector.strip(), {}).update(declarations)
    variables = rules[":root"]
    for declarations in rules.values():
        for key, value in declarations.items():
            declarations[key] = re.sub(r"var\((--[\w-]+)\)", lambda m: variables[m[1]], value)
    return rules


RULES = _rules()
BADGES = sorted(s for s in RULES if re.fullmatch(r"\.badge(-[a-z]+)?", s))


def test_the_stylesheet_has_the_badges_the_pages_use() -> None:
    for state in ("succeeded", "failed", "running", "cancelled", "candidate", "serving"):
        assert f".badge-{state}" in BADGES


@pytest.mark.parametrize("selector", BADGES)
def test_a_badge_s_text_has_4_5_to_1_on_its_background(selector: str) -> None:
    rule = {**RULES[".badge"], **RULES[selector]}
    ratio = contrast(_hex(rule["color"]), _hex(rule["background"]))
    assert ratio >= 4.5, f"{selector}: {ratio:.2f}:1"


def test_the_focus_ring_has_3_to_1_on_white_and_on_the_top_bar() -> None:
    root = RULES[":root"]
    assert contrast(_hex(root["--focus"]), WHITE) >= 3.0
    assert contrast(_hex(root["--focus"]), _hex(RULES[".topbar"]["background"])) >= 3.0
    assert contrast(_hex(root["--focus-on-dark"]), TOPBAR) >= 3.0
    assert RULES["input:focus"]["outline"].endswith(root["--focus"])


def test_links_have_4_5_to_1_on_every_banner() -> None:
    link = _hex(RULES["a"]["color"])
    for banner in (".banner-info", ".banner-ok", ".banner-warn", ".banner-bad"):
        assert contrast(link, _hex(RULES[banner]["background"])) >= 4.5, banner
