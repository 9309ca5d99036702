"""The kit's fake cloud server (karpenter_core.testing.fakecloud) over real HTTP(S): routes
tried newest first and removable, every request recorded, faults answered before any
route runs, hooks for a cloud's error shape and authorization, and TLS a client trusts
through ``ca_file``. Here because it listens on a loopback socket and serves on a thread
(tests/unit/ allows neither)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from karpenter_core.testing.fakecloud import (
    FakeCloudServer,
    FakeRequest,
    Handler,
    Response,
)


class FakeWidgets(FakeCloudServer):
    """A tiny cloud: widgets by name, one built-in route."""

    server_name = "fake-widgets"
    display_name = "fake Widgets"

    def __init__(self, *, tls: bool = False) -> None:
        super().__init__(tls=tls)
        self.widgets: dict[str, dict[str, Any]] = {"a": {"name": "a"}}

    def builtin_routes(self) -> Sequence[tuple[str, str, Handler]]:
        return [
            ("GET", r"/widgets/(?P<name>[^/]+)", self._get),
            ("POST", r"/widgets", self._create),
            ("GET", r"/boom", self._boom),
        ]

    def _get(self, req: FakeRequest) -> Response:
        with self.lock:
            widget = self.widgets.get(req.match["name"])
        if widget is None:
            return self.error(404, "NotFound", f"no widget {req.match['name']}")
        return 200, {}, widget

    def _create(self, req: FakeRequest) -> Response:
        body = req.json
        with self.lock:
            self.widgets[body["name"]] = body
        return 201, {}, body

    def _boom(self, req: FakeRequest) -> Response:
        raise RuntimeError("handler bug")


class Call:
    """One answer: status, headers, body (JSON when it parses)."""

    def __init__(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.data = data

    @property
    def json(self) -> Any:
        return json.loads(self.data)


def call(
    url: str,
    method: str = "GET",
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> Call:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            return Call(r.status, dict(r.headers.items()), r.read())
    except urllib.error.HTTPError as e:
        with e:
            return Call(e.code, dict(e.headers.items()), e.read())


@pytest.fixture
def fake() -> Iterator[FakeWidgets]:
    with FakeWidgets() as server:
        yield server


def test_builtin_routes_serve_with_named_groups_and_query(fake: FakeWidgets) -> None:
    assert fake.url.startswith("http://127.0.0.1:")
    r = call(fake.url + "/widgets/a?x=1&empty=")
    assert r.status == 200 and r.json == {"name": "a"}
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    [seen] = fake.requests
    assert (seen.method, seen.path, dict(seen.query)) == (
        "GET",
        "/widgets/a",
        {"x": "1", "empty": ""},
    )
    r = call(fake.url + "/widgets", "POST", {"name": "b", "size": 3})
    assert r.status == 201 and fake.widgets["b"] == {"name": "b", "size": 3}
    assert fake.requests[-1].json == {"name": "b", "size": 3}


def test_added_routes_are_tried_first_newest_first_and_can_be_removed(fake: FakeWidgets) -> None:
    first = fake.route("GET", r"/widgets/(?P<name>[^/]+)", lambda req: (200, {}, "first"))
    second = fake.route(
        "get", r"/widgets/(?P<name>a)", lambda req: (200, {"X-Name": req.match["name"]}, b"second")
    )
    r = call(fake.url + "/widgets/a")
    assert (r.status, r.data, r.headers["X-Name"]) == (200, b"second", "a")
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    assert call(fake.url + "/widgets/zzz").data == b"first"  # the newest does not match
    second()
    assert call(fake.url + "/widgets/a").data == b"first"
    first()
    first()  # removing twice is harmless
    assert call(fake.url + "/widgets/a").json == {"name": "a"}  # the built-in again


def test_routes_added_twice_are_removed_one_at_a_time(fake: FakeWidgets) -> None:
    def handler(req: FakeRequest) -> Response:
        return 200, {}, "added"

    remove_one = fake.route("GET", r"/widgets/a", handler)
    remove_two = fake.route("GET", r"/widgets/a", handler)
    remove_one()
    assert call(fake.url + "/widgets/a").data == b"added"
    remove_two()
    assert call(fake.url + "/widgets/a").json == {"name": "a"}


def test_unknown_routes_and_handler_bugs_answer_the_clouds_error(fake: FakeWidgets) -> None:
    r = call(fake.url + "/nowhere", "DELETE")
    assert r.status == 404
    assert r.json == {
        "error": {"code": "NoRouteFound", "message": "fake Widgets has no route DELETE /nowhere"}
    }
    r = call(fake.url + "/boom")
    assert r.status == 500
    assert r.json["error"]["code"] == "FakeHandlerError"
    assert "handler bug" in r.json["error"]["message"]


def test_requests_are_recorded_and_filtered(fake: FakeWidgets) -> None:
    call(fake.url + "/widgets/a")
    call(fake.url + "/widgets/b")
    call(fake.url + "/widgets", "POST", {"name": "c"})
    assert [r.path for r in fake.requests_to("get", r"/widgets/.*")] == [
        "/widgets/a",
        "/widgets/b",
    ]
    assert [r.path for r in fake.requests_to("POST", r"/widgets")] == ["/widgets"]
    assert fake.requests_to("GET", r"/widgets") == []  # a full match
    assert fake.requests[0].match == {}  # the recorded copy is the request as received


def test_fail_next_answers_before_any_route_runs(fake: FakeWidgets) -> None:
    fake.fail_next("POST", r"/widgets", status=503, code="Busy", message="later", times=2)
    for _ in range(2):
        r = call(fake.url + "/widgets", "POST", {"name": "x"})
        assert r.status == 503 and r.json == {"error": {"code": "Busy", "message": "later"}}
    assert "x" not in fake.widgets  # nothing was created
    assert call(fake.url + "/widgets", "POST", {"name": "x"}).status == 201
    assert len(fake.requests_to("POST", r"/widgets")) == 3  # failed requests are recorded


def test_fail_next_matches_method_and_whole_path_and_adds_headers(fake: FakeWidgets) -> None:
    fake.fail_next("GET", r"/widgets/b", headers={"X-Why": "injected"})
    assert call(fake.url + "/widgets/a").status == 200  # another path
    assert call(fake.url + "/widgets", "POST", {"name": "b"}).status == 201  # another method
    r = call(fake.url + "/widgets/b")
    assert (r.status, r.headers["X-Why"], r.json["error"]["code"]) == (
        500,
        "injected",
        "InternalServerError",
    )
    assert call(fake.url + "/widgets/b").status == 200


def test_throttle_next_is_a_429_with_retry_after_once(fake: FakeWidgets) -> None:
    fake.throttle_next("GET", r"/widgets/.*", retry_after="2")
    r = call(fake.url + "/widgets/a")
    assert (r.status, r.headers["Retry-After"]) == (429, "2")
    assert r.json["error"]["code"] == "TooManyRequests"
    assert call(fake.url + "/widgets/a").status == 200
    fake.throttle_next("GET", r"/widgets/a", retry_after=None, code="slowDown")
    r = call(fake.url + "/widgets/a")
    assert r.status == 429 and "Retry-After" not in r.headers
    assert r.json["error"]["code"] == "slowDown"


def test_answer_next_serves_any_canned_answer(fake: FakeWidgets) -> None:
    fake.answer_next("GET", r"/widgets/a", (200, {"X-Canned": "1"}, "canned"))
    r = call(fake.url + "/widgets/a")
    assert (r.status, r.data, r.headers["X-Canned"]) == (200, b"canned", "1")


def test_reset_forgets_requests_and_faults_but_keeps_routes(fake: FakeWidgets) -> None:
    fake.route("GET", r"/extra", lambda req: (204, {}, None))
    fake.fail_next("GET", r"/widgets/a")
    call(fake.url + "/extra")
    fake.reset()
    assert fake.requests == []
    assert call(fake.url + "/widgets/a").status == 200
    r = call(fake.url + "/extra")
    assert r.status == 204 and r.data == b""


class Guarded(FakeWidgets):
    """A cloud whose hooks authorize, add headers and decode path parameters."""

    unquote_match = True

    def authorize(self, request: FakeRequest, handler: Handler) -> Response | None:
        if request.headers.get("Authorization") != "Bearer ok":
            return self.error(401, "Unauthorized", "no token")
        return None

    def response_headers(self, request: FakeRequest) -> Mapping[str, str]:
        return {"X-Request-Path": request.path}


def test_hooks_authorize_add_headers_and_unquote_groups() -> None:
    with Guarded() as fake:
        fake.widgets["a b"] = {"name": "a b"}
        r = call(fake.url + "/widgets/a%20b")
        assert r.status == 401 and r.json["error"]["code"] == "Unauthorized"
        assert r.headers["X-Request-Path"] == "/widgets/a%20b"
        r = call(fake.url + "/widgets/a%20b", headers={"Authorization": "Bearer ok"})
        assert r.status == 200 and r.json == {"name": "a b"}
        r = call(fake.url + "/nowhere", headers={"Authorization": "Bearer ok"})
        assert r.status == 404  # no route: authorization is not asked


def test_tls_serves_https_that_trusts_only_its_ca_file() -> None:
    fake = FakeWidgets(tls=True)
    with pytest.raises(RuntimeError, match="not started"):
        _ = fake.url
    with fake:
        assert fake.url.startswith("https://127.0.0.1:")
        directory = fake.directory
        trusted = ssl.create_default_context(cafile=fake.ca_file)
        assert call(fake.url + "/widgets/a", context=trusted).json == {"name": "a"}
        with pytest.raises(urllib.error.URLError):
            call(fake.url + "/widgets/a", context=ssl.create_default_context())
    assert not directory.exists()  # stop() removes the certificate
    with pytest.raises(RuntimeError, match="not started"):
        _ = fake.url


def test_plain_http_has_no_ca_file(fake: FakeWidgets) -> None:
    with pytest.raises(RuntimeError, match="plain HTTP"):
        _ = fake.ca_file
