import pytest


@pytest.mark.parametrize("i", range(12))
def test_create_user(testdbd_conn, i):
    with testdbd_conn.cursor() as cur:
        cur.execute("INSERT INTO users (email, name) VALUES ('same@example.com', %s)", (f"Test {i}",))
        assert cur.lastrowid == 4  # every test starts from the template, counters included


def test_delete_cascades(testdbd_conn):
    with testdbd_conn.cursor() as cur:
        cur.execute("DELETE FROM users WHERE id = 1")
        cur.execute("SELECT COUNT(*) FROM posts")
        assert cur.fetchone()[0] == 1


@pytest.mark.parametrize("i", range(6))
def test_in_a_transaction(testdbd_tx, i):
    with testdbd_tx.cursor() as cur:
        cur.execute("INSERT INTO posts (user_id, title) VALUES (3, 'Draft')")
        assert cur.lastrowid == 3
        cur.execute("SELECT post_count(3)")
        assert cur.fetchone()[0] == 1
