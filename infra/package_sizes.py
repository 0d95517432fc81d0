"""Fail the build when a function, with its layers, passes Lambda's size limit unzipped.

Reads what `sam build` wrote (.aws-sam/build/template.yaml and the folders it names): each
function's code folder plus the content of every layer it uses, as Lambda unpacks them
(250 MB together, https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
Prints one JSON line per function, largest first.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from infra.cfn_yaml import load_template

LIMIT_BYTES = 250 * 1024 * 1024
BUILD = Path(".aws-sam/build")


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def unzipped_sizes(build: Path) -> dict[str, int]:
    """Bytes each function unpacks to: its code and its layers' content."""
    resources: dict[str, Any] = load_template(build / "template.yaml")["Resources"]
    layers = {
        name: folder_bytes(build / str(r["Properties"]["ContentUri"]))
        for name, r in resources.items()
        if r["Type"] == "AWS::Serverless::LayerVersion"
    }
    sizes = {}
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        props = resource["Properties"]
        used = [layer["Ref"] for layer in props.get("Layers", []) if isinstance(layer, dict)]
        sizes[name] = folder_bytes(build / str(props["CodeUri"])) + sum(layers[u] for u in used)
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=Path, default=BUILD)
    parser.add_argument("--limit-bytes", type=int, default=LIMIT_BYTES)
    args = parser.parse_args(argv)
    if not (args.build / "template.yaml").exists():
        print(f"no build in {args.build}: run `sam build` first", file=sys.stderr)
        return 2
    over = 0
    for name, size in sorted(unzipped_sizes(args.build).items(), key=lambda kv: -kv[1]):
        fits = size <= args.limit_bytes
        over += not fits
        row = {"function": name, "unzippedMB": round(size / 2**20, 1), "fits": fits}
        print(json.dumps(row))
    if over:
        print(
            f"{over} function(s) over {args.limit_bytes / 2**20:.0f} MB unzipped", file=sys.stderr
        )
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
