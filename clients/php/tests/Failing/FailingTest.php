<?php

declare(strict_types=1);

namespace Testdbd\Tests\Failing;

use PHPUnit\Framework\TestCase;
use Testdbd\PHPUnit\TestdbdDatabase;

/**
 * Fails on purpose: clients/clients_test.go runs it and checks that the
 * lease was released all the same. TESTDBD_TEST_MODE picks how the run
 * ends: "fail" (failures and errors), "sigterm" (the process gets SIGTERM
 * in a test), "exit" (a test calls exit()).
 */
final class FailingTest extends TestCase
{
    use TestdbdDatabase;

    public function testFails(): void
    {
        $this->testdbdPdo()->exec('DELETE FROM accounts');
        $this->assertSame(1, 2, 'fails on purpose');
    }

    public function testThrows(): void
    {
        $this->testdbdPdo()->exec('DELETE FROM transfers');
        throw new \RuntimeException('throws on purpose');
    }

    public function testEnds(): void
    {
        $this->testdbdPdo()->exec('DELETE FROM transfers');
        switch (getenv('TESTDBD_TEST_MODE') ?: 'fail') {
            case 'sigterm':
                posix_kill(getmypid(), SIGTERM);
                sleep(30);
                break;
            case 'exit':
                exit(3);
        }
        $this->assertTrue(true);
    }
}
