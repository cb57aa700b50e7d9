"""Makes the Compose project readable by Compose v1.29 as well as v2, and runnable without GPUs.

Used by deploy/compose-smoke.sh, in two steps around `docker compose config`:

    python3 deploy/compose_config.py portable IN OUT RESETS [--earlier COPY...]
        # before `config`, per file, in the order of the `-f` options
    python3 deploy/compose_config.py finish RESOLVED OUT --resets RESETS... [--no-gpus]
        [--image SERVICE=IMAGE ...] [--local-volume NAME[=EXISTING] ...]

`portable` writes a copy of a Compose file without what only v2 understands: the
top-level `name` (the smoke test names its project with `--project-name`) and keys tagged
`!reset`, whose paths it records in RESETS (JSON) so that `finish` removes them from the
resolved configuration, which is what `!reset` means; a secret taken from an environment
variable becomes a file secret beside OUT. With `--earlier` (the portable copies of the
files before this one) the `!reset` keys also leave those copies, so that Compose v1 does
not refuse the merge before `finish` runs (`network_mode: host` beside the `networks` an
earlier file gave). `finish` applies those removals
and, with `--no-gpus`, drops every NVIDIA device reservation and `runtime: nvidia` (a
machine without the NVIDIA runtime refuses to start such a container); `--image` swaps a
service's image (stand-in images on a machine without a registry); `--drop-ulimit` removes
a ulimit that the engine may not raise (memlock inside a container without
CAP_SYS_RESOURCE); `--local-volume` makes a volume a plain local one on this machine (the
cluster's NFS share, for deploy/compose-cluster-smoke.sh), or with `=EXISTING` the
existing volume of that name (another project's, so that several projects share it).
Needs PyYAML.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml


class _Reset:
    """The value of a key tagged `!reset`: the key is removed from the merged result."""


class _Loader(yaml.SafeLoader):
    pass


def _reset(loader: yaml.SafeLoader, node: yaml.Node) -> _Reset:
    return _Reset()


def _override(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    # `!override` replaces instead of merging; v1 merges. The value is what counts here,
    # and no file of this project uses it.
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_Loader.add_constructor("!reset", _reset)
_Loader.add_constructor("!override", _override)


def load(path: Path) -> dict[str, Any]:
    with path.open() as fh:
        return yaml.load(fh, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def dump(data: dict[str, Any], path: Path) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))


def take_resets(node: Any, path: tuple[str, ...] = ()) -> list[list[str]]:
    """Removes the `!reset` keys from `node` in place; returns their paths."""
    found: list[list[str]] = []
    if isinstance(node, dict):
        for key in list(node):
            if isinstance(node[key], _Reset):
                del node[key]
                found.append([*path, str(key)])
            else:
                found += take_resets(node[key], (*path, str(key)))
    return found


def portable(
    data: dict[str, Any], *, secrets_dir: Path | None = None
) -> tuple[dict[str, Any], list[list[str]]]:
    data = dict(data)
    data.pop("name", None)
    resets = take_resets(data)
    if secrets_dir is not None:
        secrets_from_files(data, folder=secrets_dir)
    return data, resets


def reset_in(data: dict[str, Any], resets: list[list[str]]) -> list[str]:
    """Removes the keys a later file resets from an earlier file's copy; returns them."""
    removed = []
    for path in resets:
        node: Any = data
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            removed.append(".".join(path))
    return removed


def secrets_from_files(data: dict[str, Any], *, folder: Path) -> None:
    """A secret read from an environment variable (`environment:`, Compose v2 only)
    becomes a file secret holding that variable's value, written 0600 into `folder`
    (the smoke test's own working folder), which Compose v1 understands."""
    for name, secret in (data.get("secrets") or {}).items():
        variable = secret.get("environment") if isinstance(secret, dict) else None
        if variable is None:
            continue
        path = folder / f"secret-{name}"
        path.touch(mode=0o600)
        path.write_text(os.environ.get(variable, ""))
        data["secrets"][name] = {"file": str(path.resolve())}


def remove_path(data: dict[str, Any], path: list[str]) -> None:
    node: Any = data
    for key in path[:-1]:
        if not isinstance(node, dict) or key not in node:
            return
        node = node[key]
    if isinstance(node, dict):
        node.pop(path[-1], None)


def _prune_empty(node: dict[str, Any], keys: list[str]) -> None:
    """Removes node[keys...] parents left empty, innermost first."""
    chain = [node]
    for key in keys:
        child = chain[-1].get(key)
        if not isinstance(child, dict):
            return
        chain.append(child)
    for parent, key in zip(reversed(chain[:-1]), reversed(keys), strict=True):
        if parent[key] == {}:
            del parent[key]


def without_gpus(data: dict[str, Any]) -> list[str]:
    """Drops NVIDIA device reservations and the NVIDIA runtime; returns what it dropped."""
    dropped = []
    for name, service in (data.get("services") or {}).items():
        if service.get("runtime") == "nvidia":
            del service["runtime"]
            dropped.append(f"{name}: runtime nvidia")
        reservations = (service.get("deploy") or {}).get("resources", {}).get("reservations", {})
        devices = reservations.get("devices") or []
        kept = [
            d
            for d in devices
            if d.get("driver") != "nvidia" and "gpu" not in d.get("capabilities", [])
        ]
        if len(kept) != len(devices):
            dropped.append(f"{name}: {len(devices) - len(kept)} GPU device reservation(s)")
            if kept:
                reservations["devices"] = kept
            else:
                reservations.pop("devices", None)
                _prune_empty(service, ["deploy", "resources", "reservations"])
    return dropped


def local_volume(data: dict[str, Any], name: str, *, existing: str | None) -> str:
    """Volume `name` as a plain local volume, or the existing volume `existing`."""
    volumes = data.get("volumes") or {}
    if name not in volumes:
        raise SystemExit(f"compose_config: no volume {name!r} to make local")
    if existing:
        volumes[name] = {"external": True, "name": existing}
        return f"volume {name}: the existing volume {existing}"
    volumes[name] = {k: v for k, v in (volumes[name] or {}).items() if k in ("name", "labels")}
    return f"volume {name}: local"


def finish(
    data: dict[str, Any],
    *,
    resets: list[list[str]],
    no_gpus: bool,
    images: dict[str, str],
    drop_ulimits: tuple[str, ...] = (),
    local_volumes: dict[str, str | None] | None = None,
) -> list[str]:
    notes = []
    for path in resets:
        remove_path(data, path)
        notes.append(f"reset {'.'.join(path)}")
    if no_gpus:
        notes += without_gpus(data)
    for service, image in images.items():
        if service not in data.get("services", {}):
            raise SystemExit(f"compose_config: no service {service!r} to give image {image!r}")
        data["services"][service]["image"] = image
        notes.append(f"{service}: image {image}")
    for name, service in data.get("services", {}).items():
        ulimits = service.get("ulimits") or {}
        for ulimit in drop_ulimits:
            if ulimits.pop(ulimit, None) is not None:
                notes.append(f"{name}: ulimit {ulimit} left to the engine")
        if "ulimits" in service and not ulimits:
            del service["ulimits"]
    for name, existing in (local_volumes or {}).items():
        notes.append(local_volume(data, name, existing=existing))
    return notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("portable", help="a copy without v2-only syntax")
    one.add_argument("source", type=Path)
    one.add_argument("out", type=Path)
    one.add_argument("resets", type=Path, help="where to write the paths of `!reset` keys")
    one.add_argument(
        "--earlier",
        type=Path,
        nargs="*",
        default=[],
        help="portable copies of the files before this one: its `!reset` keys leave them too",
    )
    two = commands.add_parser("finish", help="rewrite the resolved configuration")
    two.add_argument("resolved", type=Path)
    two.add_argument("out", type=Path)
    two.add_argument("--resets", type=Path, nargs="*", default=[])
    two.add_argument("--no-gpus", action="store_true")
    two.add_argument("--image", action="append", default=[], metavar="SERVICE=IMAGE")
    two.add_argument("--drop-ulimit", action="append", default=[], metavar="NAME")
    two.add_argument("--local-volume", action="append", default=[], metavar="NAME[=EXISTING]")
    args = parser.parse_args(argv)

    if args.command == "portable":
        data, resets = portable(load(args.source), secrets_dir=args.out.parent)
        dump(data, args.out)
        args.resets.write_text(json.dumps(resets))
        for earlier in args.earlier:
            copy = load(earlier)
            for key in reset_in(copy, resets):
                print(f"compose_config: {earlier.name}: reset {key}", file=sys.stderr)
            dump(copy, earlier)
        return 0

    resets = [path for file in args.resets for path in json.loads(file.read_text())]
    images = dict(item.split("=", 1) for item in args.image)
    local_volumes = {
        name: existing or None
        for name, _, existing in (item.partition("=") for item in args.local_volume)
    }
    data = load(args.resolved)
    notes = finish(
        data,
        resets=resets,
        no_gpus=args.no_gpus,
        images=images,
        drop_ulimits=tuple(args.drop_ulimit),
        local_volumes=local_volumes,
    )
    for note in notes:
        print(f"compose_config: {note}", file=sys.stderr)
    dump(data, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
