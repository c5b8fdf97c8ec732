"""L3 constructs that leave deployed logical IDs alone.

A `Component` groups resources under an id of its own in the construct tree (construct paths,
cdk-nag findings, `cdk ls`), but its id is left out of its resources' logical IDs: a resource made
in a component gets the logical ID it would get if it were made in the stack itself. So moving a
resource into a component never makes CloudFormation replace it (a new ledger table, a new key, or
a failed deploy for resources with fixed names). The stacks derive from `IcelakeStack`, which
allocates logical IDs that way; tests/infrastructure/test_templates.py holds them to the snapshot.

Each component names its resources after its own id (a function `Copy` makes `CopyFunction` and
`CopyLogs`), so two components of one kind in a stack never collide.
"""

from __future__ import annotations

import hashlib
import re

from aws_cdk import CfnElement, Stack
from constructs import Construct, IConstruct

# CDK's rules for a logical ID from a construct path (aws-cdk-lib core/lib/private/uniqueid.ts):
# "Default" vanishes from the path, "Resource" from the readable part, a path of one component is
# used as it is, and otherwise the readable part is followed by 8 hex digits of the path's MD5.
_HIDDEN = "Default"
_HIDDEN_FROM_HUMAN = "Resource"
_MAX_HUMAN = 240
_MAX_ID = 255
_NON_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")


def unique_id(components: list[str]) -> str:
    """The logical ID CDK gives the construct path `components` (relative to its stack)."""
    components = [c for c in components if c != _HIDDEN]
    if len(components) == 1:
        top = _NON_ALPHANUMERIC.sub("", components[0])
        if len(top) <= _MAX_ID:
            return top
    digest = hashlib.md5("/".join(components).encode(), usedforsecurity=False).hexdigest()[:8].upper()
    human: list[str] = []
    for c in components:  # CDK drops a component that the previous one ends with
        if not human or not human[-1].endswith(c):
            human.append(c)
    readable = "".join(_NON_ALPHANUMERIC.sub("", c) for c in human if c != _HIDDEN_FROM_HUMAN)
    return readable[:_MAX_HUMAN] + digest


class Component(Construct):
    """An L3 construct whose id does not appear in the logical IDs of what it makes."""


class IcelakeStack(Stack):
    """A stack that leaves `Component` ids out of logical IDs (see the module's docstring)."""

    def _allocate_logical_id(self, cfn_element: CfnElement) -> str:
        # CDK asks again each time a logical ID is resolved (every Ref, GetAtt and the template
        # itself: 1,753 asks for 110 elements in a synth of every stack), each ask a callback from
        # jsii's Node.js process and round trips for each scope. An element's place in the tree
        # never changes: answer it once, keyed by jsii's reference to the element (a new Python
        # proxy comes with each ask; its reference is the same and is read without a round trip).
        known: dict[str, str] = self.__dict__.setdefault("_icelake_logical_ids", {})
        ref = getattr(cfn_element, "__jsii_ref__", None)
        key = ref.ref if ref is not None else cfn_element.node.path
        if key not in known:
            known[key] = self._logical_id_of(cfn_element)
        return known[key]

    def _logical_id_of(self, cfn_element: CfnElement) -> str:
        scopes = cfn_element.node.scopes
        inner = scopes[scopes.index(self) + 1 :]
        if not any(isinstance(s, Component) for s in inner):
            return super()._allocate_logical_id(cfn_element)
        return unique_id([s.node.id for s in inner if not isinstance(s, Component)])


def arn_of(resource: IConstruct) -> str:
    """How cdk-nag writes the ARN of a resource of this stack in a finding (`<LogicalId.Arn>`), so a
    suppression names exactly that resource instead of a regex over logical IDs."""
    element = resource.node.default_child
    assert isinstance(element, CfnElement), f"{resource.node.path} is not a resource of its own"
    return f"<{Stack.of(resource).get_logical_id(element)}.Arn>"
