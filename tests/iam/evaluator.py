"""Recorded AWS calls -> IAM requests -> decisions of @cloud-copilot/iam-simulate on the synthesized
templates. The one table of API operations to IAM actions is OPERATIONS below."""

from __future__ import annotations

import importlib
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from icelake.aws import clients
from tests.iam import s3tables

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "iam_eval.mjs"  # @cloud-copilot/iam-simulate, one process for all
REGION = "us-east-1"

# One request to evaluate: action on resource ARN (with the request's condition keys, if any).
Need = tuple[str, str] | tuple[str, str, dict[str, Any]]


def _s3_object(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def _s3_copy_source(p: dict[str, Any]) -> str:
    src = p["CopySource"]
    if isinstance(src, dict):
        return _s3_object(src["Bucket"], src["Key"])
    bucket, _, key = str(src).lstrip("/").partition("/")
    return _s3_object(bucket, key.split("?versionId=")[0])


def _glue_table(p: dict[str, Any], a: str) -> list[str]:
    db = p["DatabaseName"]
    name = p.get("Name") or p.get("TableName") or (p.get("TableInput") or {}).get("Name")
    return [
        f"arn:aws:glue:{REGION}:{a}:catalog",
        f"arn:aws:glue:{REGION}:{a}:database/{db}",
        f"arn:aws:glue:{REGION}:{a}:table/{db}/{name}",
    ]


def _glue_db(p: dict[str, Any], a: str) -> list[str]:
    db = p.get("Name") or p.get("DatabaseName") or (p.get("DatabaseInput") or {}).get("Name")
    return [f"arn:aws:glue:{REGION}:{a}:catalog", f"arn:aws:glue:{REGION}:{a}:database/{db}"]


def _glue_tables_of(p: dict[str, Any], a: str) -> list[str]:
    db = p["DatabaseName"]
    return [*_glue_db({"Name": db}, a), f"arn:aws:glue:{REGION}:{a}:table/{db}/*"]


def _each(action: str, arns: Callable[[dict[str, Any], str], list[str]]) -> Callable[..., list[Need]]:
    return lambda p, a: [(action, arn) for arn in arns(p, a)]


def _obj(action: str) -> Callable[..., list[Need]]:
    return lambda p, a: [(action, _s3_object(p["Bucket"], p["Key"]))]


def _bucket(action: str) -> Callable[..., list[Need]]:
    return lambda p, a: [(action, f"arn:aws:s3:::{p['Bucket']}")]


def _anywhere(action: str) -> Callable[..., list[Need]]:
    """An action without resource-level permissions: IAM sees "*"."""
    return lambda p, a: [(action, "*")]


def _workgroup(action: str) -> Callable[..., list[Need]]:
    """An Athena action on one workgroup (the call's WorkGroup, else the default one)."""
    return lambda p, a: [(action, f"arn:aws:athena:{REGION}:{a}:workgroup/{p.get('WorkGroup', 'primary')}")]


def _list(p: dict[str, Any], a: str) -> list[Need]:
    return [("s3:ListBucket", f"arn:aws:s3:::{p['Bucket']}", {"s3:prefix": p.get("Prefix", "")})]


def _write(p: dict[str, Any], a: str) -> list[Need]:
    """A write of an object, and the data key S3 asks KMS for under the caller's name (SSE-KMS)."""
    out: list[Need] = [("s3:PutObject", _s3_object(p["Bucket"], p["Key"]))]
    if p.get("SSEKMSKeyId"):
        out.append(("kms:GenerateDataKey", p["SSEKMSKeyId"]))
    return out


def _copy(p: dict[str, Any], a: str) -> list[Need]:
    return [("s3:GetObject", _s3_copy_source(p)), *_write(p, a)]


def _ddb(action: str) -> Callable[..., list[Need]]:
    return lambda p, a: [(action, f"arn:aws:dynamodb:{REGION}:{a}:table/{p['TableName']}")]


def _ddb_transact(p: dict[str, Any], a: str) -> list[Need]:
    out = []
    for item in p["TransactItems"]:
        ((kind, body),) = item.items()
        action = {
            "Put": "PutItem",
            "Update": "UpdateItem",
            "Delete": "DeleteItem",
            "ConditionCheck": "ConditionCheckItem",
        }[kind]
        out.append((f"dynamodb:{action}", f"arn:aws:dynamodb:{REGION}:{a}:table/{body['TableName']}"))
    return out


def _kms_key(action: str) -> Callable[..., list[Need]]:
    def f(p: dict[str, Any], a: str) -> list[Need]:
        key = p["KeyId"]
        return [(action, key if key.startswith("arn:") else f"arn:aws:kms:{REGION}:{a}:key/{key}")]

    return f


# (service, operation) -> the IAM requests that operation makes, from its params and the signer's account.
OPERATIONS: dict[tuple[str, str], Callable[[dict[str, Any], str], list[Need]]] = {
    ("s3", "GetObject"): _obj("s3:GetObject"),
    ("s3", "HeadObject"): _obj("s3:GetObject"),
    ("s3", "GetObjectAttributes"): lambda p, a: [
        ("s3:GetObject", _s3_object(p["Bucket"], p["Key"])),
        ("s3:GetObjectAttributes", _s3_object(p["Bucket"], p["Key"])),
    ],
    ("s3", "PutObject"): _write,
    ("s3", "CreateMultipartUpload"): _write,
    ("s3", "UploadPart"): _obj("s3:PutObject"),
    ("s3", "CompleteMultipartUpload"): _obj("s3:PutObject"),
    ("s3", "AbortMultipartUpload"): _obj("s3:AbortMultipartUpload"),
    ("s3", "CopyObject"): _copy,
    ("s3", "UploadPartCopy"): lambda p, a: [
        ("s3:GetObject", _s3_copy_source(p)),
        ("s3:PutObject", _s3_object(p["Bucket"], p["Key"])),
    ],
    ("s3", "DeleteObject"): _obj("s3:DeleteObject"),
    ("s3", "DeleteObjects"): lambda p, a: [
        ("s3:DeleteObject", _s3_object(p["Bucket"], o["Key"])) for o in p["Delete"]["Objects"]
    ],
    ("s3", "ListObjectsV2"): _list,
    ("s3", "ListObjects"): _list,
    ("s3", "ListMultipartUploads"): _bucket("s3:ListBucketMultipartUploads"),
    ("s3", "HeadBucket"): _bucket("s3:ListBucket"),
    ("s3", "GetBucketLocation"): _bucket("s3:GetBucketLocation"),
    # the assessment's bucket comparison (icelake/assess/gather/buckets.py)
    ("s3", "GetBucketVersioning"): _bucket("s3:GetBucketVersioning"),
    ("s3", "GetBucketEncryption"): _bucket("s3:GetEncryptionConfiguration"),
    ("s3", "GetBucketLifecycleConfiguration"): _bucket("s3:GetLifecycleConfiguration"),
    ("s3", "GetObjectLockConfiguration"): _bucket("s3:GetBucketObjectLockConfiguration"),
    ("s3", "GetBucketReplication"): _bucket("s3:GetReplicationConfiguration"),
    ("s3", "GetBucketNotificationConfiguration"): _bucket("s3:GetBucketNotification"),
    ("s3", "ListBucketIntelligentTieringConfigurations"): _bucket("s3:GetIntelligentTieringConfiguration"),
    ("glue", "GetTable"): _each("glue:GetTable", _glue_table),
    ("glue", "GetTables"): _each("glue:GetTables", _glue_tables_of),
    ("glue", "CreateTable"): _each("glue:CreateTable", _glue_table),
    ("glue", "UpdateTable"): _each("glue:UpdateTable", _glue_table),
    ("glue", "DeleteTable"): _each("glue:DeleteTable", _glue_table),
    ("glue", "GetDatabase"): _each("glue:GetDatabase", _glue_db),
    ("glue", "GetDatabases"): lambda p, a: [("glue:GetDatabases", f"arn:aws:glue:{REGION}:{a}:catalog")],
    ("glue", "CreateDatabase"): _each("glue:CreateDatabase", _glue_db),
    ("glue", "StartJobRun"): lambda p, a: [
        ("glue:StartJobRun", f"arn:aws:glue:{REGION}:{a}:job/{p['JobName']}")
    ],
    ("glue", "GetJobRun"): lambda p, a: [("glue:GetJobRun", f"arn:aws:glue:{REGION}:{a}:job/{p['JobName']}")],
    ("dynamodb", "GetItem"): _ddb("dynamodb:GetItem"),
    ("dynamodb", "PutItem"): _ddb("dynamodb:PutItem"),
    ("dynamodb", "UpdateItem"): _ddb("dynamodb:UpdateItem"),
    ("dynamodb", "DeleteItem"): _ddb("dynamodb:DeleteItem"),
    ("dynamodb", "Query"): _ddb("dynamodb:Query"),
    ("dynamodb", "TransactWriteItems"): _ddb_transact,
    ("kms", "Decrypt"): _kms_key("kms:Decrypt"),
    ("kms", "GenerateDataKey"): _kms_key("kms:GenerateDataKey"),
    ("kms", "DescribeKey"): _kms_key("kms:DescribeKey"),
    ("sts", "AssumeRole"): lambda p, a: [
        ("sts:AssumeRole", p["RoleArn"], {"sts:ExternalId": p["ExternalId"]} if p.get("ExternalId") else {})
    ],
    ("sts", "GetCallerIdentity"): lambda p, a: [],  # never needs a permission
    ("secretsmanager", "GetSecretValue"): lambda p, a: [
        (
            "secretsmanager:GetSecretValue",
            p["SecretId"]
            if p["SecretId"].startswith("arn:")
            else f"arn:aws:secretsmanager:{REGION}:{a}:secret:{p['SecretId']}-AbCdEf",
        )
    ],
    ("stepfunctions", "DescribeExecution"): lambda p, a: [("states:DescribeExecution", p["executionArn"])],
    ("stepfunctions", "StartExecution"): lambda p, a: [("states:StartExecution", p["stateMachineArn"])],
    ("stepfunctions", "ListStateMachines"): _anywhere("states:ListStateMachines"),
    # the assessment's consumer scan (icelake/assess/consumers/): listings IAM sees as "*", reads of
    # one workgroup or state machine by its ARN
    ("stepfunctions", "DescribeStateMachine"): lambda p, a: [
        ("states:DescribeStateMachine", p["stateMachineArn"])
    ],
    ("glue", "GetJobs"): _anywhere("glue:GetJobs"),
    ("glue", "GetCrawlers"): _anywhere("glue:GetCrawlers"),
    ("lambda", "ListFunctions"): _anywhere("lambda:ListFunctions"),
    ("athena", "ListWorkGroups"): _anywhere("athena:ListWorkGroups"),
    ("athena", "ListNamedQueries"): _workgroup("athena:ListNamedQueries"),
    ("athena", "ListPreparedStatements"): _workgroup("athena:ListPreparedStatements"),
    ("athena", "GetPreparedStatement"): _workgroup("athena:GetPreparedStatement"),
    # the named queries' workgroups are not in the call: IAM checks the workgroup each query is in
    ("athena", "BatchGetNamedQuery"): lambda p, a: [
        ("athena:BatchGetNamedQuery", f"arn:aws:athena:{REGION}:{a}:workgroup/primary")
    ],
    ("sns", "Publish"): lambda p, a: [("sns:Publish", p["TopicArn"])],
    ("events", "PutEvents"): lambda p, a: [
        ("events:PutEvents", f"arn:aws:events:{REGION}:{a}:event-bus/{e.get('EventBusName', 'default')}")
        for e in p["Entries"]
    ],
    # Step Functions service integrations (from the execution history; signed by the state machine role)
    ("lambda", "Invoke"): lambda p, a: [
        (
            "lambda:InvokeFunction",
            p["FunctionName"]
            if p["FunctionName"].startswith("arn:")
            else f"arn:aws:lambda:{REGION}:{a}:function:{p['FunctionName']}",
        )
    ],
    ("glue", "StartJobRun.sync"): lambda p, a: [
        (action, f"arn:aws:glue:{REGION}:{a}:job/{p['JobName']}")
        for action in ("glue:StartJobRun", "glue:GetJobRun", "glue:GetJobRuns", "glue:BatchStopJobRun")
    ],
    # Lake Formation's IAM actions have no resource-level permissions: Lake Formation itself decides
    # on which resources a principal may grant (it must hold the grant option there).
    **{
        ("lakeformation", op): _anywhere(f"lakeformation:{op}")
        for op in (
            "GrantPermissions",
            "ListPermissions",
            "ListDataCellsFilter",
            "GetResourceLFTags",
            "GetLFTag",
            "CreateLFTag",
            "UpdateLFTag",
            "AddLFTagsToResource",
        )
    },
}


@dataclass(frozen=True)
class Call:
    principal: str  # role ARN that signed it
    service: str
    operation: str
    params: dict[str, Any]
    # The object read was not there: S3 answers 404 only to a caller that may also list the bucket
    # (403 otherwise), and icelake reads "absent" from a 404 alone.
    missing: bool = False

    @property
    def account(self) -> str:
        return self.principal.split(":")[4]

    def needs(
        self, bucket_keys: dict[str, str] | None = None, tables: s3tables.Tables | None = None
    ) -> list[Need]:
        """The IAM requests of the call; `bucket_keys` (bucket -> default SSE-KMS key) adds the KMS
        requests S3 makes under the caller's name for objects in those buckets; `tables` is what IAM
        knows of S3 Tables' tables (their ARNs, tags and storage buckets: tests/iam/s3tables.py)."""
        if self.service == "s3tables":
            return [*s3tables.needs(self.operation, self.params, tables)]
        if self.service == "s3" and tables is not None and self.params.get("Bucket") in tables.storage:
            return [*s3tables.storage_needs(self.operation, self.params, tables)]
        mapper = OPERATIONS.get((self.service, self.operation))
        if mapper is None:
            raise AssertionError(
                f"{self.service}:{self.operation} by {self.principal} has no IAM mapping: add it to "
                "tests/iam/evaluator.py OPERATIONS"
            )
        needs = mapper(self.params, self.account) + self._bucket_kms(bucket_keys or {})
        if self.missing:
            bucket, key = self.params["Bucket"], self.params["Key"]
            needs.append(("s3:ListBucket", f"arn:aws:s3:::{bucket}", {"s3:prefix": key}))
        return needs

    def _bucket_kms(self, bucket_keys: dict[str, str]) -> list[Need]:
        if self.service != "s3":
            return []
        via_s3 = {"kms:ViaService": f"s3.{REGION}.amazonaws.com", "kms:CallerAccount": self.account}
        out: list[Need] = []
        if self.operation in _S3_READS_OBJECT:
            bucket = self.params["Bucket"]
            if self.operation in ("CopyObject", "UploadPartCopy"):
                bucket = _s3_copy_source(self.params).removeprefix("arn:aws:s3:::").split("/", 1)[0]
            if bucket in bucket_keys:
                out.append(("kms:Decrypt", bucket_keys[bucket], via_s3))
        encrypts = self.operation in _S3_WRITES_OBJECT and not self.params.get("SSEKMSKeyId")
        if encrypts and self.params["Bucket"] in bucket_keys:
            out.append(("kms:GenerateDataKey", bucket_keys[self.params["Bucket"]], via_s3))
        return out


# S3 operations that decrypt an object (of the copy source, for copies) or encrypt a new one.
_S3_READS_OBJECT = {"GetObject", "CopyObject", "UploadPartCopy", "UploadPart", "CompleteMultipartUpload"}
_S3_WRITES_OBJECT = {"PutObject", "CopyObject", "CreateMultipartUpload"}


@dataclass
class Recorder:
    """Every call made through icelake's sessions while recording, with the role that signed it:
    an assumed role's session knows its role; default credentials are the running Lambda's or Glue
    job's role (`default_principal`)."""

    default_principal: Callable[[], str | None]
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _last: threading.local = field(default_factory=threading.local)  # this thread's last call

    def hook(self, core: Any, model: Any, params: dict[str, Any]) -> None:
        principal = getattr(core, clients.ROLE_ATTR, None) or self.default_principal()
        if principal is None:
            return  # the test harness itself (setup, assertions)
        service = model.service_model.service_name
        call = Call(
            principal,
            "stepfunctions" if service == "states" else service,
            model.name,
            json.loads(json.dumps(params, default=str)),
        )
        with self.lock:
            self.calls.append(call)
            self._last.index = len(self.calls) - 1

    def answered(self, model: Any, status: int) -> None:
        """Marks an object read that found nothing (404) as `missing`."""
        index = getattr(self._last, "index", None)
        if index is None or status != 404:
            return
        with self.lock:
            call = self.calls[index]
            read = model.name in ("HeadObject", "GetObject")
            if read and call.service == "s3" and call.operation == model.name:
                self.calls[index] = replace(call, missing=True)

    @contextmanager
    def recording(self) -> Iterator[Recorder]:
        clients.add_call_hook(self.hook)
        clients.add_answer_hook(self.answered)
        try:
            yield self
        finally:
            clients.remove_answer_hook(self.answered)
            clients.remove_call_hook(self.hook)


@contextmanager
def state_machine_recording(recorder: Recorder, principal: str) -> Iterator[None]:
    """Every service call the embedded Step Functions interpreter makes while recording, in and out
    of Map iterations (which the execution history does not show), signed by the state machine's
    role. All of them go through moto's `boto_client_for`, whose clients get the recorder's hook."""
    sfn_clients: Any = importlib.import_module("moto.stepfunctions.parser.asl.utils.boto_client")
    real_boto3 = sfn_clients.boto3

    def hook(model: Any, params: dict[str, Any], **_: Any) -> None:
        service, operation = model.service_model.service_name, model.name
        if (service, operation) == ("glue", "StartJobRun"):
            operation = "StartJobRun.sync"  # every Glue task of the ASL waits for its run
        call = Call(principal, service, operation, json.loads(json.dumps(params, default=str)))
        with recorder.lock:
            recorder.calls.append(call)

    def recording_client(*args: Any, **kwargs: Any) -> Any:
        made = real_boto3.client(*args, **kwargs)
        made.meta.events.register("before-parameter-build.*.*", hook)
        return made

    sfn_clients.boto3 = SimpleNamespace(client=recording_client)
    try:
        yield
    finally:
        sfn_clients.boto3 = real_boto3


@dataclass(frozen=True)
class Request:
    id: str
    principal: str
    action: str
    resource: str
    resource_account: str
    identity_policies: list[dict[str, Any]]
    resource_policy: dict[str, Any] | None = None
    context: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The request as tools/iam_eval.mjs reads it."""
        return {
            "principal": self.principal,
            "action": self.action,
            "resource": self.resource,
            "accountId": self.resource_account,
            "identityPolicies": [p["policy"] for p in self.identity_policies],
            "resourcePolicy": self.resource_policy,
            "context": {
                "aws:PrincipalArn": self.principal,
                "aws:PrincipalAccount": self.principal.split(":")[4],
                "aws:PrincipalType": "AssumedRole",
                "aws:SecureTransport": "true",
                **self.context,
            },
        }


def simulate(requests: list[Request]) -> dict[str, str]:
    """id -> decision ("Allowed", "ImplicitlyDenied", "ExplicitlyDenied", or "Error: ...")."""
    if not (REPO / "node_modules" / "@cloud-copilot" / "iam-simulate").is_dir():
        raise AssertionError("node_modules/@cloud-copilot/iam-simulate is missing: run `make setup`")
    proc = subprocess.run(
        ["node", str(SCRIPT)],
        input=json.dumps([r.as_json() for r in requests]),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = json.loads(proc.stdout)
    return {
        r.id: a["decision"] if a["decision"] != "Error" else f"Error: {json.dumps(a['errors'])}"
        for r, a in zip(requests, answers, strict=True)
    }
