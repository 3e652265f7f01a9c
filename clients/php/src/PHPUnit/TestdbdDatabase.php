<?php

declare(strict_types=1);

namespace Testdbd\PHPUnit;

use Testdbd\Worker;

/**
 * For PHPUnit test cases (plain PHPUnit, paratest, Laravel's TestCase):
 * each test process leases one database of the template (per paratest
 * TEST_TOKEN), every test starts from the template, and the database is
 * reset after each test. The lease is released when the process ends.
 *
 *     final class UserTest extends TestCase
 *     {
 *         use \Testdbd\PHPUnit\TestdbdDatabase;
 *
 *         public function testSignup(): void
 *         {
 *             $db = $this->testdbdPdo();       // or the framework's connection:
 *             ...                              // DB_HOST, DB_DATABASE, ... point at the lease
 *         }
 *     }
 *
 * setUp() leases (once per process) and exports DB_HOST, DB_PORT,
 * DB_DATABASE, DB_USERNAME, DB_PASSWORD, DB_READ_HOST, DB_WRITE_HOST,
 * DB_URL and DATABASE_URL before the parent's setUp() runs, so a framework
 * that boots there (Laravel) connects to the lease. tearDown() runs the
 * parent's tearDown() first (Laravel rolls back and disconnects there),
 * then the reset. A class with setUp() or tearDown() of its own calls
 * testdbdSetUp() and testdbdTearDown() from them. Settings: see
 * Testdbd\Worker (TESTDBD_TEMPLATE, TESTDBD_STRATEGY, ...).
 */
trait TestdbdDatabase
{
    private ?\PDO $testdbdConnection = null;

    protected function setUp(): void
    {
        $this->testdbdSetUp();
        parent::setUp();
    }

    protected function tearDown(): void
    {
        try {
            parent::tearDown();
        } finally {
            $this->testdbdTearDown();
        }
    }

    /** Leases this process's database (once) and exports it as DB_* variables. */
    protected function testdbdSetUp(): void
    {
        Worker::exportEnv(Worker::lease());
    }

    /** Closes testdbdPdo()'s connection and resets the database to the template. */
    protected function testdbdTearDown(): void
    {
        $this->testdbdConnection = null;
        if (!Worker::hasLease()) {
            return;
        }
        $report = Worker::reset($this->testdbdResetStrategy());
        $this->testdbdAfterReset($report);
    }

    /**
     * The strategy of the reset after each test: null for the lease's own
     * (TESTDBD_STRATEGY). Override it to return 'rollback' in classes whose
     * tests run in a transaction that is rolled back (DatabaseTransactions).
     */
    protected function testdbdResetStrategy(): ?string
    {
        return null;
    }

    /**
     * Called with each reset's report. By default a rollback reset that had
     * to restore tables (the test committed after all) is reported on
     * STDERR, naming them.
     */
    protected function testdbdAfterReset(array $report): void
    {
        $committed = ($report['requested_strategy'] ?? '') === 'STRATEGY_ROLLBACK'
            && ($report['strategy'] ?? '') !== 'STRATEGY_ROLLBACK';
        if ($committed || ($report['schema_changes'] ?? []) !== []) {
            fwrite(STDERR, static::class . '::' . $this->testdbdTestName() . ': testdbd: ' . ($report['fallback_reason'] ?? '') . "\n");
        }
    }

    /** This process's lease: host, port, user, password, database, url, id, ... */
    protected function testdbdLease(): array
    {
        return Worker::lease();
    }

    /** A PDO connection to the leased database, opened once per test and closed before the reset. */
    protected function testdbdPdo(): \PDO
    {
        return $this->testdbdConnection ??= Worker::pdo();
    }

    /** Resets the database now (the reset ends every connection of the lease: open new ones after it). */
    protected function testdbdReset(?string $strategy = null): array
    {
        $this->testdbdConnection = null;
        return Worker::reset($strategy);
    }

    private function testdbdTestName(): string
    {
        if (method_exists($this, 'name')) {
            return (string) $this->name(); // PHPUnit 10+
        }
        return method_exists($this, 'getName') ? (string) $this->getName() : '';
    }
}
