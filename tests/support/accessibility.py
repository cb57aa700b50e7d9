"""Accessibility checks for the browser tests: axe-core (vendored, pinned: see
tests/support/vendor/axe-core/PIN.json) run in the page, and what the keyboard and the
screen reader get that axe cannot see: where the focus is, whether it shows, and what
reached a live region.

A page fails on any critical or serious axe violation. Moderate and minor ones are kept,
with every page's name, in test-artifacts/accessibility/; docs/accessibility.md says why
the ones that remain are accepted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

AXE_DIR = Path(__file__).resolve().parent / "vendor" / "axe-core"
AXE_JS = AXE_DIR / "axe.min.js"
BLOCKING = ("critical", "serious")

# Injected through the DevTools protocol (page.evaluate), not a <script> tag, so a
# Content-Security-Policy on the page cannot keep it out.
_RUN = """async () => {
  const result = await window.axe.run(document, { resultTypes: ["violations"] });
  return result.violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary })),
  }));
}"""

# Records, from the end of every page's parsing, each text that lands in a live
# region (aria-live polite/assertive, role status/alert/log), with the page it was on.
# sessionStorage keeps the record across the reload a finished job's page does.
LIVE_RECORDER = """(() => {
  const KEY = "carril-test-live";
  const live = (node) => {
    for (let el = node; el && el.nodeType === 1; el = el.parentElement) {
      const mode = el.getAttribute("aria-live");
      if (mode === "off") return null;
      const role = el.getAttribute("role");
      if (mode === "polite" || mode === "assertive" || role === "status" || role === "alert") {
        return el;
      }
    }
    return null;
  };
  const record = (region) => {
    const text = (region.textContent || "").trim();
    if (!text) return;
    let seen = [];
    try { seen = JSON.parse(sessionStorage.getItem(KEY) || "[]"); } catch (e) { seen = []; }
    const last = seen[seen.length - 1];
    const id = region.id || "";
    if (last && last.text === text && last.id === id && last.path === location.pathname) return;
    seen.push({ text: text, path: location.pathname, id: id });
    try { sessionStorage.setItem(KEY, JSON.stringify(seen)); } catch (e) { /* full */ }
  };
  const start = () => {
    new MutationObserver((mutations) => {
      const regions = new Set();
      for (const m of mutations) {
        if (m.type === "attributes") {
          // A progress bar's spoken value, read when the bar is reached, not announced.
          const text = m.target.getAttribute("aria-valuetext") || "";
          if (text) record({ textContent: text, id: m.target.id });
          continue;
        }
        const target = m.target.nodeType === 1 ? m.target : m.target.parentElement;
        const region = live(target);
        if (region) regions.add(region);
      }
      regions.forEach(record);
    }).observe(document.documentElement, {
      subtree: true,
      childList: true,
      characterData: true,
      attributeFilter: ["aria-valuetext"],
    });
  };
  // From the end of parsing: what the server rendered into a region is not announced by
  // screen readers, so it does not count; only what scripts change afterwards does.
  document.addEventListener("DOMContentLoaded", start);
})();"""


def announcements(page: Any) -> list[dict[str, str]]:
    """What reached a live region in this tab so far (needs LIVE_RECORDER installed)."""
    raw = page.evaluate("() => sessionStorage.getItem('carril-test-live') || '[]'")
    return json.loads(raw)


@dataclass
class AxeAudit:
    """axe-core over each page a test visits; the minor findings kept for the record in
    <artifacts>/axe-<suite>.json."""

    artifacts: Path
    suite: str
    pages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def check(self, page: Any, name: str) -> list[dict[str, Any]]:
        """Run axe on the page as it is now; fail on critical or serious violations."""
        if not page.evaluate("() => typeof window.axe === 'object'"):
            page.evaluate(AXE_JS.read_text(encoding="utf-8") + "\n;true")
        violations = page.evaluate(_RUN)
        self.pages[name] = violations
        self._write()
        blocking = [v for v in violations if v["impact"] in BLOCKING]
        assert not blocking, f"axe on {name} ({page.url}):\n" + describe(blocking)
        return violations

    def _write(self) -> None:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        (self.artifacts / f"axe-{self.suite}.json").write_text(json.dumps(self.pages, indent=2))


def describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for v in violations:
        lines.append(f"- {v['impact']} {v['id']}: {v['help']}")
        for node in v["nodes"][:5]:
            summary = (node.get("summary") or "").replace("\n", " ")
            lines.append(f"    {node['target']}: {summary[:300]}")
    return "\n".join(lines)


# ---- the keyboard ----

_FOCUS = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  const box = el.getBoundingClientRect();
  return {
    tag: el.tagName.toLowerCase(),
    id: el.id,
    testid: el.getAttribute("data-testid") || "",
    text: (el.innerText || el.value || "").trim().slice(0, 80),
    label: el.getAttribute("aria-label")
      || (el.labels && el.labels[0] ? el.labels[0].innerText : ""),
    href: el.getAttribute("href") || "",
    focusVisible: el.matches(":focus-visible"),
    outlineStyle: style.outlineStyle,
    outlineWidth: parseFloat(style.outlineWidth) || 0,
    outlineColor: style.outlineColor,
    visible: box.width > 0 && box.height > 0,
  };
}"""


def focused(page: Any) -> dict[str, Any] | None:
    return page.evaluate(_FOCUS)


def _rgb(css: str) -> tuple[float, float, float] | None:
    match = re.match(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)", css)
    return tuple(float(g) for g in match.groups()) if match else None  # type: ignore[return-value]


def luminance(rgb: tuple[float, float, float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


TOPBAR = (17, 24, 39)  # .topbar's background in carril.css
WHITE = (255, 255, 255)


def assert_focus_visible(page: Any, state: dict[str, Any] | None = None) -> None:
    """The focused element shows a focus ring: an outline at least 2px wide whose colour
    has 3:1 contrast with what it sits on (WCAG 1.4.11): the dark top bar there, white
    (the cards, and near enough the page) everywhere else."""
    state = state or focused(page)
    assert state is not None, "nothing has the keyboard focus"
    assert state["visible"], f"the focused element is not on screen: {state}"
    assert state["focusVisible"], f"the focus is not :focus-visible: {state}"
    assert state["outlineStyle"] != "none", state
    assert state["outlineWidth"] >= 2, state
    colour = _rgb(state["outlineColor"])
    assert colour is not None, state
    in_topbar = page.evaluate("() => !!document.activeElement.closest('.topbar')")
    background = TOPBAR if in_topbar else WHITE
    assert contrast(colour, background) >= 3.0, f"focus ring below 3:1: {state}"


def tab_to(page: Any, predicate: Any, *, limit: int = 60, backwards: bool = False) -> dict:
    """Press Tab (or Shift+Tab) until `predicate(focused)` holds; check the focus ring at
    every stop on the way, since each is a place a keyboard user passes through."""
    key = "Shift+Tab" if backwards else "Tab"
    state = None
    for _ in range(limit):
        page.keyboard.press(key)
        state = focused(page)
        if state is None:
            continue
        assert_focus_visible(page, state)
        if predicate(state):
            return state
    raise AssertionError(f"{limit} presses of {key} never reached the element; at {state}")
