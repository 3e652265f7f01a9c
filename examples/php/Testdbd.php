<?php

declare(strict_types=1);

/**
 * A small client of testdbd's REST API for PHP test suites. It needs
 * nothing beyond PHP's standard streams (no curl extension, no Composer);
 * PDO with pdo_mysql connects to the leased database.
 *
 * The daemon's address comes from TESTDBD_ADDR (default 127.0.0.1:8080)
 * and its token, if it wants one, from TESTDBD_TOKEN. Errors are thrown as
 * RuntimeException with the daemon's message, which says what to do.
 */
final class Testdbd
{
    private string $base;
    private ?string $token;

    public function __construct(?string $addr = null, ?string $token = null)
    {
        $addr = $addr ?? (getenv('TESTDBD_ADDR') ?: '127.0.0.1:8080');
        if (!str_contains($addr, '://')) {
            $addr = 'http://' . $addr;
        }
        $this->base = rtrim($addr, '/');
        $this->token = $token ?? (getenv('TESTDBD_TOKEN') ?: null);
    }

    /**
     * Builds the template from a local directory of goose migrations (the
     * files are uploaded, so the daemon may run elsewhere), or finds the one
     * already built from the same files. Returns the template.
     */
    public function ensureTemplate(string $name, string $migrationsDir, string $seedSql = ''): array
    {
        $files = [];
        foreach (glob(rtrim($migrationsDir, '/') . '/*.sql') ?: [] as $path) {
            $files[] = ['name' => basename($path), 'content' => file_get_contents($path)];
        }
        if ($files === []) {
            throw new RuntimeException("no *.sql migrations in $migrationsDir");
        }
        return $this->call('POST', '/v1/templates', ['name' => $name, 'migrations' => $files, 'seed_sql' => $seedSql]);
    }

    /**
     * Leases a database of the template. $worker is a sticky key (e.g. the
     * paratest TEST_TOKEN): the same worker gets its database back when it
     * can. $strategy is STRATEGY_TRUNCATE, STRATEGY_SNAPSHOT or
     * STRATEGY_ROLLBACK. Returns the lease: host, port, user, password,
     * database, dsn, url, id, ...
     */
    public function acquire(string $template, string $worker, string $strategy = 'STRATEGY_SNAPSHOT', int $ttlSeconds = 600): array
    {
        return $this->call('POST', '/v1/leases', [
            'template' => $template,
            'worker' => $worker,
            'strategy' => $strategy,
            'ttl_seconds' => $ttlSeconds,
        ]);
    }

    /** Resets the leased database to the template now; returns the report. */
    public function reset(string $leaseId, ?string $strategy = null): array
    {
        return $this->call('POST', '/v1/leases/' . rawurlencode($leaseId) . ':reset', $strategy === null ? [] : ['strategy' => $strategy]);
    }

    /** Gives the lease back; the daemon resets the database in the background. */
    public function release(string $leaseId): array
    {
        return $this->call('DELETE', '/v1/leases/' . rawurlencode($leaseId));
    }

    /** Opens a PDO connection to a lease's database. */
    public static function pdo(array $lease): PDO
    {
        $dsn = sprintf('mysql:host=%s;port=%d;dbname=%s;charset=utf8mb4', $lease['host'], $lease['port'], $lease['database']);
        return new PDO($dsn, $lease['user'], $lease['password'], [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    }

    private function call(string $method, string $path, ?array $body = null): array
    {
        $headers = ['Accept: application/json'];
        $content = '';
        if ($body !== null) {
            $headers[] = 'Content-Type: application/json';
            $content = json_encode((object) $body, JSON_THROW_ON_ERROR);
        }
        if ($this->token) {
            $headers[] = 'Authorization: Bearer ' . $this->token;
        }
        $context = stream_context_create(['http' => [
            'method' => $method,
            'header' => implode("\r\n", $headers),
            'content' => $content,
            'ignore_errors' => true, // read the daemon's error body on 4xx/5xx
            'timeout' => 600,
        ]]);
        $raw = @file_get_contents($this->base . $path, false, $context);
        if ($raw === false) {
            throw new RuntimeException("cannot reach the testdbd daemon at {$this->base}: is it running (testdbd serve)? Set TESTDBD_ADDR to its REST address.");
        }
        $status = 0;
        if (isset($http_response_header[0]) && preg_match('#^HTTP/\S+ (\d{3})#', $http_response_header[0], $m)) {
            $status = (int) $m[1];
        }
        $data = json_decode($raw, true);
        if ($status !== 200) {
            throw new RuntimeException(is_array($data) && isset($data['message']) ? $data['message'] : "HTTP $status from the daemon: $raw");
        }
        return $data;
    }
}
