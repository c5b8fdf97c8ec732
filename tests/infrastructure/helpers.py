"""Reading IAM statements out of synthesized templates; the example configuration as tests use it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cdk.config import EXAMPLE_CONFIG, Settings, load_config_file


def example_context() -> dict[str, Any]:
    """The keys of examples/context.json: what `make synth` and the session's synthesis use."""
    return load_config_file(EXAMPLE_CONFIG)


def example_settings(**overrides: Any) -> Settings:
    """The example configuration with `overrides`, checked as synth checks it."""
    return Settings.from_mapping(example_context() | overrides)


# The example with the ingestion workflow: examples/context.json and one scheduled API source.
INGEST_EXAMPLE = EXAMPLE_CONFIG.with_name("context-ingest.json")


def ingest_example_context() -> dict[str, Any]:
    """The keys of examples/context-ingest.json (the session's synthesis of every stack)."""
    return load_config_file(INGEST_EXAMPLE)


def ingest_example_settings(**overrides: Any) -> Settings:
    """The ingest example with `overrides`, checked as synth checks it."""
    return Settings.from_mapping(ingest_example_context() | overrides)


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def resources_of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def identity_statements(template: dict[str, Any], role_logical_id: str | None = None) -> list[dict[str, Any]]:
    """Statements of identity policies (AWS::IAM::Policy, inline role policies, managed policies),
    optionally only those attached to one role."""
    out: list[dict[str, Any]] = []
    for logical_id, res in template["Resources"].items():
        props = res.get("Properties", {})
        if res["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            roles = [r.get("Ref") for r in props.get("Roles", [])]
            if role_logical_id is None or role_logical_id in roles:
                out.extend(props["PolicyDocument"]["Statement"])
        elif res["Type"] == "AWS::IAM::Role" and role_logical_id in (None, logical_id):
            for p in props.get("Policies", []):
                out.extend(p["PolicyDocument"]["Statement"])
    return out


def role_logical_id(template: dict[str, Any], role_name: str) -> str:
    ids = [
        k
        for k, v in resources_of(template, "AWS::IAM::Role").items()
        if v["Properties"].get("RoleName") == role_name
    ]
    assert len(ids) == 1, f"one role named {role_name}, got {ids}"
    return ids[0]


def actions(statements: list[dict[str, Any]]) -> set[str]:
    return {a for s in statements for a in as_list(s.get("Action", []))}


def flat(value: Any) -> str:
    """A resource (string or intrinsic) as one string, for prefix checks: Fn::Join parts joined,
    Fn::GetAtt/Ref as <LogicalId.Attr>, pseudo parameters as <AWS::X>."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "Fn::Join" in value:
            sep, parts = value["Fn::Join"]
            return sep.join(flat(p) for p in parts)
        if "Fn::GetAtt" in value:
            return "<{}.{}>".format(*value["Fn::GetAtt"])
        if "Ref" in value:
            return f"<{value['Ref']}>"
    return str(value)


def service_role(template: dict[str, Any], service: str) -> str:
    """Logical id of the one role of the template that `service` (e.g. states.amazonaws.com) assumes."""
    ids = [
        k
        for k, v in resources_of(template, "AWS::IAM::Role").items()
        if flat(v["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"].get("Service", ""))
        == service
    ]
    assert len(ids) == 1, f"one role for {service}, got {ids}"
    return ids[0]


def rendered_definition(
    outdir: Path, template: dict[str, Any], asl_path: Path, account: str = "123456789012"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state machine properties, its definition) after checking that the staged definition is the ASL
    file byte for byte and that its placeholders are exactly the DefinitionSubstitutions; function
    ARNs (GetAtt of a function of the template) are rendered from the function's name."""
    (sm,) = resources_of(template, "AWS::StepFunctions::StateMachine").values()
    props = sm["Properties"]
    staged = outdir / f"asset.{props['DefinitionS3Location']['Key']}"
    asl_text = asl_path.read_text()
    assert staged.read_text() == asl_text
    subs = props["DefinitionSubstitutions"]
    assert set(re.findall(r"\$\{(\w+)\}", asl_text)) == set(subs)
    functions = resources_of(template, "AWS::Lambda::Function")
    rendered = asl_text
    for name, value in subs.items():
        text = value
        if isinstance(value, dict) and "Ref" in value:  # a resource's name, e.g. a bucket: <logical id>
            text = f"<{value['Ref']}>"
        elif isinstance(value, dict):  # a function ARN: GetAtt of the function named in constants
            logical_id, attr = value["Fn::GetAtt"]
            assert attr == "Arn"
            fn_name = functions[logical_id]["Properties"]["FunctionName"]
            text = f"arn:aws:lambda:us-east-1:{account}:function:{fn_name}"
        rendered = rendered.replace("${" + name + "}", text)
    assert "${" not in rendered
    return props, json.loads(rendered)


def reachable_states(machine: dict[str, Any]) -> set[str]:
    """Names of the states reachable from StartAt (Next, Default, Choices, Catch)."""
    seen: set[str] = set()
    todo = [machine["StartAt"]]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        state = machine["States"][name]
        todo.extend(
            n
            for n in [
                state.get("Next"),
                state.get("Default"),
                *(c.get("Next") for c in state.get("Choices", [])),
                *(c.get("Next") for c in state.get("Catch", [])),
            ]
            if n
        )
    return seen
