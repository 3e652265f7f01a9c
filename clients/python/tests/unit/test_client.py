"""testdbd.Client against a stub of the REST API: no daemon needed."""

import json
import os
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import testdbd
from testdbd import _cleanup

LEASE = {
    "id": "l-1", "template": "app", "strategy": "STRATEGY_SNAPSHOT", "worker": "w", "database": "tdb_w",
    "host": "127.0.0.1", "port": 3306, "user": "u", "password": "p", "url": "mysql://u:p@127.0.0.1:3306/tdb_w",
    "dsn": "", "ttl_seconds": 600, "resets": "7", "template_hash": "h1",
}


class Stub:
    """A REST API that answers from a script: routes[(method, path)] is a
    list of (status, body) answers, used in order (the last one repeats)."""

    def __init__(self):
        self.routes = {}
        self.requests = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                stub.requests.append((self.command, self.path, dict(self.headers), body))
                answers = stub.routes.get((self.command, self.path)) or [(404, {"code": 5, "message": "no route"})]
                status, payload = answers.pop(0) if len(answers) > 1 else answers[0]
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_DELETE = _serve

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.addr = "127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub():
    s = Stub()
    yield s
    s.close()


def test_int64_fields_as_strings_or_numbers(stub):
    stub.routes[("GET", "/v1/leases/l-1")] = [(200, LEASE)]
    stub.routes[("GET", "/v1/leases/l-2")] = [(200, {**LEASE, "id": "l-2", "resets": 7})]
    stub.routes[("GET", "/v1/stats")] = [(200, {"acquire": {"count": "9223372036854775807", "p50_ms": 0.5},
                                                "resets": [{"strategy": "STRATEGY_SNAPSHOT", "fallbacks": "2"}]})]
    c = testdbd.Client(stub.addr, token="")
    assert c.get_lease("l-1")["resets"] == 7
    assert c.get_lease("l-2")["resets"] == 7
    stats = c._call("GET", "/v1/stats")
    assert stats["acquire"]["count"] == 2**63 - 1
    assert stats["resets"][0]["fallbacks"] == 2
    assert stats["acquire"]["p50_ms"] == 0.5


def test_errors_carry_the_daemons_message(stub):
    msg = 'no template named "app": create it with EnsureTemplate (POST /v1/templates)'
    stub.routes[("POST", "/v1/leases")] = [(404, {"code": 5, "message": msg, "details": []})]
    with pytest.raises(testdbd.TestdbdError) as e:
        testdbd.Client(stub.addr).acquire("app", "w")
    assert msg in str(e.value) and "POST /v1/leases" in str(e.value)
    assert (e.value.code, e.value.status) == (5, 404)


def test_a_lease_ended_by_testdbd_says_why(stub):
    """Resets and renews of a lease that testdbd ended raise with the
    daemon's reason; the worker's release at the session's end warns
    with it."""
    from testdbd.pytest_plugin import TestdbdWarning, Worker

    reason = ("its database tdb_w grew to 530M, over the space a lease may use (--lease-space=512M); it was dropped; "
              "its credentials no longer work: acquire a new lease")
    stub.routes[("POST", "/v1/leases/l-1:reset")] = [(503, {"code": 14, "message": "lease l-1 ended: " + reason})]
    stub.routes[("DELETE", "/v1/leases/l-1")] = [(200, {**LEASE, "state": "failed", "ended_reason": reason})]
    c = testdbd.Client(stub.addr)
    with pytest.raises(testdbd.TestdbdError, match="lease-space=512M"):
        c.reset("l-1")
    worker = Worker(None, c)
    worker.lease = testdbd.Lease(LEASE)
    with pytest.warns(TestdbdWarning, match=r"lease l-1 \(database tdb_w\) ended before the session did: .*--lease-space=512M"):
        worker.release()
    stub.routes[("DELETE", "/v1/leases/l-1")] = [(200, {**LEASE, "state": "released", "ended_reason": "released at x"})]
    worker.lease = testdbd.Lease(LEASE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        worker.release()


def test_errors_without_json(stub):
    stub.routes[("GET", "/v1/templates/app")] = [(502, b"bad gateway")]
    with pytest.raises(testdbd.TestdbdError, match="HTTP 502 .*bad gateway"):
        testdbd.Client(stub.addr).get_template("app")


def test_unreachable():
    with pytest.raises(testdbd.TestdbdError, match="cannot reach the testdbd daemon at http://127.0.0.1:1 .*TESTDBD_ADDR"):
        testdbd.Client("127.0.0.1:1").list_leases()


def test_addr_and_token_from_the_environment(stub, monkeypatch):
    stub.routes[("GET", "/v1/leases")] = [(200, {"leases": [LEASE]})]
    monkeypatch.setenv("TESTDBD_ADDR", "http://" + stub.addr)
    monkeypatch.setenv("TESTDBD_TOKEN", "s3cret")
    leases = testdbd.Client().list_leases()
    assert [x.id for x in leases] == ["l-1"]
    assert stub.requests[-1][2]["Authorization"] == "Bearer s3cret"


def test_requests(stub, tmp_path):
    stub.routes[("POST", "/v1/templates")] = [(200, {"name": "app", "hash": "h1", "version": "2"})]
    stub.routes[("POST", "/v1/leases")] = [(200, LEASE)]
    stub.routes[("POST", "/v1/leases/l-1:reset")] = [(200, {"strategy": "STRATEGY_ROLLBACK", "tables_reset": []})]
    stub.routes[("POST", "/v1/leases/l-1:renew")] = [(200, LEASE)]
    stub.routes[("DELETE", "/v1/leases/l-1")] = [(200, {**LEASE, "state": "released"})]
    stub.routes[("GET", "/v1/leases?template=a%20b")] = [(200, {"leases": []})]
    (tmp_path / "00002_b.sql").write_text("-- +goose Up\nSELECT 2;\n")
    (tmp_path / "00001_a.sql").write_text("-- +goose Up\nSELECT 1;\n")
    (tmp_path / "notes.txt").write_text("not a migration")
    c = testdbd.Client(stub.addr)
    assert c.ensure_template("app", tmp_path, seed_sql="INSERT 1")["version"] == 2
    lease = c.acquire("app", "pytest-gw0", "rollback", ttl_seconds=60, wait_timeout_ms=5000)
    assert isinstance(lease, testdbd.Lease) and lease.port == 3306
    assert c.reset(lease.id, "ROLLBACK")["strategy"] == "STRATEGY_ROLLBACK"
    c.reset(lease.id)
    c.renew(lease.id, 120)
    assert c.release(lease.id)["state"] == "released"
    assert c.list_leases("a b") == []
    bodies = [(m, p, b) for m, p, _, b in stub.requests]
    assert bodies[0][2]["migrations"] == [{"name": "00001_a.sql", "content": "-- +goose Up\nSELECT 1;\n"},
                                          {"name": "00002_b.sql", "content": "-- +goose Up\nSELECT 2;\n"}]
    assert bodies[0][2]["seed_sql"] == "INSERT 1"
    assert bodies[1][2] == {"template": "app", "worker": "pytest-gw0", "strategy": "STRATEGY_ROLLBACK",
                            "ttl_seconds": 60, "wait_timeout_ms": 5000}
    assert bodies[2][2] == {"strategy": "STRATEGY_ROLLBACK"}
    assert bodies[3][2] == {}
    assert bodies[4][2] == {"ttl_seconds": 120}


def test_strategy_names():
    assert testdbd.normalize_strategy("snapshot") == "STRATEGY_SNAPSHOT"
    assert testdbd.normalize_strategy("STRATEGY_TRUNCATE") == "STRATEGY_TRUNCATE"
    assert testdbd.normalize_strategy("") is None
    with pytest.raises(ValueError, match="truncate, snapshot or rollback"):
        testdbd.normalize_strategy("fast")


def test_pin_with_a_daemon_that_takes_template_hash(stub):
    stub.routes[("POST", "/v1/leases")] = [(200, LEASE)]
    c = testdbd.Client(stub.addr)
    assert c.acquire("app", "w", template_hash="h1").id == "l-1"
    assert stub.requests[-1][3]["template_hash"] == "h1"


def test_pin_with_an_older_daemon(stub):
    """A daemon that does not know the field refuses it: the client asks
    again without it, checks the lease's hash itself, and does not send the
    field again."""
    unknown = {"code": 3, "message": 'malformed request body: (line 1:80): unknown field "template_hash"'}
    stub.routes[("POST", "/v1/leases")] = [(400, unknown), (200, LEASE)]
    c = testdbd.Client(stub.addr)
    assert c.acquire("app", "w", template_hash="h1").id == "l-1"
    assert c.acquire("app", "w", template_hash="h1").id == "l-1"
    sent = [r[3] for r in stub.requests]
    assert "template_hash" in sent[0] and "template_hash" not in sent[1] and "template_hash" not in sent[2]


def test_pin_mismatch_releases_the_lease(stub):
    unknown = {"code": 3, "message": 'malformed request body: unknown field "template_hash"'}
    stub.routes[("POST", "/v1/leases")] = [(400, unknown), (200, {**LEASE, "template_hash": "h2"})]
    stub.routes[("DELETE", "/v1/leases/l-1")] = [(200, LEASE)]
    with pytest.raises(testdbd.TestdbdError, match="rebuilt from other migrations"):
        testdbd.Client(stub.addr).acquire("app", "w", template_hash="h1")
    assert stub.requests[-1][:2] == ("DELETE", "/v1/leases/l-1")


def test_other_invalid_arguments_are_not_retried(stub):
    bad = {"code": 3, "message": "invalid value for enum field strategy"}
    stub.routes[("POST", "/v1/leases")] = [(400, bad)]
    with pytest.raises(testdbd.TestdbdError, match="enum field"):
        testdbd.Client(stub.addr).acquire("app", "w", template_hash="h1")
    assert len(stub.requests) == 1


def test_cleanup_releases_what_is_held(stub):
    stub.routes[("DELETE", "/v1/leases/l-9")] = [(200, LEASE)]
    c = testdbd.Client(stub.addr)
    _cleanup.hold(c, "l-9")
    _cleanup.hold(c, "l-10")
    _cleanup.forget("l-10")
    _cleanup.release_all()
    assert [(m, p) for m, p, _, _ in stub.requests] == [("DELETE", "/v1/leases/l-9")]
    _cleanup.release_all()  # nothing left
    assert len(stub.requests) == 1


def test_lease_env():
    env = testdbd.Lease(LEASE).env()
    assert env["DB_PORT"] == "3306" and env["DB_READ_HOST"] == env["DB_WRITE_HOST"] == "127.0.0.1"
    assert env["DATABASE_URL"] == LEASE["url"] and env["TESTDBD_LEASE_ID"] == "l-1"


def test_lease_tls_options():
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    lease = testdbd.Lease({**LEASE, "ca_cert": pem})
    ssl = lease.ssl()
    assert ssl["check_hostname"] is True
    with open(ssl["ca"], encoding="ascii") as f:
        assert f.read() == pem
    assert lease.ca_file() == ssl["ca"]  # written once per content
    assert oct(os.stat(os.path.dirname(ssl["ca"])).st_mode & 0o777) == "0o700"
    with pytest.raises(testdbd.TestdbdError, match="carries no CA certificate"):
        testdbd.Lease(LEASE).ssl()


def test_worker_key(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert testdbd.worker_key() == "pytest-main"
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert testdbd.worker_key("django") == "django-gw3"
