"""`icelake migrate path`: one table, given its metadata file, migrated to a new location (S3 or
local) by this process, with progress on the terminal and a summary at the end; and what the
other commands share of its rendering (`RichProgress`, `human_bytes`)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from icelake.aws.fileio import io_for
from icelake.aws.session import (
    DEFAULT_SESSION_SECONDS,
    MAX_SESSION_SECONDS,
    MIN_SESSION_SECONDS,
    assume_role_session,
    check_session_duration,
)
from icelake.console import err, one_line_errors, stdout_console
from icelake.migrate import MigrationResult, migrate_table
from icelake.migrate.history import History, orphans_note
from icelake.migrate.plan.since import Since
from icelake.migrate.settings import EngineSettings
from icelake.uris import parse_map_option


class RichProgress:
    """Progress bars on a terminal, one status line per phase otherwise."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bars: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        if console.is_terminal:
            self.bars = Progress(
                TextColumn("{task.description:<24}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=False,
            )

    def __enter__(self) -> RichProgress:
        if self.bars:
            self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bars:
            self.bars.stop()

    def start(self, phase: str, total: int) -> None:
        if self.bars:
            self.tasks[phase] = self.bars.add_task(phase, total=total)
        elif total:
            self.console.print(f"[icelake] {phase}: {total}", highlight=False, markup=False)

    def advance(self, phase: str, amount: int = 1) -> None:
        if self.bars and phase in self.tasks:
            self.bars.advance(self.tasks[phase], amount)


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def path_summary(result: MigrationResult) -> Table:
    title = "Dry run: nothing written" if result.dry_run else "Migration complete"
    table = Table(title=title, show_header=False)
    table.add_row("table uuid", str(result.table_uuid))
    table.add_row("target metadata", result.target_metadata_location)
    for m in result.prefix_mappings:
        table.add_row("prefix", f"{m.source} -> {m.target} ({m.files} paths)")
    table.add_row("sync", f"{result.sync}: {result.sync_reason}" if result.sync_reason else result.sync)
    table.add_row("snapshots / metadata files", f"{result.snapshots} / {result.metadata_files}")
    table.add_row("files planned", f"{result.files_planned} ({human_bytes(result.bytes_planned)})")
    verb = "to copy" if result.dry_run else "copied"
    table.add_row(f"files {verb}", f"{result.files_copied} ({human_bytes(result.bytes_copied)})")
    if not result.dry_run:
        table.add_row("copies verified by checksum", str(result.files_verified))
    table.add_row("files rewritten", str(result.files_rewritten))
    table.add_row("files skipped (identical)", str(result.files_skipped))
    orphans = result.orphans
    if result.sync == "full":  # an incremental sync reads only what is new, not older versions
        table.add_row(
            f"older versions only (history {result.history})",
            f"{orphans.files} files ({human_bytes(orphans.bytes)}) "
            + ("copied" if result.history == "all" else "not copied"),
        )
    table.add_row("elapsed", f"{result.elapsed_seconds:.1f} s")
    return table


@dataclass(frozen=True)
class PathOptions:
    """The options of `icelake migrate path`."""

    metadata: Annotated[str, typer.Option("--metadata", help="Current metadata.json of the source table.")]
    target_location: Annotated[str, typer.Option("--target-location", help="Location of the target table.")]
    map_: Annotated[
        list[str] | None,
        typer.Option("--map", help="SRC=DST for a prefix outside the table location (repeatable)."),
    ] = None
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; write nothing.")] = False
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace target files that exist with different content.")
    ] = False
    source_role: Annotated[str | None, typer.Option(help="Role ARN to read the source with.")] = None
    target_role: Annotated[str | None, typer.Option(help="Role ARN to write the target with.")] = None
    target_kms_key: Annotated[str | None, typer.Option(help="KMS key for objects written to S3.")] = None
    session_duration: Annotated[
        int,
        typer.Option(
            "--session-duration",
            help=f"Seconds each assumed-role session lasts ({MIN_SESSION_SECONDS}..{MAX_SESSION_SECONDS}); "
            "sessions are renewed before they expire either way.",
        ),
    ] = DEFAULT_SESSION_SECONDS
    workers: Annotated[int, typer.Option(min=1, max=256, help="Parallel file operations.")] = 16
    history: Annotated[
        History,
        typer.Option(
            "--history",
            help="live: copy what the current metadata reaches; all: also what older logged "
            'metadata versions reach and the source still has (README "History").',
        ),
    ] = "live"
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Plan the whole table. Without it, a target that holds an earlier sync of this "
            "source gets only what the source committed since.",
        ),
    ] = False


def run_path(options: PathOptions) -> None:
    """What `icelake migrate path` does with its options."""
    o = options
    with one_line_errors():
        maps = [parse_map_option(m) for m in o.map_ or []]
        check_session_duration(o.session_duration, "--session-duration")
        src_session = assume_role_session(
            o.source_role, session_name="icelake-source", duration_seconds=o.session_duration
        )
        dst_session = assume_role_session(
            o.target_role, session_name="icelake-target", duration_seconds=o.session_duration
        )
        src_io = io_for(o.metadata, src_session)
        dst_io = io_for(o.target_location, dst_session, o.target_kms_key)
        with RichProgress(err) as progress:
            settings = EngineSettings(
                workers=o.workers,
                history=o.history,
                overwrite=o.overwrite,
                dry_run=o.dry_run,
                progress=progress,
                since=Since(reason="--full asks for it") if o.full else Since(from_target=True),
            )
            result = migrate_table(
                o.metadata, o.target_location, maps, src_io=src_io, dst_io=dst_io, settings=settings
            )
    if o.as_json:
        sys.stdout.write(json.dumps(result.model_dump(mode="json")) + "\n")
    else:
        stdout_console().print(path_summary(result))
    if note := orphans_note(result.history, result.orphans):
        err.print(f"[icelake] {note}", highlight=False, markup=False)
