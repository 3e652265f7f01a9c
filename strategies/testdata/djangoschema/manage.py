#!/usr/bin/env python3
"""Migrates Django's contrib apps into the database the environment names
(TESTDBD_HOST, TESTDBD_PORT, TESTDBD_USER, TESTDBD_PASSWORD, TESTDBD_DB):
the real-world schema strategies' TestDjangoSchema resets."""
import os
import sys

import pymysql

# Debian's python3-pymysql stands in for mysqlclient.
pymysql.install_as_MySQLdb()

import django
from django.conf import settings

settings.configure(
    SECRET_KEY="only-for-tests",
    USE_TZ=True,
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    INSTALLED_APPS=[
        "django.contrib.admin",
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "django.contrib.messages",
    ],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.mysql",
            "HOST": os.environ["TESTDBD_HOST"],
            "PORT": os.environ["TESTDBD_PORT"],
            "USER": os.environ["TESTDBD_USER"],
            "PASSWORD": os.environ["TESTDBD_PASSWORD"],
            "NAME": os.environ["TESTDBD_DB"],
        }
    },
)
django.setup()

from django.core.management import execute_from_command_line

execute_from_command_line(sys.argv)
