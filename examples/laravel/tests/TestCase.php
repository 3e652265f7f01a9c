<?php

namespace Tests;

use Illuminate\Foundation\Testing\TestCase as BaseTestCase;
use Testdbd\PHPUnit\TestdbdDatabase;

/**
 * Every test starts from the template (`php artisan migrate --seed`, built
 * once by testdbd) on this process's own database, AUTO_INCREMENT counters
 * included: no RefreshDatabase, no migrate:fresh. Serially the trait leases
 * the database itself; in parallel runs it uses the lease the runner took
 * for its TEST_TOKEN (the ParallelTesting hooks, see paratest.php).
 */
abstract class TestCase extends BaseTestCase
{
    use CreatesApplication;
    use TestdbdDatabase;
}
