<?php

namespace Tests;

use Illuminate\Foundation\Testing\DatabaseMigrations;
use Illuminate\Foundation\Testing\RefreshDatabase;
use Illuminate\Foundation\Testing\TestCase as BaseTestCase;

/*
 * The same suite the way Laravel runs it without testdbd, for comparison:
 * EXAMPLE_RESET=RefreshDatabase or DatabaseMigrations (tests/bootstrap.php
 * loads this file instead of tests/TestCase.php), with DB_* pointing at a
 * server whose user may create databases (parallel runs create
 * <database>_test_<token>).
 */
if (getenv('EXAMPLE_RESET') === 'DatabaseMigrations') {
    abstract class TestCase extends BaseTestCase
    {
        use CreatesApplication;
        use DatabaseMigrations;

        protected $seed = true;
    }
} else {
    abstract class TestCase extends BaseTestCase
    {
        use CreatesApplication;
        use RefreshDatabase;

        protected $seed = true;
    }
}
