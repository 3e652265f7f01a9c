<?php

declare(strict_types=1);

namespace Testdbd\Tests;

use PHPUnit\Framework\TestCase;
use Testdbd\PHPUnit\TestdbdDatabase;
use Testdbd\Worker;

/**
 * The PHPUnit trait: one lease per process, every test starts from the
 * template whatever the previous one committed.
 */
final class TraitTest extends TestCase
{
    use TestdbdDatabase;

    /** @return array<int, array{int}> */
    public function runs(): array
    {
        return array_map(fn ($i) => [$i], range(1, 8));
    }

    /** @dataProvider runs */
    public function testCommitsAreReset(int $run): void
    {
        $db = $this->testdbdPdo();
        $this->assertSame(2, (int) $db->query('SELECT COUNT(*) FROM accounts')->fetchColumn());
        $db->exec("INSERT INTO accounts (email) VALUES ('run$run@example.com')");
        $this->assertSame('3', $db->lastInsertId()); // AUTO_INCREMENT is rewound by every reset
        $db->exec('DELETE FROM transfers');
    }

    public function testOneLeasePerProcess(): void
    {
        $lease = $this->testdbdLease();
        $this->assertSame(Worker::workerKey(), $lease['worker']);
        $this->assertSame('php-client-suite', $lease['template']);
        $this->assertSame($lease, Worker::lease());
    }

    public function testEnvironmentPointsAtTheLease(): void
    {
        $lease = $this->testdbdLease();
        $this->assertSame($lease['database'], getenv('DB_DATABASE'));
        $this->assertSame($lease['host'], $_ENV['DB_READ_HOST']);
        $this->assertSame($lease['host'], $_SERVER['DB_WRITE_HOST']);
        $this->assertSame((string) $lease['port'], getenv('DB_PORT'));
        $this->assertSame($lease['id'], getenv('TESTDBD_LEASE_ID'));
    }

    public function testResetInTheMiddle(): void
    {
        $db = $this->testdbdPdo();
        $db->exec('DELETE FROM accounts');
        $report = $this->testdbdReset();
        $this->assertContains('accounts', $report['tables_reset']);
        $this->assertSame(2, (int) $this->testdbdPdo()->query('SELECT COUNT(*) FROM accounts')->fetchColumn());
    }
}
