<?php

namespace Tests;

use Illuminate\Foundation\Testing\RefreshDatabase;
use Illuminate\Foundation\Testing\RefreshDatabaseState;
use Illuminate\Foundation\Testing\TestCase as BaseTestCase;
use Testdbd\PHPUnit\TestdbdDatabase;

/*
 * EXAMPLE_RESET=testdbd-rollback (tests/bootstrap.php loads this file
 * instead of tests/TestCase.php): a suite that keeps RefreshDatabase, as
 * docs/laravel.md's "RefreshDatabase, or the rollback strategy" shows.
 * Laravel wraps each test in a transaction and rolls it back; testdbd's
 * rollback reset then rewinds the AUTO_INCREMENT counters that moved (and
 * restores from the template whatever was committed after all). The
 * database is the template already: no migrate:fresh.
 */
RefreshDatabaseState::$migrated = true;

abstract class TestCase extends BaseTestCase
{
    use CreatesApplication;
    use RefreshDatabase;
    use TestdbdDatabase;

    protected function testdbdResetStrategy(): ?string
    {
        return 'rollback';
    }
}
