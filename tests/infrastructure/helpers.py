"""Reading IAM statements out of synthesized templates."""

from __future__ import annotations

from typing import Any


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
