"""The pytest plugin's settings and errors, in pytest runs of their own
(pytester): no daemon needed."""

import pytest

from testdbd.pytest_plugin import Settings


def test_settings_precedence(pytester, monkeypatch):
    pytester.makeini("""
        [pytest]
        testdbd_template = from-ini
        testdbd_strategy = rollback
        testdbd_migrations = db/migrations
        testdbd_ttl = 60
    """)
    for name in ("TESTDBD_TEMPLATE", "TESTDBD_STRATEGY", "TESTDBD_MIGRATIONS", "TESTDBD_TTL", "TESTDBD_ADDR"):
        monkeypatch.delenv(name, raising=False)
    s = Settings(pytester.parseconfig())
    assert (s.template, s.strategy, s.ttl, s.addr) == ("from-ini", "STRATEGY_ROLLBACK", 60, "127.0.0.1:8080")
    assert s.migrations == pytester.path / "db" / "migrations"  # relative to the ini file
    assert s.pin_template is True and s.worker_prefix == "pytest"  # pinned by default

    monkeypatch.setenv("TESTDBD_TEMPLATE", "from-env")
    monkeypatch.setenv("TESTDBD_MIGRATIONS", "/abs/migrations")
    monkeypatch.setenv("TESTDBD_PIN_TEMPLATE", "no")
    s = Settings(pytester.parseconfig())
    assert s.template == "from-env" and str(s.migrations) == "/abs/migrations" and not s.pin_template

    s = Settings(pytester.parseconfig("--testdbd-template=from-cli", "--testdbd-strategy=truncate", "--testdbd-pin-template"))
    assert (s.template, s.strategy, s.pin_template) == ("from-cli", "STRATEGY_TRUNCATE", True)


def test_bad_settings_are_usage_errors(pytester, monkeypatch):
    monkeypatch.delenv("TESTDBD_STRATEGY", raising=False)
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--testdbd-template=app", "--testdbd-strategy=fast")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*testdbd: unknown testdbd strategy 'fast': use truncate, snapshot or rollback*"])


def test_no_template(pytester, monkeypatch):
    monkeypatch.delenv("TESTDBD_TEMPLATE", raising=False)
    pytester.makepyfile("""
        def test_db(testdbd_conn):
            pass

        def test_no_db():
            pass
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*testdbd: no template configured: set testdbd_template*"])


def test_unreachable_daemon(pytester, monkeypatch):
    monkeypatch.setenv("TESTDBD_ADDR", "127.0.0.1:1")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("TESTDBD_TEMPLATE_HASH", raising=False)
    pytester.makepyfile("""
        def test_db(testdbd_conn):
            pass
    """)
    result = pytester.runpytest("--testdbd-template=app")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cannot reach the testdbd daemon at http://127.0.0.1:1*"])
    result.stdout.fnmatch_lines(["testdbd: daemon 127.0.0.1:1, template app, strategy snapshot, worker key pytest-main"])


def test_inline_comment_in_the_ini_file(pytester, monkeypatch):
    # pytest keeps what follows a value on its line as part of the value.
    monkeypatch.delenv("TESTDBD_MIGRATIONS", raising=False)
    pytester.makeini("""
        [pytest]
        testdbd_template = app
        testdbd_migrations = db/migrations     # goose *.sql files
    """)
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*testdbd_migrations = 'db/migrations     # goose *.sql files' in *: ini values "
                                 "cannot carry a comment after them*put the comment on a line of its own*"])
