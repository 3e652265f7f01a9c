<?php

namespace Tests;

use Illuminate\Foundation\Testing\DatabaseMigrations;
use Illuminate\Foundation\Testing\RefreshDatabase;
use Illuminate\Foundation\Testing\TestCase as BaseTestCase;

/*
 * EXAMPLE_RESET=RefreshDatabase or DatabaseMigrations (tests/bootstrap.php
 * loads this file instead of tests/TestCase.php): the suite the way Laravel
 * resets without testdbd, for comparison, with DB_* pointing at a server
 * whose user may create databases (parallel runs create
 * <database>_test_<token>). Under RefreshDatabase the tests that hard-code
 * ids fail: a rollback does not rewind AUTO_INCREMENT.
 */
if (getenv('EXAMPLE_RESET') === 'DatabaseMigrations') {
    abstract class TestCase extends BaseTestCase
    {
        use CreatesApplication;
        use DatabaseMigrations;

        protected $seed = true;
        protected $dropViews = true; // migrate:fresh --drop-views: the schema has views
        public $mockConsoleOutput = false; // artisan() without Mockery, which Debian's Laravel does not pull in
    }
} else {
    abstract class TestCase extends BaseTestCase
    {
        use CreatesApplication;
        use RefreshDatabase;

        protected $seed = true;
        protected $dropViews = true; // migrate:fresh --drop-views: the schema has views
        public $mockConsoleOutput = false; // artisan() without Mockery, which Debian's Laravel does not pull in
    }
}
