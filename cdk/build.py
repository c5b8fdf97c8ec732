"""Local bundling (no Docker): the `icelake` Lambda layer directory and the wheel for Glue.

Both are rebuilt from the repo on every synth into a directory under the gitignored `build/`;
their contents (and so the asset hashes) only change when the icelake sources change."""

from __future__ import annotations

import base64
import hashlib
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
    "console.py",
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


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(build_dir: Path) -> Path:
    """A pure-Python wheel of the `icelake` package for Glue's `--extra-py-files`.

    Written directly (a wheel is a zip with a dist-info) so synth needs neither network nor the
    `wheel` package. Third-party dependencies go to Glue through `--additional-python-modules`."""
    version = project_version()
    out_dir = build_dir / "wheel"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    wheel = out_dir / f"icelake-{version}-py3-none-any.whl"
    info = f"icelake-{version}.dist-info"
    files: list[tuple[str, bytes]] = [(str(p.relative_to(REPO)), p.read_bytes()) for p in _sources(PACKAGE)]
    files.append((f"{info}/METADATA", f"Metadata-Version: 2.1\nName: icelake\nVersion: {version}\n".encode()))
    files.append(
        (
            f"{info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: icelake-cdk\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
    )
    record = "\n".join([*(_record_line(n, d) for n, d in files), f"{info}/RECORD,,"]) + "\n"
    files.append((f"{info}/RECORD", record.encode()))
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            zi = zipfile.ZipInfo(name, date_time=_EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
    return wheel


def pinned_requirements(names: tuple[str, ...]) -> list[str]:
    """`name==version` lines of requirements.txt for the given names (for Glue's pip install)."""
    pins = []
    for raw in (REPO / "requirements.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line and line.split("==")[0].split("[")[0].lower() in names:
            pins.append(line)
    return pins
