"""How the Glue scripts (glue_jobs/*.py) resolve their arguments, in AWS Glue and locally alike.

In Glue, `awsglue.utils.getResolvedOptions(args, names)` reads `args[1:]` (it expects `sys.argv`,
whose first item is the script name) and fails on a missing name; locally, the script's argparse
parser reads the same arguments. Both scripts get `argv` without the script name (`sys.argv[1:]`
or a test's list) and hand it to `resolve_options`, which puts the script name back for Glue.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

Resolver = Callable[[list[str], list[str]], dict[str, Any]]


def glue_resolver() -> Resolver | None:
    """awsglue's getResolvedOptions inside AWS Glue, None elsewhere."""
    try:
        from awsglue.utils import getResolvedOptions  # pragma: no cover - only inside AWS Glue
    except ImportError:
        return None
    return getResolvedOptions  # type: ignore[no-any-return]  # pragma: no cover


def resolve_options(
    prog: str,
    argv: Sequence[str],
    options: Sequence[str],
    parser: argparse.ArgumentParser,
    required: Sequence[str] = (),
    resolver: Resolver | None = None,
) -> dict[str, Any]:
    """{option: value or None} for each of `options` (underscore names), from `argv` without the
    script name. `resolver` defaults to awsglue's inside Glue; without one, `parser` reads `argv`
    and ignores what Glue adds itself (--JOB_ID, ...)."""
    args = list(argv)
    resolve = resolver or glue_resolver()
    if resolve is None:
        parsed = vars(parser.parse_known_args(args)[0])
        return {o: parsed.get(o) for o in options}
    # Either spelling (argparse inside getResolvedOptions turns both into the underscore name);
    # the required ones always, so that a missing one fails there with its name.
    spelled = {o: next((s for s in (o.replace("_", "-"), o) if f"--{s}" in args), o) for o in options}
    given = [spelled[o] for o in options if o in required or f"--{spelled[o]}" in args]
    resolved = resolve([prog, *args], given)  # it skips its first item, as in sys.argv
    return {o: resolved.get(o) for o in options}
