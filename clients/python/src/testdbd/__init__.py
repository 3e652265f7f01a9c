"""Python clients of testdbd, the daemon that leases each test worker its
own MySQL/MariaDB database and resets it to a template in milliseconds.

- testdbd.Client: the REST API (templates, leases, resets).
- testdbd.pytest_plugin: a pytest plugin (installed with the package): a
  lease per pytest-xdist worker, a reset after each test.
- testdbd.django: Django's test runner and test cases on a lease;
  testdbd.django_pytest the same for pytest-django.
"""

import os

from .client import DEFAULT_ADDR, STRATEGIES, Client, Lease, TestdbdError, connect, normalize_strategy

__version__ = "0.1.0"

__all__ = ["Client", "Lease", "TestdbdError", "connect", "normalize_strategy", "worker_key",
           "DEFAULT_ADDR", "STRATEGIES", "__version__"]


def worker_key(prefix="pytest"):
    """The sticky worker key of this process: "<prefix>-gw0", "<prefix>-gw1",
    ... under pytest-xdist (PYTEST_XDIST_WORKER), "<prefix>-main" without."""
    return f"{prefix}-{os.environ.get('PYTEST_XDIST_WORKER') or 'main'}"
