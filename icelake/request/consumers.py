"""A request's `consumers`: whether an assessment looks for what reads the selected tables
(icelake/assess/consumers/), and which S3 prefixes hold code to scan besides the services'
own definitions (MWAA's DAG folder, scripts kept elsewhere)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

_PREFIX = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$")


class ConsumersSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    scan: bool = True  # False: the assessment writes no rewire.json (`icelake assess --no-consumers`)
    code_prefixes: list[str] = Field(default_factory=list)  # s3://bucket/prefix of code files

    @field_validator("code_prefixes")
    @classmethod
    def _prefixes(cls, v: list[str]) -> list[str]:
        for i, prefix in enumerate(v):
            if not _PREFIX.match(prefix):
                raise ValueError(
                    f"code_prefixes[{i}] {prefix!r} is not an s3://bucket/prefix URI: give one such as "
                    "'s3://my-mwaa-bucket/dags/'"
                )
        return v
