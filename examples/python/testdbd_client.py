"""A small client of testdbd's REST API for Python test suites.

Standard library only (urllib); PyMySQL (Debian's python3-pymysql) connects
to the leased database. The daemon's address comes from TESTDBD_ADDR
(default 127.0.0.1:8080) and its token, if it wants one, from TESTDBD_TOKEN.
Errors are raised as TestdbdError with the daemon's message, which says what
to do.
"""

import json
import os
import pathlib
import urllib.error
import urllib.parse
import urllib.request


class TestdbdError(RuntimeError):
    """An error answered by the daemon, or a daemon that cannot be reached."""

    def __init__(self, message, code=None, status=None):
        super().__init__(message)
        self.code = code  # the gRPC status code, e.g. 5 for NotFound
        self.status = status  # the HTTP status


class Testdbd:
    def __init__(self, addr=None, token=None):
        addr = addr or os.environ.get("TESTDBD_ADDR") or "127.0.0.1:8080"
        if "://" not in addr:
            addr = "http://" + addr
        self.base = addr.rstrip("/")
        self.token = token or os.environ.get("TESTDBD_TOKEN") or None

    def ensure_template(self, name, migrations_dir, seed_sql=""):
        """Builds the template from a local directory of goose migrations
        (uploaded, so the daemon may run elsewhere), or finds the one built
        from the same files. Returns the template."""
        files = [
            {"name": p.name, "content": p.read_text()}
            for p in sorted(pathlib.Path(migrations_dir).glob("*.sql"))
        ]
        if not files:
            raise TestdbdError(f"no *.sql migrations in {migrations_dir}")
        return self._call("POST", "/v1/templates", {"name": name, "migrations": files, "seed_sql": seed_sql})

    def acquire(self, template, worker, strategy="STRATEGY_SNAPSHOT", ttl_seconds=600):
        """Leases a database of the template; worker is a sticky key (e.g.
        PYTEST_XDIST_WORKER). Returns the lease: host, port, user, password,
        database, dsn, url, id, ..."""
        return self._call("POST", "/v1/leases", {
            "template": template, "worker": worker, "strategy": strategy, "ttl_seconds": ttl_seconds,
        })

    def reset(self, lease_id, strategy=None):
        """Resets the leased database to the template now; returns the report.
        The reset ends the lease's open connections: close yours first."""
        body = {} if strategy is None else {"strategy": strategy}
        return self._call("POST", f"/v1/leases/{urllib.parse.quote(lease_id, safe='')}:reset", body)

    def release(self, lease_id):
        """Gives the lease back; the daemon resets the database in the background."""
        return self._call("DELETE", f"/v1/leases/{urllib.parse.quote(lease_id, safe='')}")

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as e:
            raw = e.read().decode(errors="replace")
            try:
                err = json.loads(raw)
                raise TestdbdError(err["message"], err.get("code"), e.code) from None
            except (ValueError, KeyError, TypeError):
                raise TestdbdError(f"HTTP {e.code} from the daemon: {raw[:300]}", None, e.code) from None
        except urllib.error.URLError as e:
            raise TestdbdError(
                f"cannot reach the testdbd daemon at {self.base} ({e.reason}): is it running "
                "(testdbd serve)? Set TESTDBD_ADDR to its REST address.") from None


def connect(lease, **kwargs):
    """Opens a PyMySQL connection to a lease's database."""
    import pymysql

    return pymysql.connect(host=lease["host"], port=lease["port"], user=lease["user"],
                           password=lease["password"], database=lease["database"], **kwargs)
