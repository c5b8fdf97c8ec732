"""Every file a table's current metadata can reach: what must stay when anything is pruned."""

from __future__ import annotations

from icelake.aws.fileio import FileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro_files import manifest_entries, manifest_refs
from icelake.uris import canonical


def reachable_files(io: FileIO, metadata_location: str) -> set[str]:
    """Canonical URIs of the metadata file, the metadata files it logs, statistics files, manifest
    lists, manifests, and every data and delete file those manifests name.

    Every manifest entry counts, deleted ones too: the plan copies the files they name while the
    source still has them, so a prune that dropped them would only see the next sync copy them
    again. This keeps a little more than Iceberg's own expiry (which keeps live entries only);
    a prune can only delete less, never something a retained snapshot reads."""
    meta, _gz = mj.parse_metadata(metadata_location, io.read(metadata_location))
    found = {canonical(metadata_location)}
    found.update(canonical(p) for p in mj.metadata_log(meta))
    found.update(canonical(p) for p, _size in mj.statistics_files(meta))
    manifests: set[str] = set(mj.inline_manifests(meta))
    for manifest_list in mj.manifest_lists(meta):
        found.add(canonical(manifest_list))
        manifests.update(ref.path for ref in manifest_refs(manifest_list, io.read(manifest_list)))
    for manifest in manifests:
        found.add(canonical(manifest))
        for entry in manifest_entries(manifest, io.read(manifest)):
            found.add(canonical(entry["data_file"]["file_path"]))
            if entry["data_file"].get("referenced_data_file"):
                found.add(canonical(entry["data_file"]["referenced_data_file"]))
    return found
