"""Credentials never reach the operator's logs: the shapes SDKs and HTTP clients print them
in are redacted by every handler configure_logging installs, and ordinary text is not.

(boto3's own debug output against moto is checked in plugins/aws/tests/test_aws_debug_logs.py.)"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from karpenter_core.operator.logging import (
    REDACTED,
    RedactingFilter,
    configured_logging,
    redact,
)

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLXdlc3QtMiJHMEUCIQDexample=="
SIGNATURE = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl"

# (what a library prints, the secret in it)
LEAKS = [
    (  # botocore.endpoint: the prepared request's headers (bytes values)
        f"headers={{'X-Amz-Date': b'20260101T000000Z', 'X-Amz-Security-Token': b'{TOKEN}', "
        "'Authorization': b'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/"
        f"us-west-2/ec2/aws4_request, SignedHeaders=host;x-amz-date, Signature={SIGNATURE}'}}",
        [TOKEN, SIGNATURE, "AKIAIOSFODNN7EXAMPLE"],
    ),
    (  # botocore.auth: the canonical request, then the signature on its own line
        f"CanonicalRequest:\nPOST\n/\n\nhost:ec2.amazonaws.com\nx-amz-security-token:{TOKEN}\n",
        [TOKEN],
    ),
    (f"Signature:\n{SIGNATURE}", [SIGNATURE]),
    (  # urllib3: a presigned URL's query string
        'https://bucket.s3.amazonaws.com:443 "GET /key?X-Amz-Algorithm=AWS4-HMAC-SHA256'
        "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20260101%2Fus-west-2%2Fs3%2Faws4_request"
        f'&X-Amz-Security-Token={TOKEN}&X-Amz-Signature={SIGNATURE} HTTP/1.1" 200 12',
        [TOKEN, SIGNATURE, "AKIAIOSFODNN7EXAMPLE"],
    ),
    (  # STS AssumeRoleWithWebIdentity: the form body and the XML answer
        f"body=b'Action=AssumeRoleWithWebIdentity&WebIdentityToken={JWT}&Version=2011-06-15'",
        [JWT],
    ),
    (
        f"<Credentials><AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>{SECRET}"
        f"</SecretAccessKey><SessionToken>{TOKEN}</SessionToken></Credentials>",
        [SECRET, TOKEN],
    ),
    (  # the container / EKS Pod Identity credential endpoint's JSON
        f'{{"AccessKeyId": "ASIA1", "SecretAccessKey": "{SECRET}", "Token": "{TOKEN}"}}',
        [SECRET, TOKEN],
    ),
    (f"aws_secret_access_key = {SECRET}\naws_session_token={TOKEN}", [SECRET, TOKEN]),
    (
        f"ReadOnlyCredentials(access_key='ASIA1', secret_key='{SECRET}', token='{TOKEN}')",
        [SECRET, TOKEN],
    ),
    (f"{{'authorization': 'Bearer {JWT}', 'Accept': 'application/json'}}", [JWT]),
    (f"Authorization: Bearer {JWT}", [JWT]),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", ["dXNlcjpwYXNzd29yZA"]),
]


@pytest.mark.parametrize(("text", "secrets"), LEAKS)
def test_every_credential_shape_is_redacted(text: str, secrets: list[str]) -> None:
    out = redact(text)
    assert REDACTED in out
    for secret in secrets:
        assert secret not in out


@pytest.mark.parametrize(
    "text",
    [
        "computed 3 new nodeclaim(s) to fit 20 pod(s)",
        "Basic setup done; Bearer of bad news",
        "Found credentials in environment variables.",
        "Making request for OperationModel(name=DescribeInstances) with params: {'Action': "
        "'DescribeInstances', 'Version': '2016-11-15'}",
        "'X-Amz-Date': b'20260101T000000Z', 'Content-Type': b'application/x-www-form-urlencoded'",
    ],
)
def test_text_without_credentials_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_what_surrounds_a_secret_is_kept() -> None:
    out = redact(f"url=https://x/?X-Amz-Signature={SIGNATURE}&part=2 status=200")
    assert out == f"url=https://x/?X-Amz-Signature={REDACTED}&part=2 status=200"


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def test_every_configured_handler_redacts(tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    with configured_logging("debug", f"{a},{b}") as root:
        ours = [h for h in root.handlers if getattr(h, "_karpenter_json_handler", False)]
        assert len(ours) == 2
        assert all(any(isinstance(f, RedactingFilter) for f in h.filters) for h in ours)
        logging.getLogger("karpenter.test").debug("sending %s", {"X-Amz-Security-Token": TOKEN})
    for path in (a, b):
        (line,) = lines(path)
        assert line["message"] == f"sending {{'X-Amz-Security-Token': '{REDACTED}'}}"


def test_extra_fields_and_exceptions_are_redacted(tmp_path: Path) -> None:
    out = tmp_path / "out.log"
    with configured_logging("info", str(out)):
        try:
            raise RuntimeError(f"request failed: Authorization: Bearer {JWT}")
        except RuntimeError:
            logging.getLogger("karpenter.test").exception(
                "call failed", extra={"request": f"?X-Amz-Signature={SIGNATURE}"}
            )
    text = out.read_text()
    assert JWT not in text and SIGNATURE not in text
    (line,) = lines(out)
    assert line["error"] == f"request failed: Authorization: {REDACTED}"
    assert line["request"] == f"?X-Amz-Signature={REDACTED}"
    assert "RuntimeError" in str(line["stacktrace"])


@pytest.mark.parametrize(("level", "expected"), [("debug", logging.INFO), ("error", logging.ERROR)])
def test_sdk_internals_are_capped_but_never_below_the_chosen_level(
    tmp_path: Path, level: str, expected: int
) -> None:
    with configured_logging(level, str(tmp_path / "out.log")):
        assert logging.getLogger("botocore.auth").level == expected
        assert logging.getLogger("botocore.hooks").level == expected
        assert logging.getLogger("urllib3").level == max(expected, logging.WARNING)


def test_a_configured_block_leaves_logging_as_it_found_it(tmp_path: Path) -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    auth = logging.getLogger("botocore.auth").level
    with configured_logging("debug", str(tmp_path / "out.log")):
        assert len(root.handlers) == len(handlers) + 1
        logging.getLogger("botocore.auth").setLevel(logging.DEBUG)
    assert (root.handlers, root.level) == (handlers, level)
    assert logging.getLogger("botocore.auth").level == auth
