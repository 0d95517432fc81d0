"""Read template.yaml as plain data: CloudFormation short tags become their long forms.

`!Ref X` -> {"Ref": "X"}, `!GetAtt A.B` -> {"Fn::GetAtt": ["A", "B"]}, `!Sub s` ->
{"Fn::Sub": s}, `!If [...]` -> {"Fn::If": [...]}, `!Condition C` -> {"Condition": "C"}, ...
The tests and the embedded AWS (infra/local) read the table, key and state machine from the
same template that is deployed, so the two cannot drift.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

# Short tags whose long form is "Fn::<Name>"; Ref and Condition have no "Fn::" prefix.
_FN_TAGS = (
    "And",
    "Base64",
    "Cidr",
    "Equals",
    "FindInMap",
    "GetAZs",
    "GetAtt",
    "If",
    "ImportValue",
    "Join",
    "Length",
    "Not",
    "Or",
    "Select",
    "Split",
    "Sub",
    "ToJsonString",
    "Transform",
)


class CfnLoader(yaml.SafeLoader):
    """A SafeLoader that knows CloudFormation's short tags and leaves dates as strings."""


# CloudFormation reads `Version: 2012-10-17` as a string; YAML 1.1 would make it a date.
CfnLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    raise yaml.constructor.ConstructorError(
        None, None, f"unexpected node {node!r}", node.start_mark
    )


def _ref(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    return {"Ref": _construct(loader, node)}


def _condition(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    return {"Condition": _construct(loader, node)}


def _get_att(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    value = _construct(loader, node)
    if isinstance(value, str):  # "Resource.Attribute.With.Dots" -> ["Resource", "Attribute..."]
        resource, _, attribute = value.partition(".")
        value = [resource, attribute]
    return {"Fn::GetAtt": value}


def _fn(name: str) -> Any:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        return {f"Fn::{name}": _construct(loader, node)}

    return construct


for _name in _FN_TAGS:
    CfnLoader.add_constructor(f"!{_name}", _get_att if _name == "GetAtt" else _fn(_name))
CfnLoader.add_constructor("!Ref", _ref)
CfnLoader.add_constructor("!Condition", _condition)


def loads(text: str) -> dict[str, Any]:
    """Parse a CloudFormation/SAM YAML document."""
    data = yaml.load(text, Loader=CfnLoader)  # noqa: S506 - CfnLoader is a SafeLoader
    if not isinstance(data, dict):
        raise ValueError("a CloudFormation template is a mapping")
    return data


def load_template(path: str | Path) -> dict[str, Any]:
    """Load a CloudFormation/SAM template file, short tags as long-form dicts."""
    return loads(Path(path).read_text(encoding="utf-8"))


_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.]+)\}")


def render_definition(path: str | Path, substitutions: Mapping[str, str]) -> str:
    """A state machine definition file with its DefinitionSubstitutions (`${Name}`) applied.

    Every placeholder must have a value, as CloudFormation requires.
    """
    text = Path(path).read_text(encoding="utf-8")
    missing = sorted({m for m in _PLACEHOLDER.findall(text) if m not in substitutions})
    if missing:
        raise KeyError(f"no substitution for {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda m: substitutions[m.group(1)], text)
