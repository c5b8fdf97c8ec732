"""The Lambda dependencies layer: what requirements-lambda.txt may hold, and synth stopping with one
line when the layer cannot be built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdk.lambda_deps import (
    REQUIREMENTS,
    RUNTIME_PROVIDED,
    LayerBuildError,
    deps_layer,
    layer_key,
    read_pins,
    too_new_for_the_runtime,
)
from tests.infrastructure.conftest import run_app_py
from tests.infrastructure.helpers import example_context

REPO = Path(__file__).resolve().parents[2]


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[name.split("[")[0].lower().replace("_", "-")] = version
    return out


def test_layer_pins_what_the_handlers_import_at_the_versions_of_requirements_txt() -> None:
    layer, project = read_pins(), _pins(REPO / "requirements.txt")
    # Given what the handlers import that the python3.11 runtime lacks
    wanted = {"pyarrow", "pyiceberg", "fastavro", "pydantic", "pydantic-settings", "aws-lambda-powertools"}
    wanted |= {"aws-xray-sdk", "requests", "tenacity"}  # tenacity: the fetch's retries
    assert wanted <= set(layer)
    # Then each is pinned as in requirements.txt, but for pyarrow: 21+ has no manylinux2014 wheel,
    # and the python3.11 runtime (Amazon Linux 2, glibc 2.26) loads no manylinux_2_28 one
    differ = {n for n in wanted if layer[n] != project[n]}
    assert differ == {"pyarrow"}, differ
    assert not set(layer) & RUNTIME_PROVIDED
    assert not {"typer", "moto", "pyspark", "numpy", "pandas"} & set(layer)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("boto3==1.44.5", "boto3 is part of the Lambda python3.11 runtime"),
        ("urllib3==2.8.0", "urllib3 is part of the Lambda python3.11 runtime"),
        ("pyarrow>=20", "is not name==version"),
    ],
)
def test_requirements_that_would_shadow_the_runtime_or_float_are_refused(
    tmp_path: Path, line: str, message: str
) -> None:
    req = tmp_path / "requirements-lambda.txt"
    req.write_text(f"requests==2.34.2\n{line}\n")
    with pytest.raises(LayerBuildError, match=message):
        deps_layer(req, tmp_path / "layers")
    assert not (tmp_path / "layers").exists()


@pytest.mark.slow
def test_a_pin_with_no_wheel_for_the_lambda_platform_stops_the_build_with_pips_reason(tmp_path: Path) -> None:
    # Given pyarrow 26.0.1, whose only Linux wheel is manylinux_2_28 (Amazon Linux 2 cannot load it)
    req = tmp_path / "requirements-lambda.txt"
    req.write_text("pyarrow==26.0.1\n")
    with pytest.raises(LayerBuildError) as info:
        deps_layer(req, tmp_path / "layers")
    message = str(info.value)
    assert "\n" not in message
    assert "manylinux2014_x86_64/cp311 failed" in message and "pyarrow==26.0.1" in message
    # and nothing that looks like a finished layer is left to be reused
    assert not list((tmp_path / "layers").glob("*.json"))
    assert not [p for p in (tmp_path / "layers").iterdir() if p.is_dir()]


def test_the_layer_key_changes_with_the_pins(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("requests==2.34.2\n")
    b.write_text("# a comment\nrequests==2.34.2\n")
    assert layer_key(a) == layer_key(b)
    b.write_text("requests==2.34.1\n")
    assert layer_key(a) != layer_key(b)
    assert len(layer_key(REQUIREMENTS)) == 16


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"pandas_layer_arn": "arn:aws:lambda:us-east-1:336392948345:layer:AWSSDKPandas-Python311:22"},
            "synth stopped: context key pandas_layer_arn is no longer used",
        ),
        ({"deps_layer_dir": "build/nowhere"}, "synth stopped: deps_layer_dir 'build/nowhere' has no python/"),
        (
            {"deps_layer_dir": "tests/infrastructure/fixtures/layer_with_boto3"},
            "synth stopped: the layer would shadow the runtime's boto3: remove what pulls them in from "
            "deps_layer_dir 'tests/infrastructure/fixtures/layer_with_boto3'",
        ),
    ],
)
def test_synth_stops_with_one_line_instead_of_leaving_the_dependencies_out(
    tmp_path: Path, context: dict[str, str], message: str
) -> None:
    # (the CDK CLI's way of passing context: cdk.json's, with the key overridden)
    full = example_context() | context
    proc = run_app_py(tmp_path, tmp_path / "cdk.out", {"CDK_CONTEXT_JSON": json.dumps(full)})
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines[-1].startswith(message), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_cached_layer_is_reused_as_built_and_rebuilt_when_changed(tmp_path: Path) -> None:
    req = tmp_path / "requirements-lambda.txt"
    req.write_text("idna==3.20\n")
    layer = deps_layer(req, tmp_path / "layers")
    module = layer / "python" / "idna" / "core.py"
    built = module.read_bytes()
    assert (tmp_path / "layers" / f"{layer.name}.json").is_file()
    assert not list(layer.rglob("__pycache__")) and not (layer / "python" / "bin").exists()
    # When an interpreter importing from the cache wrote bytecode into it, the next synth drops it
    (layer / "python" / "idna" / "__pycache__").mkdir()
    (layer / "python" / "idna" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"x" * 100)
    assert deps_layer(req, tmp_path / "layers") == layer
    assert not list(layer.rglob("__pycache__"))
    # When a file of the cached layer was changed, the layer is built again
    module.write_bytes(built + b"\n# changed\n")
    assert deps_layer(req, tmp_path / "layers") == layer
    assert module.read_bytes() == built


def test_a_native_library_needing_a_newer_glibc_than_amazon_linux_2_is_found(tmp_path: Path) -> None:
    # Given ELF files whose dynamic string tables ask for these symbol versions
    def elf(name: str, *versions: bytes) -> None:
        (tmp_path / name).write_bytes(b"\x7fELF" + b"\x00" * 60 + b"\x00".join(versions) + b"\x00")

    elf("ok.so", b"GLIBC_2.17", b"GLIBCXX_3.4.19", b"CXXABI_1.3.7", b"GLIBC_2.26")
    elf("libarrow_s3.so.2600", b"GLIBC_2.2.5", b"GLIBC_2.28", b"GLIBCXX_3.4.22")  # as pyarrow 26's
    elf("cxx.so", b"GLIBC_2.17", b"GLIBCXX_3.4.29")
    (tmp_path / "notes.txt").write_bytes(b"GLIBC_2.99\x00")  # not an ELF file
    assert too_new_for_the_runtime(tmp_path) == ["cxx.so: GLIBCXX_3.4.29", "libarrow_s3.so.2600: GLIBC_2.28"]


@pytest.mark.slow
def test_two_checkout_paths_build_one_layer_and_one_asset_hash(tmp_path: Path) -> None:
    """pip writes each console script with `#!<the checkout's .venv>/bin/python` and records its hash
    in the package's RECORD; the scripts are trimmed, their RECORD lines must go too."""
    # Given two checkouts, each with its .venv (a link to this one, as a git worktree's is), and
    # requirements whose packages install console scripts
    req = tmp_path / "requirements-lambda.txt"
    req.write_text("idna==3.20\ncharset-normalizer==3.5.2\n")
    layers, executables = [], []
    for checkout in ("one", "another/clone"):
        root = tmp_path / checkout
        root.mkdir(parents=True)
        (root / ".venv").symlink_to(Path(sys.prefix))
        # When each builds the layer with its own interpreter, as `make synth` there would
        done = subprocess.run(
            [
                str(root / ".venv" / "bin" / "python"),
                "-c",
                "import sys; from pathlib import Path; from cdk.lambda_deps import deps_layer; "
                "print(sys.executable); print(deps_layer(Path(sys.argv[1]), Path(sys.argv[2])))",
                str(req),
                str(root / "build" / "layers"),
            ],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        executable, layer = done.stdout.split()
        executables.append(executable)
        layers.append(Path(layer))
    assert executables[0] != executables[1]  # two interpreter paths: two shebangs pip wrote
    # Then the two layers hold the same bytes, their RECORDs list only what ships ...
    one, other = (
        {p.relative_to(layer): p.read_bytes() for p in layer.rglob("*") if p.is_file()} for layer in layers
    )
    assert one == other, sorted(k for k in one.keys() | other.keys() if one.get(k) != other.get(k))
    assert not [
        line
        for p in layers[0].glob("python/*.dist-info/RECORD")
        for line in p.read_text().splitlines()
        if line.startswith("..")
    ]
    # ... and CDK gives them one asset hash: one upload for every clone of the commit
    from aws_cdk import App, Stack
    from aws_cdk import aws_s3_assets as s3_assets

    stack = Stack(App())
    hashes = {
        s3_assets.Asset(stack, f"Layer{i}", path=str(layer)).asset_hash for i, layer in enumerate(layers)
    }
    assert len(hashes) == 1, hashes
