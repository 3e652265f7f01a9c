<?php

declare(strict_types=1);

namespace Testdbd\Laravel;

use Testdbd\Env;
use Testdbd\PHPUnit\TestdbdDatabase;
use Testdbd\Worker;

/**
 * testdbd for `php artisan test --parallel`, through Laravel's
 * ParallelTesting hooks (register them with TestdbdServiceProvider, or call
 * register() from a service provider's boot()):
 *
 * - setUpProcess (in the runner process, once per worker token, before
 *   the workers start): ensures the template when TESTDBD_MIGRATIONS is set
 *   and leases a database for the token ("laravel-<token>"); the id goes
 *   to the worker in TESTDBD_LEASE_ID_<token>.
 * - setUpTestCase (in the worker, before each test): points the connection
 *   (the default one, or the one given) at the token's lease: host, read
 *   and write hosts, port, database, username, password.
 * - tearDownTestCase (in the worker, after each test, once Laravel has
 *   rolled back): disconnects and resets the database to the template,
 *   unless the test case uses the TestdbdDatabase trait, which resets itself.
 * - tearDownProcess (in the runner, after the workers): releases the
 *   token's lease. A runner that dies releases what it holds in a shutdown
 *   function.
 *
 * Laravel calls these only when running in parallel. Serial runs (php
 * artisan test, vendor/bin/phpunit) use the TestdbdDatabase trait in
 * tests/TestCase.php, which also works under --parallel next to these hooks:
 * it finds the token's lease in TESTDBD_LEASE_ID_<token>.
 *
 * Written against Laravel's ParallelTesting API (Laravel 8 to 11); tested
 * with Laravel 8.83 by the example application examples/laravel, whose
 * parallel runs go through Laravel's own ParallelRunner.
 */
final class ParallelTestingHooks
{
    /** @var array<string, array> leases the runner holds, by token */
    private static array $leases = [];
    private static bool $shutdownRegistered = false;

    /**
     * Registers the four hooks on $parallelTesting: Laravel's
     * Illuminate\Testing\ParallelTesting (ParallelTesting::getFacadeRoot()),
     * or anything with the same four methods. $connection is the connection
     * to point at the lease (null: config('database.default')). Laravel calls
     * the hooks with named arguments $token and $testCase.
     */
    public static function register(object $parallelTesting, ?string $connection = null): void
    {
        $parallelTesting->setUpProcess(static function ($token): void {
            self::setUpProcess((string) $token);
        });
        $parallelTesting->setUpTestCase(static function ($token, $testCase) use ($connection): void {
            self::setUpTestCase((string) $token, $testCase, $connection);
        });
        $parallelTesting->tearDownTestCase(static function ($token, $testCase) use ($connection): void {
            self::tearDownTestCase((string) $token, $testCase, $connection);
        });
        $parallelTesting->tearDownProcess(static function ($token): void {
            self::tearDownProcess((string) $token);
        });
    }

    /** In the runner: leases the token's database and hands its id to the token's worker. */
    public static function setUpProcess(string $token): array
    {
        $lease = Worker::acquire(Worker::client(), 'laravel-' . $token);
        self::$leases[$token] = $lease;
        Env::set('TESTDBD_LEASE_ID_' . $token, $lease['id']); // the workers inherit the environment
        self::registerRelease();
        return $lease;
    }

    /** In the runner: releases the token's lease. */
    public static function tearDownProcess(string $token): void
    {
        $lease = self::$leases[$token] ?? null;
        unset(self::$leases[$token]);
        Env::unset('TESTDBD_LEASE_ID_' . $token);
        if ($lease !== null) {
            Worker::client()->release($lease['id']);
        }
    }

    /** In the worker: points the test's connection at the token's lease. */
    public static function setUpTestCase(string $token, object $testCase, ?string $connection = null): void
    {
        $lease = Worker::lease(); // adopts TESTDBD_LEASE_ID_<token>, or leases one itself
        $app = self::app($testCase);
        $config = $app['config'];
        $name = $connection ?? $config->get('database.default');
        $config->set("database.connections.$name", self::connectionConfig((array) $config->get("database.connections.$name", []), $lease));
        $app['db']->purge($name);
    }

    /** In the worker: disconnects and resets the database (unless the trait does). */
    public static function tearDownTestCase(string $token, object $testCase, ?string $connection = null): void
    {
        if (self::usesTrait($testCase) || !Worker::hasLease()) {
            return;
        }
        $app = self::app($testCase);
        $app['db']->disconnect($connection ?? $app['config']->get('database.default'));
        Worker::reset();
    }

    /**
     * A Laravel connection configuration pointed at a lease: host (and the
     * read and write hosts, when the connection splits them), port,
     * database, username and password; url is cleared, since it would win
     * over them.
     */
    public static function connectionConfig(array $connection, array $lease): array
    {
        $connection['driver'] = $connection['driver'] ?? 'mysql';
        $connection['url'] = null;
        $connection['host'] = $lease['host'];
        $connection['port'] = (int) $lease['port'];
        $connection['database'] = $lease['database'];
        $connection['username'] = $lease['user'];
        $connection['password'] = $lease['password'];
        foreach (['read', 'write'] as $side) {
            if (isset($connection[$side]) && is_array($connection[$side])) {
                $connection[$side]['host'] = [$lease['host']];
                unset($connection[$side]['port'], $connection[$side]['database'], $connection[$side]['username'], $connection[$side]['password']);
            }
        }
        return $connection;
    }

    /** Whether a test case resets through the TestdbdDatabase trait. */
    public static function usesTrait(object $testCase): bool
    {
        for ($class = get_class($testCase); $class !== false; $class = get_parent_class($class)) {
            $traits = class_uses($class) ?: [];
            while ($traits !== []) {
                $trait = array_shift($traits);
                if ($trait === TestdbdDatabase::class) {
                    return true;
                }
                $traits = array_merge($traits, class_uses($trait) ?: []);
            }
        }
        return false;
    }

    /** The test case's application (Laravel keeps it in the protected $app). */
    private static function app(object $testCase): mixed
    {
        $app = (fn () => $this->app ?? null)->call($testCase);
        if ($app === null && function_exists('app')) {
            $app = app();
        }
        if ($app === null) {
            throw new \LogicException('testdbd: the test case has no Laravel application');
        }
        return $app;
    }

    private static function registerRelease(): void
    {
        if (self::$shutdownRegistered) {
            return;
        }
        self::$shutdownRegistered = true;
        register_shutdown_function(static function (): void {
            foreach (array_keys(self::$leases) as $token) {
                try {
                    self::tearDownProcess((string) $token);
                } catch (\Throwable $e) {
                    fwrite(STDERR, 'testdbd: ' . $e->getMessage() . "\n");
                }
            }
        });
        \Testdbd\Signals::releaseOn();
    }

    /** @internal for tests */
    public static function held(): array
    {
        return self::$leases;
    }
}
