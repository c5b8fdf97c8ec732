"""The Lambda dependencies layer, built at synth by pip for the Lambda platform (no Docker).

`deps_layer()` installs requirements-lambda.txt (every package pinned, installed with `--no-deps`) as
manylinux2014 x86_64 CPython 3.11 wheels into build/layers/<key>/python, trims what is never imported,
and reuses that directory while the key (a hash of the requirements, the pip arguments and the trim
rules) is unchanged. Anything that stops the build raises LayerBuildError with one line saying why."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from cdk.build import REPO

REQUIREMENTS = REPO / "requirements-lambda.txt"
LAYERS_DIR = REPO / "build" / "layers"
# The python3.11 runtime runs on Amazon Linux 2 (glibc 2.26): manylinux2014 (glibc 2.17) wheels only.
PLATFORM_ARGS: tuple[str, ...] = (
    "--platform",
    "manylinux2014_x86_64",
    "--only-binary=:all:",
    "--python-version",
    "3.11",
    "--implementation",
    "cp",
    "--abi",
    "cp311",
)
# What the python3.11 runtime ships itself (boto3 and its closure). A copy in a layer would shadow the
# runtime's, since /opt/python comes first on sys.path.
RUNTIME_PROVIDED = frozenset(
    {"boto3", "botocore", "s3transfer", "jmespath", "urllib3", "python-dateutil", "six"}
)
# Never imported by the handlers (paths relative to the layer's python/; `**/` matches any depth).
TRIM: tuple[str, ...] = (
    "bin",
    "**/__pycache__",
    "**/*.pyc",
    "**/*.pyi",
    "**/*.pyx",
    "**/*.pxd",
    "**/*.pxi",
    "**/*.h",
    "**/*.hpp",
    "**/*.c",
    "**/*.cc",
    "**/*.cpp",
    "*/tests",
    # pyarrow: headers, C++ sources, Flight, Substrait's Python module (lib.so links libarrow_substrait,
    # which stays), Gandiva, the C++ test module, and the link-time copies of libarrow_python (the
    # loader opens libarrow_python.so.<major> only).
    "pyarrow/include",
    "pyarrow/src",
    "pyarrow/libarrow_flight.so*",
    "pyarrow/libarrow_python_flight.so*",
    "pyarrow/_flight.*",
    "pyarrow/flight.py",
    "pyarrow/_substrait.*",
    "pyarrow/substrait.py",
    "pyarrow/*gandiva*",
    "pyarrow/_pyarrow_cpp_tests.*",
    "pyarrow/libarrow_python.so",
    "pyarrow/libarrow_python.so.*.*.*",
    # zstandard's CFFI backend (the C backend is the one imported), pyiceberg's Hive catalog client.
    "zstandard/_cffi.*",
    "hive_metastore",
)
# The newest symbol versions the python3.11 runtime's Amazon Linux 2 provides (glibc 2.26, GCC 7's
# libstdc++). A native library that needs a newer one fails to load there, whatever it does here.
RUNTIME_SYMBOL_VERSIONS: dict[str, tuple[int, ...]] = {
    "GLIBC": (2, 26),
    "GLIBCXX": (3, 4, 24),
    "CXXABI": (1, 3, 11),
}
_SYMBOL_VERSION = re.compile(rb"(GLIBC|GLIBCXX|CXXABI)_(\d+(?:\.\d+)+)\x00")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)$")
_BUILD_FORMAT = 3  # bump when the build itself changes in a way the key would not see


class LayerBuildError(RuntimeError):
    """The dependencies layer cannot be built; the message is one line that says why and what to do."""


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(requirements: Path = REQUIREMENTS) -> dict[str, str]:
    """name -> version of a fully pinned requirements file; anything else in it is refused."""
    if not requirements.is_file():
        raise LayerBuildError(f"{requirements.name} is missing: the dependencies layer is built from it")
    pins: dict[str, str] = {}
    for number, raw in enumerate(requirements.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _PIN.match(line)
        if not match:
            raise LayerBuildError(
                f"{requirements.name}:{number}: {line!r} is not name==version (the layer installs "
                "exact pins with --no-deps)"
            )
        name = _normalize(match.group(1))
        if name in RUNTIME_PROVIDED:
            raise LayerBuildError(
                f"{requirements.name}:{number}: {name} is part of the Lambda python3.11 runtime; a copy in "
                "the layer would shadow it: remove the line"
            )
        pins[name] = match.group(2)
    if not pins:
        raise LayerBuildError(f"{requirements.name} pins nothing")
    return pins


def layer_key(requirements: Path = REQUIREMENTS) -> str:
    """What names a build: the pinned requirements, the pip platform arguments and the trim rules."""
    digest = hashlib.sha256()
    digest.update(json.dumps(sorted(read_pins(requirements).items())).encode())
    digest.update(json.dumps([PLATFORM_ARGS, TRIM, _BUILD_FORMAT]).encode())
    return digest.hexdigest()[:16]


def tree_size(root: Path) -> int:
    """Bytes of the regular files under `root`: the unzipped size Lambda counts."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def trim(python_dir: Path, patterns: Sequence[str] = TRIM) -> int:
    """Remove what the patterns match under `python_dir`; returns the bytes removed."""
    removed = 0
    for pattern in patterns:
        for path in sorted(python_dir.glob(pattern), key=lambda p: len(p.parts), reverse=True):
            if path.is_symlink() or path.is_file():
                removed += path.lstat().st_size
                path.unlink()
            elif path.is_dir():
                removed += tree_size(path)
                shutil.rmtree(path)
    return removed


def record_only_what_ships(python_dir: Path) -> int:
    """Rewrite each installed package's RECORD to list only the files the layer holds; returns the
    lines dropped. pip records the console scripts it wrote under bin/ (trimmed: never imported)
    with the hash of their first line, `#!<this checkout's .venv>/bin/python`: kept, they would make
    the layer's bytes, and so its asset hash, differ from one checkout path to another."""
    root = python_dir.resolve()

    def ships(line: str) -> bool:
        path = (root / line.split(",", 1)[0]).resolve()
        return path.is_relative_to(root) and path.is_file()

    dropped = 0
    for record in sorted(root.glob("*.dist-info/RECORD")):
        lines = record.read_text().splitlines(keepends=True)
        kept = [line for line in lines if ships(line)]
        dropped += len(lines) - len(kept)
        record.write_text("".join(kept))
    return dropped


def too_new_for_the_runtime(root: Path) -> list[str]:
    """`file: GLIBC_2.28`-style lines for every ELF file under `root` that needs a symbol version
    newer than the runtime's (read from the version strings in its dynamic string table)."""
    problems = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        with path.open("rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        needed: dict[str, tuple[int, ...]] = {}
        for kind, version in _SYMBOL_VERSION.findall(path.read_bytes()):
            name, parsed = kind.decode(), tuple(int(x) for x in version.split(b"."))
            needed[name] = max(needed.get(name, parsed), parsed)
        problems += [
            f"{path.relative_to(root)}: {name}_{'.'.join(map(str, v))}"
            for name, v in sorted(needed.items())
            if v > RUNTIME_SYMBOL_VERSIONS[name]
        ]
    return problems


def pip_target(requirements: Path, target: Path, *, no_deps: bool) -> None:
    """pip install for the Lambda platform into `target`; LayerBuildError with pip's own reason."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        *PLATFORM_ARGS,
        *(["--no-deps"] if no_deps else []),
        "--target",
        str(target),
        "-r",
        str(requirements),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LayerBuildError(f"pip could not run for {requirements.name}: {exc}") from exc
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR:")]
        reason = (errors or lines or [f"exit code {proc.returncode}"])[0]
        raise LayerBuildError(
            f"pip install -r {requirements.name} for manylinux2014_x86_64/cp311 failed ({reason}); "
            "PyPI must be reachable for the first build"
        )


def _leaked_runtime_packages(python_dir: Path) -> list[str]:
    names = {_normalize(p.name.split("-")[0]) for p in python_dir.glob("*.dist-info")}
    names |= {_normalize(p.name) for p in python_dir.iterdir() if p.is_dir()}
    return sorted(names & (RUNTIME_PROVIDED | {"dateutil"}))


def check_layer(python_dir: Path, source: str) -> None:
    """LayerBuildError unless every native file loads on Amazon Linux 2 and nothing shadows the
    runtime's own packages; `source` names what to fix."""
    too_new = too_new_for_the_runtime(python_dir)
    if too_new:
        raise LayerBuildError(
            f"{len(too_new)} native file(s) need more than Amazon Linux 2 (glibc 2.26) has, e.g. "
            f"{too_new[0]}: pin a release with a manylinux2014 wheel in {source}"
        )
    leaked = _leaked_runtime_packages(python_dir)
    if leaked:
        raise LayerBuildError(
            f"the layer would shadow the runtime's {', '.join(leaked)}: remove what pulls them in "
            f"from {source}"
        )


def _intact(out: Path, manifest: Path) -> bool:
    """The cached layer is complete and as built. Bytecode that an interpreter importing from it wrote
    (as root, read-only directories do not stop it) is removed; any other change means a rebuild."""
    if not (manifest.is_file() and (out / "python").is_dir()):
        return False
    trim(out / "python", ("**/__pycache__", "**/*.pyc"))
    try:
        built = int(json.loads(manifest.read_text())["bytes"])
    except (ValueError, KeyError, TypeError):
        return False
    return tree_size(out) == built


def deps_layer(requirements: Path = REQUIREMENTS, cache_root: Path = LAYERS_DIR) -> Path:
    """The layer directory (holding python/) for `requirements`, built once per key and then reused.

    Concurrent synths share one build (a lock file per key); an interrupted build leaves no
    directory that looks complete."""
    key = layer_key(requirements)
    out = cache_root / key
    manifest = cache_root / f"{key}.json"  # written last, beside the layer: its presence means complete
    if _intact(out, manifest):
        return out
    cache_root.mkdir(parents=True, exist_ok=True)
    with (cache_root / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _intact(out, manifest):  # built by another synth meanwhile
            return out
        staging = cache_root / f"{key}.building-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            python_dir = staging / "python"
            pip_target(requirements, python_dir, no_deps=True)
            installed = tree_size(python_dir)
            removed = trim(python_dir)
            record_only_what_ships(python_dir)
            check_layer(python_dir, requirements.name)
            shutil.rmtree(out, ignore_errors=True)
            staging.rename(out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        manifest.write_text(
            json.dumps(
                {
                    "key": key,
                    "requirements": read_pins(requirements),
                    "installed_bytes": installed,
                    "trimmed_bytes": removed,
                    "bytes": tree_size(out),
                },
                indent=2,
            )
            + "\n"
        )
    return out
