"""Manifests and manifest lists (Avro): the container, primitives and skippers, entries as planning
reads them, reading and patching paths.
"""
