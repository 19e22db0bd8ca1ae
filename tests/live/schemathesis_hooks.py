"""Schemathesis hooks of the stateful run (test_openapi.py), loaded by ``st run`` from
SCHEMATHESIS_HOOKS: generated creates name what this server serves, every other create
of each kind is replaced by a valid one (a body generated from the SDK's whole unions is
rarely one this server accepts, and a chain of calls starts only from a create that
succeeded), and every answer is logged (operation and status) for the test to check what
the run reached."""

from __future__ import annotations

import collections
import json
import os
from typing import Any

import schemathesis

from tests.helpers import VALID_CREATES

_creates: collections.Counter[str] = collections.Counter()


@schemathesis.hook
def before_call(context: Any, case: schemathesis.Case, kwargs: dict[str, Any]) -> None:
    label = case.operation.label
    if label in VALID_CREATES:
        _creates[label] += 1
        if _creates[label] % 2 == 0:
            case.body = {**VALID_CREATES[label]}
    if not isinstance(case.body, dict):
        return
    if label == "POST /v1/responses":
        case.body["model"] = "echo"
    elif label.startswith("POST /v1/webhook_endpoints"):
        if "url" in case.body or label == "POST /v1/webhook_endpoints":
            case.body["url"] = os.environ["HOOKS_RECEIVER_URL"]
        if "event_types" in case.body:
            case.body["event_types"] = ["response.completed"]


@schemathesis.hook
def after_call(context: Any, case: schemathesis.Case, response: Any) -> None:
    with open(os.environ["HOOKS_CALL_LOG"], "a") as log:
        log.write(json.dumps({"operation_id": case.operation.definition.raw.get("operationId"),
                              "status": response.status_code}) + "\n")
