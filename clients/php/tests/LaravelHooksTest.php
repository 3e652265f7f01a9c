<?php

declare(strict_types=1);

namespace Testdbd\Tests;

use PHPUnit\Framework\TestCase;
use Testdbd\Client;
use Testdbd\Env;
use Testdbd\Laravel\ParallelTestingHooks;
use Testdbd\PHPUnit\TestdbdDatabase;
use Testdbd\Worker;

/**
 * The Laravel hooks without Laravel: a stand-in for ParallelTesting
 * records the callbacks, which are called the way Laravel's runner and
 * workers call them, on a stand-in application (config and db), so that
 * the package's suite needs no Laravel. Laravel itself calling them is
 * tested by the example application examples/laravel (TestLaravelExample).
 */
final class LaravelHooksTest extends TestCase
{
    private ?string $savedToken = null;

    protected function setUp(): void
    {
        Worker::release(); // this process plays a Laravel worker below, with its own token
        $this->savedToken = Env::get('TEST_TOKEN');
    }

    protected function tearDown(): void
    {
        Worker::release();
        $this->savedToken === null ? Env::unset('TEST_TOKEN') : Env::set('TEST_TOKEN', $this->savedToken);
    }

    public function testConnectionConfig(): void
    {
        $lease = ['host' => '127.0.0.1', 'port' => 4406, 'database' => 'tdb_x', 'user' => 'u', 'password' => 'p'];
        $config = ParallelTestingHooks::connectionConfig([
            'driver' => 'mysql', 'url' => 'mysql://old@db:3306/app', 'host' => 'db', 'port' => '3306',
            'database' => 'app', 'username' => 'app', 'password' => 'secret', 'charset' => 'utf8mb4',
            'read' => ['host' => ['replica-1', 'replica-2']], 'write' => ['host' => ['primary'], 'port' => 3307],
            'sticky' => true,
        ], $lease);
        $this->assertNull($config['url']);
        $this->assertSame(['127.0.0.1', 4406, 'tdb_x', 'u', 'p'],
            [$config['host'], $config['port'], $config['database'], $config['username'], $config['password']]);
        $this->assertSame(['127.0.0.1'], $config['read']['host']);
        $this->assertSame(['host' => ['127.0.0.1']], $config['write']);
        $this->assertSame('utf8mb4', $config['charset']);
        $this->assertTrue($config['sticky']);
    }

    public function testUsesTrait(): void
    {
        $this->assertTrue(ParallelTestingHooks::usesTrait(new TraitTest('testOneLeasePerProcess')));
        $this->assertFalse(ParallelTestingHooks::usesTrait($this));
    }

    public function testParallelRun(): void
    {
        $parallel = new FakeParallelTesting();
        ParallelTestingHooks::register($parallel);
        $this->assertSame(['setUpProcess', 'setUpTestCase', 'tearDownTestCase', 'tearDownProcess'], array_keys($parallel->callbacks));

        // The runner: a lease per token before the workers start.
        $parallel->call('setUpProcess', ['token' => 1]);
        $parallel->call('setUpProcess', ['token' => 2]);
        $held = ParallelTestingHooks::held();
        $this->assertSame(['laravel-1', 'laravel-2'], array_column(array_values($held), 'worker'));
        $this->assertSame($held['1']['id'], getenv('TESTDBD_LEASE_ID_1'));

        // Worker 1: each test case's connection points at token 1's lease,
        // and the database is reset after the test.
        Env::set('TEST_TOKEN', '1');
        for ($test = 0; $test < 3; $test++) {
            $testCase = new FakeLaravelTestCase();
            $parallel->call('setUpTestCase', ['token' => 1, 'testCase' => $testCase]);
            $conn = $testCase->app()['config']->get('database.connections.mysql');
            $this->assertSame($held['1']['database'], $conn['database']);
            $this->assertSame([$held['1']['host']], $conn['read']['host']); // reads follow the lease too
            $this->assertSame([$held['1']['host']], $conn['write']['host']);
            $this->assertSame(['mysql'], $testCase->app()['db']->purged);
            $db = new \PDO(sprintf('mysql:host=%s;port=%d;dbname=%s', $conn['host'], $conn['port'], $conn['database']), $conn['username'], $conn['password'], [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]);
            $db->exec("INSERT INTO accounts (email) VALUES ('laravel@example.com')");
            $this->assertSame('3', $db->lastInsertId());
            $db = null;
            $parallel->call('tearDownTestCase', ['token' => 1, 'testCase' => $testCase]);
            $this->assertSame(['mysql'], $testCase->app()['db']->disconnected);
        }
        $this->assertSame(3, (new Client())->getLease($held['1']['id'])['resets']);

        // The runner, after the workers: the leases go back.
        $parallel->call('tearDownProcess', ['token' => 1]);
        $parallel->call('tearDownProcess', ['token' => 2]);
        $this->assertSame([], ParallelTestingHooks::held());
        $this->assertFalse(getenv('TESTDBD_LEASE_ID_1'));
        $workers = array_column((new Client())->listLeases(), 'worker');
        $this->assertNotContains('laravel-1', $workers);
        $this->assertNotContains('laravel-2', $workers);
    }
}

/** Records callbacks and calls them with named arguments, as Laravel's container does. */
final class FakeParallelTesting
{
    /** @var array<string, callable> */
    public array $callbacks = [];

    public function setUpProcess(callable $callback): void
    {
        $this->callbacks['setUpProcess'] = $callback;
    }

    public function setUpTestCase(callable $callback): void
    {
        $this->callbacks['setUpTestCase'] = $callback;
    }

    public function tearDownTestCase(callable $callback): void
    {
        $this->callbacks['tearDownTestCase'] = $callback;
    }

    public function tearDownProcess(callable $callback): void
    {
        $this->callbacks['tearDownProcess'] = $callback;
    }

    public function call(string $hook, array $arguments): void
    {
        ($this->callbacks[$hook])(...$arguments);
    }
}

/** A test case with Laravel's protected $app: config and db. */
final class FakeLaravelTestCase
{
    protected $app;

    public function __construct()
    {
        $this->app = new \ArrayObject([
            'config' => new FakeConfig([
                'database.default' => 'mysql',
                'database.connections.mysql' => [
                    'driver' => 'mysql', 'host' => 'db.example', 'port' => 3306, 'database' => 'app',
                    'username' => 'app', 'password' => 'secret', 'url' => null,
                    'write' => ['host' => ['db.example']], 'read' => ['host' => ['replica.example']],
                ],
            ]),
            'db' => new FakeDatabaseManager(),
        ]);
    }

    public function app(): \ArrayObject
    {
        return $this->app;
    }
}

final class FakeConfig
{
    public function __construct(private array $items)
    {
    }

    public function get(string $key, mixed $default = null): mixed
    {
        return $this->items[$key] ?? $default;
    }

    public function set(string $key, mixed $value): void
    {
        $this->items[$key] = $value;
    }
}

final class FakeDatabaseManager
{
    public array $purged = [];
    public array $disconnected = [];

    public function purge(?string $name = null): void
    {
        $this->purged[] = $name;
    }

    public function disconnect(?string $name = null): void
    {
        $this->disconnected[] = $name;
    }
}
