"""Settings of the Django example (see examples/django/run.sh)."""

import dj_database_url
import pymysql

# Debian's python3-pymysql stands in for mysqlclient.
pymysql.install_as_MySQLdb()

SECRET_KEY = "only-for-tests"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "blog"]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# DATABASE_URL: run.sh migrates a lease of an empty template with it
# (`eval "$(testdbd lease --template empty --format env)"`). For the tests,
# the test runner below and, under pytest, the testdbd plugin
# (testdbd_django in pytest.ini) point it at a lease of the template.
DATABASES = {"default": dj_database_url.config(env="DATABASE_URL", default="mysql://unset@127.0.0.1:3306/unset")}

# manage.py test leases a database of the template, uses it as it is (no
# CREATE DATABASE, which the lease's user may not run, no migrate) and
# releases it at the end.
TEST_RUNNER = "testdbd.django.TestRunner"
TESTDBD = {"TEMPLATE": "django-app"}  # TESTDBD_ADDR, TESTDBD_TOKEN from the environment
