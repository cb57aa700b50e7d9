"""Readers for the deployment files that tests/deploy checks: Compose (with its `!reset`
tag and override merge), the metrics contract, and the metric names a PromQL expression
uses."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


class Reset:
    """Compose's `!reset`: in an override, drop the base file's value."""

    def __repr__(self) -> str:
        return "Reset()"


class _ComposeLoader(yaml.SafeLoader):
    pass


_ComposeLoader.add_constructor("!reset", lambda loader, node: Reset())


def _override(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_ComposeLoader.add_constructor("!override", _override)


def load_yaml(*, name: str) -> Any:
    return yaml.load((ROOT / name).read_text(), Loader=_ComposeLoader)  # noqa: S506


def compose_merge(*, base: Any, override: Any) -> Any:
    """Compose's merge of an override file, as far as these files use it: mappings merge
    key by key, anything else is replaced, `!reset` removes the key."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            if isinstance(value, Reset):
                merged.pop(key, None)
            elif key in merged:
                merged[key] = compose_merge(base=merged[key], override=value)
            else:
                merged[key] = value
        return merged
    return override


def compose(*, simulated: bool = False) -> dict[str, Any]:
    base = load_yaml(name="docker-compose.yml")
    if not simulated:
        return base
    return compose_merge(base=base, override=load_yaml(name="docker-compose.simulated.yml"))


INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}")


def interpolate_defaults(value: str) -> str:
    """`${VAR:-default}` becomes its default, `${VAR:?err}` and `${VAR}` a marker."""

    def one(match: re.Match[str]) -> str:
        operator, default = match.group(2), match.group(3)
        if operator in {":-", "-"}:
            return default
        return f"<{match.group(1)}>"

    return INTERPOLATION.sub(one, value)


def metrics_contract() -> dict[str, dict[str, Any]]:
    """Every metric name in the contract, with its type and labels."""
    contract = yaml.safe_load((ROOT / "deploy" / "metrics-contract.yml").read_text())
    return {name: spec for metrics in contract.values() for name, spec in metrics.items()}


# Words of PromQL that are not metric names.
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "Inf", "NaN"}
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")


def promql_metric_names(expr: str) -> set[str]:
    """The series names an expression selects, with histogram suffixes kept."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values may hold anything
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges and subqueries
    text = _GROUPING.sub("", text)  # label lists
    text = re.sub(r"\$\w+", "", text)  # Grafana variables
    names = set()
    for match in re.finditer(r"(?<![\w.])([A-Za-z_:][A-Za-z0-9_:]*)\s*(\()?", text):
        word, is_call = match.group(1), match.group(2)
        if not is_call and word not in _KEYWORDS:
            names.add(word)
    return names


def contract_name(*, series: str, contract: dict[str, dict[str, Any]]) -> str | None:
    """The contract metric a series name belongs to (`x_bucket` -> histogram `x`)."""
    if series in contract:
        return series
    for suffix in ("_bucket", "_sum", "_count"):
        base = series.removesuffix(suffix)
        if base != series and contract.get(base, {}).get("type") == "histogram":
            return base
    return None


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    slug = heading.strip().lower()
    slug = re.sub(r"[^\w\- ]", "", slug)
    return slug.replace(" ", "-")


def markdown_anchors(*, name: str) -> set[str]:
    text = re.sub(r"^```.*?^```", "", (ROOT / name).read_text(), flags=re.MULTILINE | re.DOTALL)
    return {github_anchor(h) for h in re.findall(r"^#{1,6}\s+(.+)$", text, flags=re.MULTILINE)}
