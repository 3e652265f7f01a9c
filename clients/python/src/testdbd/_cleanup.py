"""Leases this process holds, released however the process ends.

The normal path releases a lease explicitly (a pytest fixture's
finalization, the Django test runner's teardown) and forgets it here. What
is still held when the interpreter exits (sys.exit, pytest.exit, an
exception that escaped) is released by an atexit handler, and SIGTERM and
SIGHUP, whose default action kills Python without running atexit, release
first and then take their default action. SIGINT needs nothing: it raises
KeyboardInterrupt, and pytest and Django tear down as usual. The
pytest-xdist controller, which holds no lease, turns SIGTERM and SIGHUP
into KeyboardInterrupt (interrupt_on_termination), so that it shuts its
workers down as on Ctrl-C and they release theirs. A process killed with
SIGKILL keeps its leases until their TTL runs out.

Only the process that acquired a lease releases it: a forked child that
exits does not give its parent's leases back.
"""

import atexit
import os
import signal
import threading

_lock = threading.RLock()  # reentrant: the signal handler may run while the main thread holds it
_held = {}  # lease id -> (client, pid)
_installed = False
_previous = {}


def hold(client, lease_id):
    """Remembers a lease to release at exit."""
    global _installed
    with _lock:
        _held[lease_id] = (client, os.getpid())
        if not _installed:
            _installed = True
            atexit.register(release_all)
            _install_signal_handlers()


def forget(lease_id):
    """Forgets a lease that was released (or handed to someone else)."""
    with _lock:
        _held.pop(lease_id, None)


def release_all(timeout=10):
    """Releases every lease this process still holds; errors are ignored
    (the daemon takes expired leases back by itself)."""
    with _lock:
        mine = [(lid, c) for lid, (c, pid) in _held.items() if pid == os.getpid()]
        for lid, _ in mine:
            _held.pop(lid, None)
    for lid, client in mine:
        try:
            client.release(lid, timeout=timeout)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


def _install_signal_handlers():
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            if signal.getsignal(sig) is not signal.SIG_DFL:
                continue  # someone else handles it (or ignores it): leave it alone
            _previous[sig] = signal.SIG_DFL
            signal.signal(sig, _on_signal)
        except (ValueError, OSError):
            pass


def interrupt_on_termination():
    """Makes SIGTERM and SIGHUP interrupt the main thread like Ctrl-C
    (KeyboardInterrupt) where nothing else handles them: the pytest-xdist
    controller, which holds no lease, then shuts its workers down the way
    it does on Ctrl-C, and they release theirs."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        try:
            if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _interrupt)
        except (ValueError, OSError):
            pass


def _interrupt(signum, frame):
    signal.signal(signum, signal.SIG_DFL)  # a second one kills
    raise KeyboardInterrupt(f"signal {signum}")


def _on_signal(signum, frame):
    release_all(timeout=5)
    # The default action: die of the same signal.
    signal.signal(signum, _previous.get(signum, signal.SIG_DFL))
    os.kill(os.getpid(), signum)
