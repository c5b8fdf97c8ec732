"""Runs one handler as the Lambda python3.11 runtime would, in an interpreter started with `-I -S`.

Standard library only: nothing but the paths given is importable. Usage:
    python -I -S lambda_runner.py SPEC.json OUT.json
SPEC: {"path": [code, layer/python..., runtime], "handler": "module.function", "event": {...} | null,
       "function_name": str, "memory": int}
OUT:  {"modules": {name: file} of the third-party modules loaded, "outside": {name: file} of those
       loaded from neither the given paths nor the standard library, "result": the return value,
       or "error": {"type", "message", "traceback"}} (no event: import only, no call)."""

from __future__ import annotations

import importlib
import json
import sys
import traceback
import uuid


class Context:
    """The attributes of the runtime's LambdaContext that handlers and Powertools read."""

    def __init__(self, name: str, memory: int) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = "2026/01/01/[$LATEST]0"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


def main(spec_path: str, out_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    sys.path[:0] = spec["path"]
    out: dict[str, object] = {}
    try:
        module_name, func_name = spec["handler"].rsplit(".", 1)
        func = getattr(importlib.import_module(module_name), func_name)
        if spec.get("event") is not None:
            out["result"] = func(spec["event"], Context(spec["function_name"], spec["memory"]))
    except BaseException as exc:
        out["error"] = {
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": traceback.format_exc(),
        }
    roots = tuple(spec["path"])
    files = {name: str(getattr(mod, "__file__", None) or "") for name, mod in sorted(sys.modules.items())}
    out["modules"] = {name: f for name, f in files.items() if "." not in name and f.startswith(roots)}
    # anything loaded from neither the given paths nor the standard library (there should be none)
    allowed = (*roots, sys.base_prefix, sys.base_exec_prefix, __file__)
    out["outside"] = {n: f for n, f in files.items() if f and not f.startswith(allowed)}
    with open(out_path, "w") as f:
        json.dump(out, f, default=str)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
