"""A client of testdbd's REST API.

Standard library only (http.client); PyMySQL is imported when a connection
to a leased database is opened. The daemon's address comes from
TESTDBD_ADDR (default 127.0.0.1:8080) and its token, if it wants one, from
TESTDBD_TOKEN. Every error the daemon answers is raised as TestdbdError
with the daemon's own message, which says what went wrong and what to do.
"""

import atexit
import hashlib
import http.client
import json
import os
import pathlib
import re
import shutil
import tempfile
import threading
import urllib.parse

DEFAULT_ADDR = "127.0.0.1:8080"

STRATEGIES = ("STRATEGY_TRUNCATE", "STRATEGY_SNAPSHOT", "STRATEGY_ROLLBACK")

# The API's 64-bit integer fields. protojson writes them as JSON strings
# ("resets": "2"); a daemon may also write them as numbers. Both are read
# as Python ints.
INT64_FIELDS = frozenset({
    "resets", "version", "wait_timeout_ms", "leases_active", "leases_acquired", "leases_expired",
    "acquire_exhausted", "memory_bytes", "datadir_bytes", "count", "fallbacks", "failures",
})
_INT = re.compile(r"-?[0-9]+\Z")


class TestdbdError(RuntimeError):
    """An error answered by the daemon, or a daemon that cannot be reached.

    code is the gRPC status code the daemon gave (5 NotFound, 8
    ResourceExhausted, ...), status the HTTP status; both are None when the
    daemon could not be reached.
    """

    __test__ = False  # not a test class, whatever pytest's naming rules say

    def __init__(self, message, code=None, status=None):
        super().__init__(message)
        self.code = code
        self.status = status


def normalize_strategy(strategy):
    """Returns the API's name of a reset strategy: "snapshot", "SNAPSHOT"
    and "STRATEGY_SNAPSHOT" all give "STRATEGY_SNAPSHOT". None and "" give
    None (the daemon's or the lease's default)."""
    if strategy is None or strategy == "":
        return None
    name = str(strategy).strip().upper()
    if not name.startswith("STRATEGY_"):
        name = "STRATEGY_" + name
    if name not in STRATEGIES:
        raise ValueError(f"unknown testdbd strategy {strategy!r}: use truncate, snapshot or rollback")
    return name


def _ints(value):
    """Converts the API's 64-bit integer fields to ints, wherever they are."""
    if isinstance(value, list):
        return [_ints(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in INT64_FIELDS and isinstance(v, str) and _INT.match(v):
                v = int(v)
            elif isinstance(v, (dict, list)):
                v = _ints(v)
            out[k] = v
        return out
    return value


class Lease(dict):
    """A lease as the daemon describes it (a dict: id, host, port, user,
    password, database, dsn, url, strategy, template_hash, expires_at,
    resets, ...), with a few conveniences."""

    id = property(lambda self: self["id"])
    host = property(lambda self: self["host"])
    port = property(lambda self: self["port"])
    user = property(lambda self: self["user"])
    password = property(lambda self: self["password"])
    database = property(lambda self: self["database"])
    url = property(lambda self: self["url"])
    # The PEM certificate of the authority that signed the server's TLS
    # certificate (None from a daemon before TLS on its servers, or for a
    # server without a certificate clients can verify).
    ca_cert = property(lambda self: self.get("ca_cert") or None)

    def connect(self, tls=False, **kwargs):
        """Opens a PyMySQL connection to the leased database; keyword
        arguments go to pymysql.connect (autocommit=True, ...). With
        tls=True it connects with TLS and verifies the server (ssl=self.ssl())."""
        return connect(self, tls=tls, **kwargs)

    def ca_file(self):
        """The path of a file holding ca_cert, for clients that want a
        file (PyMySQL's ssl={"ca": ...}, mysqlclient's ssl_ca, the mariadb
        CLI's --ssl-ca). It lives in a directory of this process's own,
        removed when the process exits. Raises TestdbdError when the lease
        carries no CA certificate."""
        if not self.ca_cert:
            raise TestdbdError(f"lease {self.get('id')} carries no CA certificate (ca_cert): its daemon predates TLS "
                               "on its servers, or the server offers no certificate clients can verify; connect without TLS")
        return _ca_file(self.ca_cert)

    def ssl(self):
        """PyMySQL's ssl argument for a TLS connection that trusts the
        lease's CA certificate alone and checks that the server's
        certificate names the lease's host: {"ca": ca_file(),
        "check_hostname": True}."""
        return {"ca": self.ca_file(), "check_hostname": True}

    def env(self):
        """The variables frameworks read, as `testdbd lease --format env`
        prints them: DB_HOST, DB_PORT, DB_DATABASE, DB_USERNAME,
        DB_PASSWORD, DB_READ_HOST, DB_WRITE_HOST, DATABASE_URL,
        TESTDBD_LEASE_ID."""
        return {
            "DB_HOST": self["host"], "DB_PORT": str(self["port"]), "DB_DATABASE": self["database"],
            "DB_USERNAME": self["user"], "DB_PASSWORD": self["password"],
            "DB_READ_HOST": self["host"], "DB_WRITE_HOST": self["host"],
            "DATABASE_URL": self["url"], "TESTDBD_LEASE_ID": self["id"],
        }


def connect(lease, tls=False, **kwargs):
    """Opens a PyMySQL connection to a lease's database; with tls=True,
    with TLS, verifying the server with the lease's CA certificate. A reset
    ends the lease's open connections: open new ones after it."""
    import pymysql

    if tls:
        kwargs.setdefault("ssl", Lease(lease).ssl())
    kwargs.setdefault("charset", "utf8mb4")
    return pymysql.connect(host=lease["host"], port=int(lease["port"]), user=lease["user"],
                           password=lease["password"], database=lease["database"], **kwargs)


class Client:
    """testdbd's REST API.

    addr is host:port or a URL (default: TESTDBD_ADDR, else 127.0.0.1:8080);
    token is sent as "Authorization: Bearer <token>" (default:
    TESTDBD_TOKEN). timeout is in seconds, per call: an acquire may wait for
    a free database and an ensure_template for a build.
    """

    def __init__(self, addr=None, token=None, timeout=600.0):
        addr = addr or os.environ.get("TESTDBD_ADDR") or DEFAULT_ADDR
        if "://" not in addr:
            addr = "http://" + addr
        u = urllib.parse.urlsplit(addr)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"testdbd address {addr!r}: want host:port or http(s)://host:port")
        self.addr = addr.rstrip("/")
        self._scheme, self._host, self._port = u.scheme, u.hostname, u.port
        self._prefix = u.path.rstrip("/")
        self.token = token if token is not None else (os.environ.get("TESTDBD_TOKEN") or None)
        self.timeout = timeout
        self._pin_supported = None  # whether AcquireLease takes template_hash; None: not asked yet

    def __repr__(self):
        return f"testdbd.Client({self.addr!r})"

    # Templates.

    def ensure_template(self, name, migrations_dir=None, *, migrations=None, seed_sql="", pool_size=0,
                        engine="", upload=True, wait=True):
        """Builds the template from goose migrations, or finds the one already
        built from the same files (the daemon builds each content once;
        concurrent callers share the build). Returns the template.

        migrations_dir is a local directory whose *.sql files are uploaded
        (so the daemon may run on another host); with upload=False the
        daemon reads it itself (an absolute path on the daemon's host).
        migrations may instead give the files as {file name: content}.
        """
        body = {"name": name, "seed_sql": seed_sql or "", "pool_size": pool_size, "engine": engine,
                "async": not wait}
        if migrations is not None:
            body["migrations"] = [{"name": n, "content": c} for n, c in sorted(dict(migrations).items())]
        elif migrations_dir is None:
            raise ValueError("ensure_template needs migrations_dir or migrations")
        elif upload:
            files = sorted(pathlib.Path(migrations_dir).glob("*.sql"))
            if not files:
                raise TestdbdError(f"no *.sql migrations in {migrations_dir}")
            body["migrations"] = [{"name": p.name, "content": p.read_text(encoding="utf-8")} for p in files]
        else:
            body["migrations_dir"] = str(migrations_dir)
        return self._call("POST", "/v1/templates", body)

    def get_template(self, name):
        """Returns a template: state, hash, tables, build timings, pool counts."""
        return self._call("GET", "/v1/templates/" + _quote(name))

    def list_templates(self):
        return self._call("GET", "/v1/templates").get("templates", [])

    # Leases.

    def acquire(self, template, worker="", strategy=None, ttl_seconds=0, wait_timeout_ms=0, template_hash=None):
        """Leases a database of the template, exclusive until released or
        expired. worker is a sticky key (e.g. "pytest-gw0"): the same worker
        gets its previous database back when it is free. strategy is
        truncate, snapshot or rollback (None: the daemon's default).
        ttl_seconds and wait_timeout_ms of 0 take the daemon's defaults.

        template_hash pins the lease to one build of the template (the hash
        ensure_template returned): a daemon that knows the AcquireLease
        field checks it; with one that does not, the lease's own
        template_hash is compared after the fact. A lease of another build
        is released and TestdbdError raised.
        """
        body = {"template": template, "worker": worker or "", "ttl_seconds": int(ttl_seconds or 0)}
        strategy = normalize_strategy(strategy)
        if strategy:
            body["strategy"] = strategy
        if wait_timeout_ms:
            body["wait_timeout_ms"] = int(wait_timeout_ms)
        if template_hash and self._pin_supported is not False:
            try:
                lease = self._call("POST", "/v1/leases", {**body, "template_hash": template_hash})
                self._pin_supported = True
            except TestdbdError as e:
                if not (e.code == 3 and "template_hash" in str(e) and "unknown field" in str(e)):
                    raise
                self._pin_supported = False  # an older daemon: check after the fact
                lease = self._call("POST", "/v1/leases", body)
        else:
            lease = self._call("POST", "/v1/leases", body)
        lease = Lease(lease)
        got = lease.get("template_hash")
        if template_hash and got and got != template_hash:
            self._release_quietly(lease["id"])
            raise TestdbdError(
                f"the daemon leased a database of template {template!r} built as {got[:12]}, not {template_hash[:12]} "
                "that this run ensured: the template was rebuilt from other migrations meanwhile (another run "
                "sharing the daemon and the template's name?); give each set of migrations its own template name")
        return lease

    def get_lease(self, lease_id):
        return Lease(self._call("GET", "/v1/leases/" + _quote(lease_id)))

    def list_leases(self, template=None):
        """The active leases (of one template, if given)."""
        path = "/v1/leases" + ("?template=" + urllib.parse.quote(template, safe="") if template else "")
        return [Lease(x) for x in self._call("GET", path).get("leases", [])]

    def renew(self, lease_id, ttl_seconds=0):
        """Extends a lease's time to live from now (0: the lease's own TTL)."""
        return Lease(self._call("POST", f"/v1/leases/{_quote(lease_id)}:renew", {"ttl_seconds": int(ttl_seconds or 0)}))

    def reset(self, lease_id, strategy=None):
        """Resets the leased database to its template now and returns the
        report (strategy, total_ms, tables_reset, fallback_reason, ...). The
        reset ends the lease's open connections: close yours first."""
        strategy = normalize_strategy(strategy)
        return self._call("POST", f"/v1/leases/{_quote(lease_id)}:reset", {"strategy": strategy} if strategy else {})

    def release(self, lease_id, timeout=None):
        """Gives the lease back; the daemon resets its database in the
        background. Returns the lease's final state: "released", or, for a
        lease that testdbd had ended already, "expired" or "failed" with
        ended_reason saying why. (A reset or renew of such a lease raises
        TestdbdError with the same reason.)"""
        return Lease(self._call("DELETE", "/v1/leases/" + _quote(lease_id), timeout=timeout))

    def health(self):
        """GET /healthz: {"status": "SERVING"} when the daemon serves."""
        return self._call("GET", "/healthz", timeout=10)

    def _release_quietly(self, lease_id):
        try:
            self.release(lease_id, timeout=10)
        except TestdbdError:
            pass

    # The transport.

    def _call(self, method, path, body=None, timeout=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=timeout or self.timeout)
        what = f"{method} {path.split('?')[0]}"
        try:
            conn.request(method, self._prefix + path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise TestdbdError(
                f"{what}: cannot reach the testdbd daemon at {self.addr} ({e}): is it running (testdbd serve)? "
                "Set TESTDBD_ADDR to its REST address.") from None
        finally:
            conn.close()
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = None
        if resp.status != 200:
            if isinstance(payload, dict) and payload.get("message"):
                raise TestdbdError(f"{what}: {payload['message']} (HTTP {resp.status})",
                                   payload.get("code"), resp.status)
            text = raw.decode(errors="replace").strip()[:300]
            raise TestdbdError(f"{what}: HTTP {resp.status} from the daemon at {self.addr}: {text}",
                               None, resp.status)
        if not isinstance(payload, (dict, list)):
            raise TestdbdError(f"{what}: the daemon at {self.addr} answered something that is not JSON: "
                               f"{raw[:200]!r}", None, resp.status)
        return _ints(payload)


_ca_lock = threading.Lock()
_ca_dir = None


def _ca_file(pem):
    """Writes a CA certificate into this process's private directory (mode
    0700, made on first use, removed at exit), once per content, and
    returns its path. A shared directory such as /tmp would let another
    user plant a certificate of their own under the name."""
    global _ca_dir
    with _ca_lock:
        if _ca_dir is None:
            _ca_dir = tempfile.mkdtemp(prefix="testdbd-ca-")
            atexit.register(shutil.rmtree, _ca_dir, True)
        path = os.path.join(_ca_dir, hashlib.sha256(pem.encode()).hexdigest()[:16] + ".pem")
        if not os.path.exists(path):
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="ascii") as f:
                f.write(pem)
            os.replace(tmp, path)
        return path


def _quote(segment):
    return urllib.parse.quote(str(segment), safe="")
