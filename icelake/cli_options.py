"""A command's options as one frozen dataclass: typer reads the options from the dataclass's
annotated fields, and the command receives them whole, built once.

    @dataclass(frozen=True)
    class PathOptions:
        metadata: Annotated[str, typer.Option("--metadata", help="...")]
        workers: Annotated[int, typer.Option(min=1, help="...")] = 16

    @app.command("path")
    @options_command(PathOptions)
    def migrate_path(options: PathOptions) -> None: ...

The command line is exactly what the same parameters written on the function would give (typer
reads the wrapper's signature); the function takes one argument instead of a dozen.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

O = TypeVar("O")  # noqa: E741 - the options dataclass


def options_command(cls: type[O]) -> Callable[[Callable[[O], None]], Callable[..., None]]:
    """Decorate `fn(options: cls)` into a typer command whose parameters are `cls`'s fields."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    hints = typing.get_type_hints(cls, include_extras=True)  # Annotated kept: typer reads it
    parameters = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=hints[f.name],
            default=f.default if f.default is not dataclasses.MISSING else inspect.Parameter.empty,
        )
        for f in dataclasses.fields(cls)
    ]

    def decorate(fn: Callable[[O], None]) -> Callable[..., None]:
        @functools.wraps(fn)
        def command(**values: Any) -> None:
            fn(cls(**values))

        del command.__wrapped__  # typer must read the signature below, not fn's
        command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in parameters}
        return command

    return decorate
