"""Job arguments, resolved the same way in every Glue script, in AWS Glue and on a laptop.

In Glue, `awsglue.utils.getResolvedOptions(args, options)` parses `args[1:]`: it expects sys.argv,
script name first, and silently drops whatever stands in that place. Scripts hand it their
arguments without the script name, so the name is put back here, once, for all of them. Elsewhere
argparse reads the same names, either spelling (`--batch-uris` or `--batch_uris`), and ignores what
Glue adds itself (`--JOB_ID`, `--JOB_RUN_ID`, ...).
"""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Mapping, Sequence

Resolved = dict[str, str | list[str] | None]


def in_glue() -> bool:
    return importlib.util.find_spec("awsglue") is not None


def resolve_options(
    argv: Sequence[str],
    options: Sequence[str],
    *,
    prog: str,
    required: Sequence[str] = (),
    repeatable: Sequence[str] = (),
    flags: Sequence[str] = (),
    defaults: Mapping[str, str] | None = None,
) -> Resolved:
    """Every option's value (None when absent; a list for `repeatable` ones; "true" for a
    `flag` given without a value), from `argv` without the script name."""
    defaults = defaults or {}
    if in_glue():  # pragma: no cover - only inside AWS Glue
        from awsglue.utils import getResolvedOptions

        spelled = {o: next((s for s in (o.replace("_", "-"), o) if f"--{s}" in argv), o) for o in options}
        given = [spelled[o] for o in options if o in required or f"--{spelled[o]}" in argv]
        found = getResolvedOptions([prog, *argv], given)
        resolved: Resolved = {o: found.get(o, defaults.get(o)) for o in options}
        for o in repeatable:  # Glue keeps one value per key: a repeatable option holds a list
            value = resolved[o]
            resolved[o] = [value] if isinstance(value, str) else []
        return resolved
    parser = argparse.ArgumentParser(prog=prog)
    for o in options:
        names = [f"--{o.replace('_', '-')}", f"--{o}"] if "_" in o else [f"--{o}"]
        if o in repeatable:
            parser.add_argument(*names, dest=o, action="append", default=[])
        elif o in flags:
            parser.add_argument(*names, dest=o, nargs="?", const="true", default=defaults.get(o))
        else:
            parser.add_argument(*names, dest=o, required=o in required, default=defaults.get(o))
    return dict(vars(parser.parse_known_args(list(argv))[0]))
