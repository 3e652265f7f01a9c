<?php

declare(strict_types=1);

namespace Testdbd;

/**
 * A client of testdbd's REST API on PHP's own HTTP streams (no curl
 * extension needed).
 *
 * The daemon's address comes from TESTDBD_ADDR (default 127.0.0.1:8080) and
 * its token, if it wants one, from TESTDBD_TOKEN (sent as "Authorization:
 * Bearer <token>"). Every error is thrown as TestdbdException with the
 * daemon's own message. Templates, leases and reports are the API's JSON
 * objects as arrays; its 64-bit integer fields (resets, version, ...) are
 * ints whether the daemon writes them as JSON strings or numbers.
 */
final class Client
{
    public const DEFAULT_ADDR = '127.0.0.1:8080';
    public const STRATEGIES = ['STRATEGY_TRUNCATE', 'STRATEGY_SNAPSHOT', 'STRATEGY_ROLLBACK'];

    /** The API's 64-bit integer fields. */
    private const INT64_FIELDS = [
        'resets' => true, 'version' => true, 'wait_timeout_ms' => true, 'leases_active' => true,
        'leases_acquired' => true, 'leases_expired' => true, 'acquire_exhausted' => true, 'memory_bytes' => true,
        'datadir_bytes' => true, 'count' => true, 'fallbacks' => true, 'failures' => true,
    ];

    private string $base;
    private ?string $token;
    /** Whether AcquireLease takes template_hash; null until asked. */
    private ?bool $pinSupported = null;

    public function __construct(?string $addr = null, ?string $token = null, private float $timeout = 600.0)
    {
        $addr = $addr ?? (Env::get('TESTDBD_ADDR') ?? self::DEFAULT_ADDR);
        if (!str_contains($addr, '://')) {
            $addr = 'http://' . $addr;
        }
        $this->base = rtrim($addr, '/');
        $this->token = $token ?? Env::get('TESTDBD_TOKEN');
    }

    public function addr(): string
    {
        return $this->base;
    }

    /**
     * Returns the API's name of a strategy: 'snapshot', 'SNAPSHOT' and
     * 'STRATEGY_SNAPSHOT' give 'STRATEGY_SNAPSHOT'; null and '' give null.
     */
    public static function strategy(?string $strategy): ?string
    {
        if ($strategy === null || trim($strategy) === '') {
            return null;
        }
        $name = strtoupper(trim($strategy));
        if (!str_starts_with($name, 'STRATEGY_')) {
            $name = 'STRATEGY_' . $name;
        }
        if (!in_array($name, self::STRATEGIES, true)) {
            throw new \InvalidArgumentException("unknown testdbd strategy '$strategy': use truncate, snapshot or rollback");
        }
        return $name;
    }

    /**
     * Builds the template from a local directory of goose migrations (the
     * *.sql files are uploaded, so the daemon may run elsewhere), or finds
     * the one already built from the same files. Returns the template.
     */
    public function ensureTemplate(string $name, string $migrationsDir, string $seedSql = '', int $poolSize = 0): array
    {
        $files = [];
        $paths = glob(rtrim($migrationsDir, '/') . '/*.sql') ?: [];
        sort($paths);
        foreach ($paths as $path) {
            $files[] = ['name' => basename($path), 'content' => (string) file_get_contents($path)];
        }
        if ($files === []) {
            throw new TestdbdException("no *.sql migrations in $migrationsDir");
        }
        return $this->call('POST', '/v1/templates', [
            'name' => $name, 'migrations' => $files, 'seed_sql' => $seedSql, 'pool_size' => $poolSize,
        ]);
    }

    /** Returns a template: state, hash, tables, build timings, pool counts. */
    public function getTemplate(string $name): array
    {
        return $this->call('GET', '/v1/templates/' . rawurlencode($name));
    }

    /**
     * Leases a database of the template. $worker is a sticky key (e.g.
     * "phpunit-1" for paratest's TEST_TOKEN 1): the same worker gets its
     * previous database back when it is free. $strategy is truncate,
     * snapshot or rollback (null: the daemon's default); 0 for $ttlSeconds
     * and $waitTimeoutMs take the daemon's defaults.
     *
     * $templateHash pins the lease to one build of the template (the hash
     * ensureTemplate returned): a daemon that knows the AcquireLease field
     * checks it; with one that does not, the lease's own template_hash is
     * compared after the fact. A lease of another build is released and
     * TestdbdException thrown.
     *
     * Returns the lease: id, host, port, user, password, database, dsn,
     * url, strategy, template_hash, expires_at, ...
     */
    public function acquire(string $template, string $worker = '', ?string $strategy = null, int $ttlSeconds = 0,
        int $waitTimeoutMs = 0, ?string $templateHash = null): array
    {
        $body = ['template' => $template, 'worker' => $worker, 'ttl_seconds' => $ttlSeconds];
        $strategy = self::strategy($strategy);
        if ($strategy !== null) {
            $body['strategy'] = $strategy;
        }
        if ($waitTimeoutMs > 0) {
            $body['wait_timeout_ms'] = $waitTimeoutMs;
        }
        if ($templateHash !== null && $templateHash !== '' && $this->pinSupported !== false) {
            try {
                $lease = $this->call('POST', '/v1/leases', $body + ['template_hash' => $templateHash]);
                $this->pinSupported = true;
            } catch (TestdbdException $e) {
                $msg = $e->getMessage();
                if ($e->getGrpcCode() !== 3 || !str_contains($msg, 'unknown field') || !str_contains($msg, 'template_hash')) {
                    throw $e;
                }
                $this->pinSupported = false; // an older daemon: check after the fact
                $lease = $this->call('POST', '/v1/leases', $body);
            }
        } else {
            $lease = $this->call('POST', '/v1/leases', $body);
        }
        $got = $lease['template_hash'] ?? '';
        if ($templateHash !== null && $templateHash !== '' && $got !== '' && $got !== $templateHash) {
            try {
                $this->release($lease['id']);
            } catch (TestdbdException) {
            }
            throw new TestdbdException(sprintf(
                "the daemon leased a database of template '%s' built as %s, not %s that this run ensured: the template "
                . 'was rebuilt from other migrations meanwhile (another run sharing the daemon and the template\'s '
                . 'name?); give each set of migrations its own template name',
                $template, substr($got, 0, 12), substr($templateHash, 0, 12)));
        }
        return $lease;
    }

    public function getLease(string $leaseId): array
    {
        return $this->call('GET', '/v1/leases/' . rawurlencode($leaseId));
    }

    /** The active leases (of one template, if given). */
    public function listLeases(?string $template = null): array
    {
        $query = $template !== null && $template !== '' ? '?template=' . rawurlencode($template) : '';
        return $this->call('GET', '/v1/leases' . $query)['leases'] ?? [];
    }

    /** Extends a lease's time to live from now (0: the lease's own TTL). */
    public function renew(string $leaseId, int $ttlSeconds = 0): array
    {
        return $this->call('POST', '/v1/leases/' . rawurlencode($leaseId) . ':renew', ['ttl_seconds' => $ttlSeconds]);
    }

    /**
     * Resets the leased database to its template now and returns the report
     * (strategy, total_ms, tables_reset, fallback_reason, ...). The reset
     * ends the lease's open connections: close yours first.
     */
    public function reset(string $leaseId, ?string $strategy = null): array
    {
        $strategy = self::strategy($strategy);
        return $this->call('POST', '/v1/leases/' . rawurlencode($leaseId) . ':reset', $strategy === null ? [] : ['strategy' => $strategy]);
    }

    /**
     * Gives the lease back; the daemon resets its database in the
     * background. Returns the lease's final state: "released", or, for a
     * lease that testdbd had ended already, "expired" or "failed" with
     * ended_reason saying why. (A reset or renew of such a lease throws a
     * TestdbdException with the same reason.)
     */
    public function release(string $leaseId, ?float $timeout = null): array
    {
        return $this->call('DELETE', '/v1/leases/' . rawurlencode($leaseId), null, $timeout);
    }

    /**
     * Opens a PDO connection (pdo_mysql) to a lease's database; with $tls,
     * over TLS, verifying the server with the lease's CA certificate
     * (tlsOptions).
     */
    public static function pdo(array $lease, array $options = [], bool $tls = false): \PDO
    {
        if ($tls) {
            $options += self::tlsOptions($lease);
        }
        $dsn = sprintf('mysql:host=%s;port=%d;dbname=%s;charset=utf8mb4', $lease['host'], $lease['port'], $lease['database']);
        return new \PDO($dsn, $lease['user'], $lease['password'], $options + [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]);
    }

    /**
     * PDO options for a TLS connection to a lease's server that trusts the
     * lease's CA certificate alone and verifies the server's certificate:
     * PDO::MYSQL_ATTR_SSL_CA (caFile) and
     * PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT.
     */
    public static function tlsOptions(array $lease): array
    {
        return [\PDO::MYSQL_ATTR_SSL_CA => self::caFile($lease), \PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => true];
    }

    /** This process's directory of CA certificate files; null until made. */
    private static ?string $caDir = null;

    /**
     * The path of a file holding the lease's ca_cert, the PEM certificate
     * of the authority that signed its server's TLS certificate (for
     * PDO::MYSQL_ATTR_SSL_CA, Laravel's MYSQL_ATTR_SSL_CA, the mariadb
     * CLI's --ssl-ca). It lives in a directory of this process's own (mode
     * 0700), removed when the process ends. Throws TestdbdException when
     * the lease carries no CA certificate.
     */
    public static function caFile(array $lease): string
    {
        $pem = $lease['ca_cert'] ?? '';
        if ($pem === '') {
            throw new TestdbdException(sprintf('lease %s carries no CA certificate (ca_cert): its daemon predates TLS on its '
                . 'servers, or the server offers no certificate clients can verify; connect without TLS', $lease['id'] ?? '?'));
        }
        if (self::$caDir === null) {
            $dir = sys_get_temp_dir() . '/testdbd-ca-' . bin2hex(random_bytes(8));
            if (!mkdir($dir, 0700)) {
                throw new TestdbdException("cannot create $dir for the lease's CA certificate");
            }
            self::$caDir = $dir;
            register_shutdown_function(static function () use ($dir): void {
                array_map('unlink', glob($dir . '/*') ?: []);
                @rmdir($dir);
            });
        }
        $path = self::$caDir . '/' . substr(hash('sha256', $pem), 0, 16) . '.pem';
        if (!is_file($path)) {
            $tmp = $path . '.tmp';
            if (file_put_contents($tmp, $pem) === false || !rename($tmp, $path)) {
                throw new TestdbdException("cannot write the lease's CA certificate to $path");
            }
        }
        return $path;
    }

    /**
     * The variables frameworks read, as `testdbd lease --format env` prints
     * them: DB_HOST, DB_PORT, DB_DATABASE, DB_USERNAME, DB_PASSWORD,
     * DB_READ_HOST and DB_WRITE_HOST, DB_URL and DATABASE_URL,
     * TESTDBD_LEASE_ID.
     */
    public static function env(array $lease): array
    {
        return [
            'DB_CONNECTION' => 'mysql',
            'DB_HOST' => $lease['host'],
            'DB_PORT' => (string) $lease['port'],
            'DB_DATABASE' => $lease['database'],
            'DB_USERNAME' => $lease['user'],
            'DB_PASSWORD' => $lease['password'],
            'DB_READ_HOST' => $lease['host'],
            'DB_WRITE_HOST' => $lease['host'],
            'DB_URL' => $lease['url'],
            'DATABASE_URL' => $lease['url'],
            'TESTDBD_LEASE_ID' => $lease['id'],
        ];
    }

    /**
     * Converts the API's 64-bit integer fields to ints, wherever they are.
     *
     * @internal
     */
    public static function ints(mixed $value): mixed
    {
        if (!is_array($value)) {
            return $value;
        }
        foreach ($value as $k => $v) {
            if (is_string($k) && isset(self::INT64_FIELDS[$k]) && is_string($v) && preg_match('/^-?[0-9]+$/', $v)) {
                $value[$k] = (int) $v;
            } elseif (is_array($v)) {
                $value[$k] = self::ints($v);
            }
        }
        return $value;
    }

    private function call(string $method, string $path, ?array $body = null, ?float $timeout = null): array
    {
        $headers = ['Accept: application/json'];
        $content = '';
        if ($body !== null) {
            $headers[] = 'Content-Type: application/json';
            $content = json_encode((object) $body, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES);
        }
        if ($this->token !== null && $this->token !== '') {
            $headers[] = 'Authorization: Bearer ' . $this->token;
        }
        $context = stream_context_create(['http' => [
            'method' => $method,
            'header' => implode("\r\n", $headers),
            'content' => $content,
            'ignore_errors' => true, // read the daemon's error body on 4xx and 5xx
            'timeout' => $timeout ?? $this->timeout,
            'protocol_version' => 1.1,
            'follow_location' => 0,
        ]]);
        $what = $method . ' ' . explode('?', $path)[0];
        $http_response_header = [];
        $raw = @file_get_contents($this->base . $path, false, $context);
        if ($raw === false) {
            $why = error_get_last()['message'] ?? 'no answer';
            throw new TestdbdException("$what: cannot reach the testdbd daemon at {$this->base} ($why): is it running (testdbd serve)? Set TESTDBD_ADDR to its REST address.");
        }
        $status = 0;
        foreach ($http_response_header as $line) { // the last status line wins (after a 100 Continue)
            if (preg_match('#^HTTP/\S+ (\d{3})#', $line, $m)) {
                $status = (int) $m[1];
            }
        }
        $data = json_decode($raw, true);
        if ($status !== 200) {
            if (is_array($data) && isset($data['message']) && $data['message'] !== '') {
                throw new TestdbdException("$what: {$data['message']} (HTTP $status)", isset($data['code']) ? (int) $data['code'] : null, $status);
            }
            throw new TestdbdException("$what: HTTP $status from the daemon at {$this->base}: " . substr(trim($raw), 0, 300), null, $status);
        }
        if (!is_array($data)) {
            throw new TestdbdException("$what: the daemon at {$this->base} answered something that is not JSON: " . substr($raw, 0, 200), null, $status);
        }
        return self::ints($data);
    }
}
