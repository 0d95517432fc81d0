"""`make build`'s size check (infra/package_sizes.py) on a built layout of SAM's shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.package_sizes import main

BUILT = """Resources:
  CoreLayer:
    Type: AWS::Serverless::LayerVersion
    Properties:
      ContentUri: CoreLayer
  ApiFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: ApiFunction
      Layers:
        - !Ref CoreLayer
  McpFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: McpFunction
"""


def _build(root: Path, layer: int, api: int, mcp: int) -> Path:
    (root / "template.yaml").write_text(BUILT)
    for folder, size in (("CoreLayer", layer), ("ApiFunction", api), ("McpFunction", mcp)):
        (root / folder / "pkg").mkdir(parents=True)
        (root / folder / "pkg" / "blob.bin").write_bytes(b"x" * size)
    return root


def test_a_function_whose_layers_take_it_past_the_limit_fails_the_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = _build(tmp_path, layer=700, api=400, mcp=900)
    # The API function alone is 400 bytes; with its layer, 1,100: over a 1,000-byte limit.
    assert main(["--build", str(build), "--limit-bytes", "1000"]) == 1
    out = capsys.readouterr()
    assert '"function": "ApiFunction"' in out.out
    assert '"fits": false' in out.out
    assert "1 function(s) over" in out.err
    assert main(["--build", str(build), "--limit-bytes", "1100"]) == 0


def test_no_build_is_said_not_passed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--build", str(tmp_path)]) == 2
    assert "run `sam build` first" in capsys.readouterr().err
