"""Local bundling (no Docker): the `icelake` Lambda layer directory and the package .zip for Glue.

Both are rebuilt from the repo on every synth into a directory under the gitignored `build/`;
their contents (and so the asset hashes) only change when the icelake sources change."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "icelake"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed zip timestamps: same sources, same wheel, same asset hash


def _sources(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in {".pyc", ".pyo"}
    )


def project_version() -> str:
    import tomllib

    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])


# What runs only on a laptop (the embedded AWS, the demo, the CLIs and their local API): never
# imported by a handler, so it stays out of the Lambda layer (the Glue wheel keeps it: the Glue
# scripts start local Spark from icelake.local when they run outside Glue).
LOCAL_ONLY = (
    "local",
    "demo.py",
    "cli.py",
    "cli_options.py",
    "cli_path.py",
    "console.py",
    "run_view.py",
    "assess/cli.py",
    "ingest/cli.py",
    "ingest/deploy.py",
    "ingest/local_api.py",
    "ingest/local_run.py",
)


def _deployed(src: Path) -> bool:
    relative = src.relative_to(PACKAGE)
    return not any(relative == Path(p) or Path(p) in relative.parents for p in LOCAL_ONLY)


def build_layer(build_dir: Path) -> Path:
    """<build_dir>/icelake-layer/python/icelake: Lambda puts /opt/python on sys.path."""
    layer = build_dir / "icelake-layer"
    if layer.exists():
        shutil.rmtree(layer)
    for src in filter(_deployed, _sources(PACKAGE)):
        dst = layer / "python" / src.relative_to(REPO)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    return layer


def build_glue_package(build_dir: Path) -> Path:
    """The `icelake` package as a .zip for Glue's `--extra-py-files`.

    Spark puts a .zip, .egg or .py from that argument on the executors' Python path too (PySpark's
    addPyFile takes only those extensions onto sys.path); a .whl would reach the driver but not the
    executors, where the manifests are rewritten and the files copied. Fixed timestamps: the same
    sources give the same bytes and asset hash. Third-party dependencies go to Glue through
    `--additional-python-modules`."""
    out_dir = build_dir / "glue-package"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    package = out_dir / f"icelake-{project_version()}.zip"
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as zf:
        for src in _sources(PACKAGE):
            zi = zipfile.ZipInfo(str(src.relative_to(REPO)), date_time=_EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, src.read_bytes())
    return package


def pinned_requirements(names: tuple[str, ...]) -> list[str]:
    """`name==version` lines of requirements.txt for the given names (for Glue's pip install)."""
    pins = []
    for raw in (REPO / "requirements.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line and line.split("==")[0].split("[")[0].lower() in names:
            pins.append(line)
    return pins
