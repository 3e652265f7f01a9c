"""Settings of the Django example (see examples/django/run.sh)."""

import pathlib
import sys

import dj_database_url
import pymysql

# Debian's python3-pymysql stands in for mysqlclient.
pymysql.install_as_MySQLdb()

# testdbd_client.py lives in examples/python; copy it into your project.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))

SECRET_KEY = "only-for-tests"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "blog"]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The lease, from `eval "$(testdbd lease --template django-app --format env)"`
# (DATABASE_URL). Under pytest, conftest.py points it at each worker's lease.
DATABASES = {"default": dj_database_url.config(env="DATABASE_URL", default="mysql://unset@127.0.0.1:3306/unset")}
# Django's test runner uses the leased database as it is (manage.py test
# --keepdb) instead of creating test_<name>, which the lease's user may not.
DATABASES["default"]["TEST"] = {"NAME": DATABASES["default"]["NAME"]}
