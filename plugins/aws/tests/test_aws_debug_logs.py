"""At LOG_LEVEL=debug the operator logs boto3's requests to moto's server without the
session credentials: not the secret key, not the session token, not the SigV4 signature."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import boto3
import pytest
from botocore.config import Config

from karpenter_core.operator.logging import configured_logging

REGION = "us-west-2"
ACCESS_KEY = "ASIAQEXAMPLEKEYID123"
SECRET = "Zm9vYmFyc2VjcmV0a2V5ZXhhbXBsZS9rZXkx"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLEsessionTOKENvalue/////wEaCXVzLXdlc3QtMi=="


@pytest.fixture
def debug_log(tmp_path: Path) -> Iterator[Path]:
    """The root logger configured as ``karpenter serve`` does at LOG_LEVEL=debug."""
    path = tmp_path / "operator.log"
    with configured_logging("debug", str(path)):
        yield path


def session_client(
    service: str, endpoint: str, config: Config | None = None
) -> tuple[Any, list[str]]:
    """A client with session credentials; the Authorization headers it sends are kept."""
    client = boto3.client(
        service,
        config=config,
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET,
        aws_session_token=TOKEN,
    )
    sent: list[str] = []

    def keep(request: Any, **_: Any) -> None:
        sent.append(request.headers["Authorization"].decode())

    client.meta.events.register("before-send", keep)
    return client, sent


def signatures(authorizations: list[str]) -> list[str]:
    return [a.rsplit("Signature=", 1)[1] for a in authorizations]


def logged(path: Path) -> tuple[str, list[dict[str, Any]]]:
    text = path.read_text()
    return text, [json.loads(line) for line in text.splitlines() if line]


def test_a_debug_logged_ec2_call_shows_the_request_but_no_credential(
    moto_endpoint: str, aws_env: None, debug_log: Path
) -> None:
    ec2, sent = session_client("ec2", moto_endpoint)
    ec2.describe_instances()
    text, lines = logged(debug_log)
    assert sent, "the call was not signed"
    for secret in [SECRET, TOKEN, ACCESS_KEY, *signatures(sent)]:
        assert secret not in text
    requests = [line["message"] for line in lines if line["logger"] == "botocore.endpoint"]
    assert any("DescribeInstances" in m for m in requests)
    sending = [m for m in requests if m.startswith("Sending http request")]
    assert sending and all("'Authorization': b'REDACTED'" in m for m in sending)
    assert all("'X-Amz-Security-Token': b'REDACTED'" in m for m in sending)


def test_signing_internals_and_credential_responses_stay_redacted_when_let_through(
    moto_endpoint: str, aws_env: None, debug_log: Path
) -> None:
    # The level caps are a second line: with botocore's signer and parser at debug anyway,
    # the canonical request, the signature and STS's returned credentials are redacted.
    for name in ("botocore.auth", "botocore.parsers"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    sts, sent = session_client("sts", moto_endpoint)
    creds = sts.assume_role(RoleArn="arn:aws:iam::123456789012:role/node", RoleSessionName="node")[
        "Credentials"
    ]
    text, lines = logged(debug_log)
    loggers = {line["logger"] for line in lines}
    assert {"botocore.auth", "botocore.parsers", "botocore.endpoint"} <= loggers
    assert any(str(line["message"]).startswith("CanonicalRequest") for line in lines)
    for secret in [
        SECRET,
        TOKEN,
        *signatures(sent),
        creds["SecretAccessKey"],
        creds["SessionToken"],
    ]:
        assert secret not in text


@pytest.mark.parametrize(("version", "param"), [("s3v4", "X-Amz-Signature"), ("s3", "Signature")])
def test_a_presigned_url_logged_at_debug_keeps_its_path_but_not_its_signature(
    moto_endpoint: str, aws_env: None, debug_log: Path, version: str, param: str
) -> None:
    s3, _ = session_client("s3", moto_endpoint, Config(signature_version=version))
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": "k"})
    query = parse_qs(urlsplit(url).query)
    signature = query[param][0]
    logging.getLogger("karpenter.aws").debug("fetching %s", url)
    text, lines = logged(debug_log)
    for secret in (signature, quote(signature, safe=""), TOKEN, quote(TOKEN, safe="")):
        assert secret not in text
    (line,) = [line for line in lines if line["logger"] == "aws"]
    assert "/b/k?" in line["message"] and f"{param}=REDACTED" in line["message"]
