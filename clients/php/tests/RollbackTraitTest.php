<?php

declare(strict_types=1);

namespace Testdbd\Tests;

use PHPUnit\Framework\TestCase;
use Testdbd\PHPUnit\TestdbdDatabase;

/**
 * The trait with tests in transactions (as Laravel's DatabaseTransactions
 * runs them): the rollback reset only rewinds the counters.
 */
final class RollbackTraitTest extends TestCase
{
    use TestdbdDatabase;

    protected function testdbdResetStrategy(): ?string
    {
        return 'rollback';
    }

    protected function testdbdAfterReset(array $report): void
    {
        $this->assertSame('STRATEGY_ROLLBACK', $report['strategy'], $report['fallback_reason']);
    }

    /** @return array<int, array{int}> */
    public function runs(): array
    {
        return array_map(fn ($i) => [$i], range(1, 4));
    }

    /** @dataProvider runs */
    public function testInATransaction(int $run): void
    {
        $db = $this->testdbdPdo();
        $db->beginTransaction();
        $db->exec('INSERT INTO transfers (account_id, amount) VALUES (2, -10)');
        $this->assertSame('3', $db->lastInsertId());
        $db->rollBack();
    }
}
