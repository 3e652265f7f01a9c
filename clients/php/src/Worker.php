<?php

declare(strict_types=1);

namespace Testdbd;

/**
 * This process's lease: one database per test process (per paratest
 * TEST_TOKEN), acquired on first use, reset after each test, released when
 * the process ends.
 *
 * Settings come from the environment (phpunit.xml's <env> elements set it):
 *
 *   TESTDBD_ADDR           the daemon's REST address (127.0.0.1:8080)
 *   TESTDBD_TOKEN          its bearer token, if it wants one
 *   TESTDBD_TEMPLATE       the template to lease a database of (required)
 *   TESTDBD_MIGRATIONS     a directory of goose *.sql migrations: the template
 *                          is ensured from it (uploaded) before the first lease
 *   TESTDBD_SEED           a SQL file run after the migrations
 *   TESTDBD_STRATEGY       truncate, snapshot (default) or rollback
 *   TESTDBD_TTL            the lease's TTL in seconds (3600), renewed as tests run
 *   TESTDBD_WORKER_PREFIX  the worker key's prefix (phpunit): "phpunit-1" for
 *                          TEST_TOKEN 1, "phpunit-main" without paratest
 *   TESTDBD_PIN_TEMPLATE   true (the default): lease only databases of the
 *                          build this process ensured, or, without
 *                          TESTDBD_MIGRATIONS, of TESTDBD_TEMPLATE_HASH (what
 *                          `testdbd template ensure --format env` exports);
 *                          false: whatever build the name points at
 *
 * A lease acquired by someone else is used and left to its owner: the one
 * named by TESTDBD_LEASE_ID_<TEST_TOKEN> (the Laravel hooks' runner process
 * sets it for its workers), or, without TEST_TOKEN, TESTDBD_LEASE_ID (e.g.
 * from `eval "$(testdbd lease ... --format env)"`).
 *
 * The lease is released by a shutdown function (normal ends, exit(), fatal
 * errors) and, with the pcntl extension, on SIGTERM, SIGINT and SIGHUP when
 * nothing else handles them. A process killed with SIGKILL keeps its lease
 * until the TTL runs out.
 */
final class Worker
{
    private static ?Client $client = null;
    private static ?array $lease = null;
    private static bool $owned = false;
    private static float $renewedAt = 0.0;
    private static bool $shutdownRegistered = false;
    private static array $options = [];

    /**
     * Overrides settings for this process (keys: addr, token, template,
     * migrations, seed, strategy, ttl, worker_prefix, pin_template,
     * template_hash), e.g.
     * from a bootstrap file; the environment fills in the rest.
     */
    public static function configure(array $options): void
    {
        self::$options = $options + self::$options;
        if (isset($options['addr']) || isset($options['token'])) {
            self::$client = null;
        }
    }

    public static function client(): Client
    {
        return self::$client ??= new Client(self::option('addr'), self::option('token'));
    }

    /** Whether this process holds (or uses) a lease now. */
    public static function hasLease(): bool
    {
        return self::$lease !== null;
    }

    /** The paratest token of this process (TEST_TOKEN), or null without paratest. */
    public static function token(): ?string
    {
        return Env::get('TEST_TOKEN');
    }

    /** This process's worker key: "<prefix>-<TEST_TOKEN>", or "<prefix>-main". */
    public static function workerKey(?string $prefix = null): string
    {
        return ($prefix ?? self::option('worker_prefix') ?? 'phpunit') . '-' . (self::token() ?? 'main');
    }

    /** This process's lease, acquired (or adopted) on the first call. */
    public static function lease(): array
    {
        if (self::$lease !== null) {
            return self::$lease;
        }
        $client = self::client();
        $token = self::token();
        $adopt = $token !== null ? Env::get('TESTDBD_LEASE_ID_' . $token) : Env::get('TESTDBD_LEASE_ID');
        if ($adopt !== null) {
            self::$lease = $client->getLease($adopt);
            self::$owned = false;
        } else {
            self::$lease = self::acquire($client, self::workerKey());
            self::$owned = true;
            self::registerRelease();
        }
        self::$renewedAt = microtime(true);
        return self::$lease;
    }

    /**
     * Ensures the configured template (when TESTDBD_MIGRATIONS is set) and
     * leases a database of it for $worker. The caller owns the lease.
     */
    public static function acquire(Client $client, string $worker): array
    {
        $template = self::option('template');
        if ($template === null) {
            throw new TestdbdException('no testdbd template configured: set TESTDBD_TEMPLATE (e.g. <env name="TESTDBD_TEMPLATE" value="app"/> in phpunit.xml)');
        }
        $pin = !in_array(strtolower((string) self::option('pin_template')), ['0', 'false', 'no', 'off'], true);
        $hash = null;
        $migrations = self::option('migrations');
        if ($migrations !== null) {
            $seed = self::option('seed');
            $seedSql = $seed !== null ? (string) file_get_contents($seed) : '';
            $hash = $client->ensureTemplate($template, $migrations, $seedSql)['hash'];
        } else {
            $hash = self::option('template_hash');
        }
        return $client->acquire($template, $worker, self::option('strategy') ?? 'STRATEGY_SNAPSHOT',
            (int) (self::option('ttl') ?? 3600), 0, $pin ? $hash : null);
    }

    /**
     * Resets this process's lease to the template now (with its own
     * strategy, or $strategy) and returns the report; renews the lease when
     * half its TTL has passed.
     */
    public static function reset(?string $strategy = null): array
    {
        $lease = self::lease();
        $report = self::client()->reset($lease['id'], $strategy);
        $ttl = (int) ($lease['ttl_seconds'] ?? 0) ?: (int) (self::option('ttl') ?? 3600);
        if (microtime(true) - self::$renewedAt > $ttl / 2) {
            self::client()->renew($lease['id']);
            self::$renewedAt = microtime(true);
        }
        return $report;
    }

    /**
     * Releases this process's lease now (if it owns one). A lease that
     * testdbd ended before (its TTL ran out, its database outgrew the
     * daemon's --lease-space, its server died, the daemon restarted)
     * explains the errors its tests got on their connections: a line on
     * stderr says why it ended.
     */
    public static function release(?float $timeout = null): void
    {
        $lease = self::$lease;
        self::$lease = null;
        if ($lease !== null && self::$owned) {
            self::$owned = false;
            $final = self::client()->release($lease['id'], $timeout);
            $reason = (string) ($final['ended_reason'] ?? '');
            if (($final['state'] ?? '') !== 'released' || ($reason !== '' && !str_starts_with($reason, 'released'))) {
                fwrite(STDERR, "testdbd: lease {$lease['id']} (database {$lease['database']}) ended before this process released it: $reason\n");
            }
        }
    }

    /** Opens a PDO connection to this process's database. */
    public static function pdo(array $options = []): \PDO
    {
        return Client::pdo(self::lease(), $options);
    }

    /**
     * Exports the lease as the variables frameworks read (DB_HOST, DB_PORT,
     * DB_DATABASE, DB_USERNAME, DB_PASSWORD, DB_READ_HOST, DB_WRITE_HOST,
     * DB_URL, DATABASE_URL, TESTDBD_LEASE_ID), to getenv, $_ENV and $_SERVER.
     */
    public static function exportEnv(?array $lease = null): void
    {
        foreach (Client::env($lease ?? self::lease()) as $name => $value) {
            Env::set($name, (string) $value);
        }
    }

    private static function option(string $name): ?string
    {
        $value = self::$options[$name] ?? Env::get('TESTDBD_' . strtoupper($name));
        return $value === null || $value === '' ? null : (string) $value;
    }

    private static function registerRelease(): void
    {
        if (self::$shutdownRegistered) {
            return;
        }
        self::$shutdownRegistered = true;
        $pid = getmypid();
        register_shutdown_function(static function () use ($pid): void {
            if (getmypid() !== $pid) {
                return; // a forked child: the lease is its parent's
            }
            try {
                self::release(10.0);
            } catch (\Throwable $e) {
                fwrite(STDERR, 'testdbd: ' . $e->getMessage() . "\n");
            }
        });
        Signals::releaseOn();
    }
}
