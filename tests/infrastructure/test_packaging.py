"""What `cdk deploy` would upload, proven offline: the synthesized assets of every function.

- Size: each function's code plus all its layers, unzipped, stays under Lambda's 262,144,000 bytes.
- Imports: each handler imports in `python -I -S` whose sys.path holds only its code asset, its
  layers and a runtime-like directory (boto3, botocore and their dependencies for the Lambda
  platform), in the runtime's order: the layers' Linux x86_64 wheels load on this machine.
- Smoke: each migrate step handler runs one event in that interpreter against moto on 127.0.0.1, on
  tables whose Parquet files are zstd; Validate reads them through pyiceberg's S3 FileIO.

The layer and the runtime-like directory are built once and cached under build/layers/."""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from cdk.lambda_deps import (
    LAYERS_DIR,
    PLATFORM_ARGS,
    LayerBuildError,
    pip_target,
    too_new_for_the_runtime,
    tree_size,
)
from icelake.constants import ENV_ARTIFACTS_BUCKET, ENV_LEDGER_TABLE, LAMBDA_STEPS
from icelake.local.moto_server import LOCAL_CREDENTIALS, embedded_aws
from tests.infrastructure.conftest import Synth
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, build_lake, catalog_state

pytestmark = pytest.mark.slow

LAMBDA_LIMIT = 262_144_000  # code + all layers, unzipped
MIB = 1024 * 1024
REPO = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("lambda_runner.py")
RUNTIME_PINS = ("boto3", "botocore")  # what the python3.11 runtime ships, with their dependencies
NOT_IN_LAMBDA = ("moto", "pyspark", "typer", "pytest", "snowpark_connect_deps_iceberg")


@dataclass(frozen=True)
class DeployedFunction:
    stack: str
    name: str
    runtime: str
    handler: str
    memory: int
    environment: Mapping[str, Any]
    code: Path
    layers: tuple[Path, ...]

    @property
    def unzipped_bytes(self) -> int:
        return tree_size(self.code) + sum(tree_size(layer) for layer in self.layers)

    def sys_path(self, runtime: Path) -> list[str]:
        """sys.path as the runtime builds it: /var/task, then each of /opt/python/lib/python3.11/
        site-packages and /opt/python (layers are unpacked into the same /opt), then the runtime's."""
        path = [str(self.code)]
        for sub in ("python/lib/python3.11/site-packages", "python"):
            path += [str(layer / sub) for layer in self.layers if (layer / sub).is_dir()]
        return [*path, str(runtime)]


def deployed_functions(synth: Synth) -> list[DeployedFunction]:
    """Every AWS::Lambda::Function of every stack, with the asset directories its S3 keys name."""
    out = []
    for stack, template in synth.templates.items():
        manifest = json.loads((synth.outdir / f"{stack}.assets.json").read_text())
        by_key = {
            dest["objectKey"]: synth.outdir / asset["source"]["path"]
            for asset in manifest["files"].values()
            for dest in asset["destinations"].values()
        }

        def asset(code: Mapping[str, Any], what: str, by_key: Mapping[str, Path] = by_key) -> Path:
            assert "S3Key" in code and code["S3Key"] in by_key, f"{what}: code is not an asset built here"
            path = by_key[code["S3Key"]]
            assert path.is_dir(), f"{what}: asset {path.name} is not a directory"
            return path

        resources = template["Resources"]
        for logical_id, res in resources.items():
            if res["Type"] != "AWS::Lambda::Function":
                continue
            props = res["Properties"]
            name = props.get("FunctionName", logical_id)
            layers = []
            for ref in props.get("Layers", []):
                assert isinstance(ref, dict) and "Ref" in ref, f"{name}: layer {ref} is not built here"
                layers.append(asset(resources[ref["Ref"]]["Properties"]["Content"], f"{name} layer"))
            out.append(
                DeployedFunction(
                    stack=stack,
                    name=name,
                    runtime=props["Runtime"],
                    handler=props["Handler"],
                    memory=int(props.get("MemorySize", 128)),
                    environment=props.get("Environment", {}).get("Variables", {}),
                    code=asset(props["Code"], name),
                    layers=tuple(layers),
                )
            )
    return out


@pytest.fixture(scope="module")
def functions(synth: Synth) -> list[DeployedFunction]:
    found = deployed_functions(synth)
    assert {f.name for f in found} >= {name for name, _h, _p in LAMBDA_STEPS.values()}
    return found


@pytest.fixture(scope="module")
def runtime_like() -> Path:
    """boto3 and botocore at requirements.txt's pins, with their dependencies, for the Lambda
    platform: the only third-party packages the interpreter sees besides the function's own."""
    pins = [
        line.strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
        if line.split("==")[0].strip() in RUNTIME_PINS
    ]
    assert len(pins) == len(RUNTIME_PINS), pins
    key = hashlib.sha256(json.dumps([pins, PLATFORM_ARGS]).encode()).hexdigest()[:16]
    out = LAYERS_DIR / f"runtime-{key}"
    if not (out / "boto3").is_dir():
        staging = LAYERS_DIR / f"runtime-{key}.building-{os.getpid()}"
        staging.mkdir(parents=True, exist_ok=True)
        (staging / "requirements.txt").write_text("\n".join(pins) + "\n")
        try:
            pip_target(staging / "requirements.txt", staging / "site", no_deps=False)
            (staging / "site").rename(out)
        except LayerBuildError as exc:
            pytest.fail(f"the runtime-like directory could not be built: {exc}")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return out


@pytest.fixture(scope="module")
def bytecode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the isolated interpreters keep the bytecode of what they import (-X pycache_prefix),
    outside the assets: each of the ~20 cold starts would otherwise compile botocore, pydantic,
    pyiceberg and the rest from source again. The sources and what they import are the same."""
    return tmp_path_factory.mktemp("bytecode")


def run_in_lambda(
    fn: DeployedFunction,
    runtime: Path,
    tmp: Path,
    bytecode: Path,
    *,
    event: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One cold start of `fn` (and one invocation when `event` is given) in an isolated interpreter
    with the environment variables the Lambda service sets, the function's own and `environment`."""
    spec = tmp / f"{fn.name}-{os.urandom(4).hex()}.json"
    out = spec.with_suffix(".out.json")
    spec.write_text(
        json.dumps(
            {
                "path": fn.sys_path(runtime),
                "handler": fn.handler,
                "event": event,
                "function_name": fn.name,
                "memory": fn.memory,
            }
        )
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "TZ": ":UTC",
        "HOME": str(tmp),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
        "AWS_LAMBDA_FUNCTION_NAME": fn.name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "LAMBDA_TASK_ROOT": str(fn.code),
        "_HANDLER": fn.handler,
        # an unsampled trace: Powertools' Tracer and the X-Ray SDK load and run, sending nothing
        "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0",
        **{k: v for k, v in fn.environment.items() if isinstance(v, str)},
        **(environment or {}),
    }
    proc = subprocess.run(
        # /opt and /var/task are read-only in Lambda: bytecode is written under `bytecode`, never
        # next to the sources (the assets hold no __pycache__ afterwards)
        [sys.executable, "-I", "-S", "-X", f"pycache_prefix={bytecode}", str(RUNNER), str(spec), str(out)],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0 and out.is_file(), f"{fn.name}: {proc.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(out.read_text())
    if "error" in result:
        err = result["error"]
        pytest.fail(f"{fn.name}: {err['type']}: {err['message']}\n{err['traceback'][-3000:]}")
    assert not result["outside"], f"{fn.name} loaded modules from outside its package: {result['outside']}"
    return result


def assert_no_bytecode_beside_the_sources(functions: list[DeployedFunction], runtime: Path) -> None:
    """Nothing was written into the read-only /var/task and /opt (the bytecode went elsewhere)."""
    for root in sorted({p for fn in functions for p in (fn.code, *fn.layers)} | {runtime}):
        assert next(root.rglob("__pycache__"), None) is None, f"bytecode written into {root}"


def test_every_function_with_its_layers_fits_lambdas_unzipped_limit(
    functions: list[DeployedFunction], deploy_checks: list[str]
) -> None:
    sizes = {f"{f.stack}/{f.name}": f.unzipped_bytes for f in functions}
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"{name}: {size:,} bytes ({size / MIB:.1f} MiB) unzipped, code + layers")
    largest = max(sizes, key=lambda n: sizes[n])
    big = next(f for f in functions if f"{f.stack}/{f.name}" == largest)
    parts = " + ".join(f"{tree_size(p):,}" for p in (big.code, *big.layers))
    deploy_checks.append(
        f"Lambda unzipped size, largest: {largest} {sizes[largest]:,} bytes = code + layers "
        f"{parts} ({sizes[largest] / MIB:.1f} MiB of 250 MiB); all {len(sizes)}: "
        + ", ".join(f"{n.split('/')[1]} {s / MIB:.1f}" for n, s in sorted(sizes.items()))
        + " MiB"
    )
    over = {n: s for n, s in sizes.items() if s >= LAMBDA_LIMIT}
    assert not over, f"over Lambda's {LAMBDA_LIMIT:,} bytes unzipped: {over}"
    # Layers are unpacked into the same /opt: a file in two of them would be silently replaced
    for fn in functions:
        seen: dict[str, Path] = {}
        for layer in fn.layers:
            for p in layer.rglob("*"):
                if p.is_file():
                    rel = str(p.relative_to(layer))
                    assert rel not in seen, f"{fn.name}: {rel} is in two layers ({seen[rel].name})"
                    seen[rel] = layer


def test_every_native_library_deployed_loads_on_amazon_linux_2(functions: list[DeployedFunction]) -> None:
    # (this machine's newer glibc would load a manylinux_2_28 library that the python3.11 runtime cannot)
    for root in sorted({p for f in functions for p in (f.code, *f.layers)}):
        assert not too_new_for_the_runtime(root), f"{root.name}: {too_new_for_the_runtime(root)[:5]}"


def test_every_handler_imports_with_only_its_assets_and_the_runtime(
    functions: list[DeployedFunction], runtime_like: Path, bytecode: Path, tmp_path: Path
) -> None:
    assert platform.machine() == "x86_64", "the layer holds Linux x86_64 wheels"
    ours = [fn for fn in functions if fn.runtime.startswith("python")]  # (not CDK's own Node.js ones)
    assert {fn.name for fn in ours} >= {name for name, _h, _p in LAMBDA_STEPS.values()}
    for fn in ours:
        assert fn.runtime == "python3.11", f"{fn.name}: runtime {fn.runtime}"
        modules = run_in_lambda(fn, runtime_like, tmp_path, bytecode)["modules"]
        where = {name: Path(file) for name, file in modules.items()}
        assert where["icelake"].is_relative_to(fn.layers[0]), f"{fn.name}: icelake from {where['icelake']}"
        wanted = ["pydantic", "pydantic_settings", "aws_lambda_powertools", "aws_xray_sdk"]
        wanted += ["requests"] if fn.stack == "IcelakeIngest" else []  # fetch and complete: one module
        for dep in wanted:
            assert where[dep].is_relative_to(fn.layers[1]), f"{fn.name}: {dep} from {where[dep]}"
        assert where["boto3"].is_relative_to(runtime_like), f"{fn.name}: boto3 from {where['boto3']}"
        assert where["botocore"].is_relative_to(runtime_like)
        assert not set(NOT_IN_LAMBDA) & set(modules), f"{fn.name} imports {set(NOT_IN_LAMBDA) & set(modules)}"
    assert_no_bytecode_beside_the_sources(ours, runtime_like)


# -- the migrate steps, each in its own isolated interpreter, against moto ---------------------------


def _zstd_table(lake: Lake, name: str, batches: list[list[int]]) -> str:
    """A pyiceberg table whose data files are zstd Parquet, published to the source account."""
    root = lake.local_root / "sales" / name
    root.mkdir(parents=True)
    cat = SqlCatalog(name, uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.create_namespace_if_not_exists("sales")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = cat.create_table(
        f"sales.{name}", schema=schema, properties={"write.parquet.compression-codec": "zstd"}
    )
    for ids in batches:
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}, schema=schema))
    return lake.publish("sales", name, cat.load_table(f"sales.{name}").metadata_location)


def _parquet_codecs(session: boto3.Session, bucket: str) -> set[str]:
    s3 = session.client("s3")
    codecs = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            if obj["Key"].endswith(".parquet"):
                body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
                meta = pq.ParquetFile(io.BytesIO(body)).metadata
                codecs |= {
                    meta.row_group(g).column(c).compression
                    for g in range(meta.num_row_groups)
                    for c in range(meta.num_columns)
                }
    return codecs


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[Lake]:
    with embedded_aws():
        yield build_lake(tmp_path / "local")


def test_migrate_steps_run_from_the_deployed_packages_on_zstd_tables(
    functions: list[DeployedFunction], runtime_like: Path, bytecode: Path, lake: Lake, tmp_path: Path
) -> None:
    by_name = {f.name: f for f in functions}
    steps = {step: by_name[name] for step, (name, _h, _p) in LAMBDA_STEPS.items()}
    local = {ENV_LEDGER_TABLE: lake.env.ledger_table, ENV_ARTIFACTS_BUCKET: lake.env.artifacts_bucket}
    aws = {**LOCAL_CREDENTIALS, "AWS_ENDPOINT_URL": os.environ["AWS_ENDPOINT_URL"]}
    # (the deployed environment, with the names of the stack's ledger and bucket made local)
    for fn in steps.values():
        assert set(fn.environment) >= set(local)

    loaded: dict[str, dict[str, str]] = {}

    def invoke(step: str, event: dict[str, Any]) -> Any:
        env = local | aws
        out = run_in_lambda(steps[step], runtime_like, tmp_path, bytecode, event=event, environment=env)
        loaded[step] = out["modules"]
        return out["result"]

    # Given two source tables whose Parquet files are all zstd (Iceberg's default codec)
    _zstd_table(lake, "orders", [[1, 2, 3], [4, 5]])
    _zstd_table(lake, "customers", [[10, 11]])
    assert _parquet_codecs(lake.source, SOURCE_BUCKET) == {"ZSTD"}

    # When each step handler runs as the state machine calls it, one interpreter per invocation
    run = "smoke-1"
    inventory = invoke("inventory", {"request": lake.request(run), "execution_name": run})
    assert inventory["tables"] == 2
    body = lake_object(inventory["worklist_bucket"], inventory["worklist_key"])
    items = {i["source_table"]: i for i in json.loads(body)}
    planned = {t: invoke("plan", {"item": item}) for t, item in items.items()}
    assert {p["engine"] for p in planned.values()} == {"lambda"}
    for plan in planned.values():
        invoke("copy", {"plan": plan})
        invoke("register", {"plan": plan})
    # Validate reads both tables row by row through pyiceberg's FileIO on s3:// (pyarrow's S3)
    validated = invoke("validate", {"plan": planned["orders"]})
    rolled_back = invoke(
        "rollback",
        {
            "item": items["customers"],
            "plan": planned["customers"],
            "error": {"Error": "Smoke", "Cause": "a step failed after Register"},
        },
    )
    summary = invoke(
        "report",
        {
            "run_id": run,
            "outcomes": [validated, rolled_back],
            "worklist_bucket": inventory["worklist_bucket"],
            "worklist_key": inventory["worklist_key"],
        },
    )

    # Then the validated table is in the target catalog, its files zstd, the rolled-back one gone
    assert validated["status"] == "migrated" and validated["snapshots_validated"] == 2
    assert rolled_back["status"] == "rolled_back"
    assert summary["tables"] == 2 and summary["counts"] == {"migrated": 1, "rolled_back": 1}
    target = catalog_state(lake.target)
    assert set(target) == {"sales.orders"}
    assert target["sales.orders"]["metadata_location"] == validated["target_metadata_location"]
    assert _parquet_codecs(lake.target, TARGET_BUCKET) == {"ZSTD"}
    # with the layer's pyarrow and pyiceberg (not this machine's)
    for module in ("pyarrow", "pyiceberg", "fastavro"):
        assert Path(loaded["validate"][module]).is_relative_to(steps["validate"].layers[1]), module
    assert_no_bytecode_beside_the_sources(list(steps.values()), runtime_like)


def lake_object(bucket: str, key: str) -> bytes:
    return bytes(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def test_the_laptop_harness_is_not_deployed(functions: list[DeployedFunction]) -> None:
    from cdk.build import LOCAL_ONLY

    for fn in functions:
        for root in (fn.code, *fn.layers):
            package = root / "python" / "icelake"
            if not package.is_dir():
                continue
            shipped = [p for p in LOCAL_ONLY if (package / p).exists()]
            assert not shipped, f"{fn.name} ships the local harness: {shipped}"
            assert (
                package / "workflow" / "steps" / "planning.py"
            ).is_file()  # ... and what the handlers need
