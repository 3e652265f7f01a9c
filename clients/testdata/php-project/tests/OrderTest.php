<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Testdbd\PHPUnit\TestdbdDatabase;

final class OrderTest extends TestCase
{
    use TestdbdDatabase;

    /** @return array<int, array{int}> */
    public function runs(): array
    {
        return array_map(fn ($i) => [$i], range(1, 5));
    }

    /** @dataProvider runs */
    public function testPlaceOrder(int $run): void
    {
        // What an application would do: connect with the DB_* variables.
        $db = new PDO(sprintf('mysql:host=%s;port=%s;dbname=%s', getenv('DB_HOST'), getenv('DB_PORT'), getenv('DB_DATABASE')),
            getenv('DB_USERNAME'), getenv('DB_PASSWORD'), [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
        $this->assertSame(2, (int) $db->query('SELECT COUNT(*) FROM orders')->fetchColumn());
        $db->exec("INSERT INTO orders (customer, total_cents) VALUES ('linus', 100 * $run)");
        $this->assertSame('3', $db->lastInsertId());
    }

    public function testWorkerKey(): void
    {
        $this->assertSame('phpunit-' . (getenv('TEST_TOKEN') ?: 'main'), $this->testdbdLease()['worker']);
    }
}
