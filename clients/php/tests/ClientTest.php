<?php

declare(strict_types=1);

namespace Testdbd\Tests;

use PHPUnit\Framework\TestCase;
use Testdbd\Client;
use Testdbd\TestdbdException;

/** Testdbd\Client against the daemon at TESTDBD_ADDR. */
final class ClientTest extends TestCase
{
    private const TEMPLATE = 'php-client-api';

    public function testLeaseLifecycle(): void
    {
        $c = new Client();
        $tpl = $c->ensureTemplate(self::TEMPLATE, __DIR__ . '/migrations');
        $this->assertSame('TEMPLATE_STATE_READY', $tpl['state']);
        $this->assertIsInt($tpl['version']); // a 64-bit field, read as an int
        $this->assertSame($tpl['hash'], $c->getTemplate(self::TEMPLATE)['hash']);

        $lease = $c->acquire(self::TEMPLATE, 'phpunit-client-test', 'snapshot', 60, 0, $tpl['hash']);
        try {
            $this->assertSame($tpl['hash'], $lease['template_hash']);
            $this->assertSame('STRATEGY_SNAPSHOT', $lease['strategy']);
            $ids = array_column($c->listLeases(self::TEMPLATE), 'id');
            $this->assertContains($lease['id'], $ids);

            $db = Client::pdo($lease);
            $db->exec("INSERT INTO accounts (email) VALUES ('new@example.com')");
            $this->assertSame('3', $db->lastInsertId());
            $db = null;
            $report = $c->reset($lease['id']);
            $this->assertSame(['accounts'], $report['tables_reset']);
            $db = Client::pdo($lease);
            $this->assertSame(2, (int) $db->query('SELECT COUNT(*) FROM accounts')->fetchColumn());
            $db = null;

            $renewed = $c->renew($lease['id'], 120);
            $this->assertSame(120, $renewed['ttl_seconds']);
            $this->assertSame(1, $c->getLease($lease['id'])['resets']);
            $this->assertSame($lease['database'], Client::env($lease)['DB_DATABASE']);
        } finally {
            $this->assertSame('released', $c->release($lease['id'])['state']);
        }
        $this->assertNotContains($lease['id'], array_column($c->listLeases(self::TEMPLATE), 'id'));
    }

    /**
     * A lease that testdbd ended (here its TTL ran out) says why and what to
     * do: getLease and release give its state and ended_reason, and reset
     * and renew throw with the reason.
     */
    public function testEndedLeaseSaysWhy(): void
    {
        $c = new Client();
        $tpl = $c->ensureTemplate(self::TEMPLATE, __DIR__ . '/migrations');
        $lease = $c->acquire(self::TEMPLATE, 'phpunit-ended', 'snapshot', 1, 0, $tpl['hash']);
        $deadline = microtime(true) + 30;
        while (($now = $c->getLease($lease['id']))['state'] !== 'expired') {
            $this->assertLessThan($deadline, microtime(true), 'a lease of 1 s did not expire within 30 s');
            usleep(20000);
        }
        $this->assertStringContainsString('after its TTL of 1s', $now['ended_reason']);
        $this->assertStringContainsString('acquire a new lease', $now['ended_reason']);
        foreach (['reset' => fn () => $c->reset($lease['id']), 'renew' => fn () => $c->renew($lease['id'])] as $name => $call) {
            try {
                $call();
                $this->fail("$name of an expired lease worked");
            } catch (TestdbdException $e) {
                $this->assertStringContainsString('after its TTL of 1s', $e->getMessage(), $name);
                $this->assertStringContainsString('acquire a new lease', $e->getMessage(), $name);
            }
        }
        $final = $c->release($lease['id']);
        $this->assertSame('expired', $final['state']);
        $this->assertStringContainsString('after its TTL of 1s', $final['ended_reason']);
    }

    public function testErrorsCarryTheDaemonsMessage(): void
    {
        try {
            (new Client())->acquire('no-such-template', 'phpunit-nobody');
            $this->fail('acquired a lease of a template that does not exist');
        } catch (TestdbdException $e) {
            $this->assertStringContainsString('no template named "no-such-template"', $e->getMessage());
            $this->assertStringContainsString('POST /v1/leases', $e->getMessage());
            $this->assertSame(5, $e->getGrpcCode());
            $this->assertSame(404, $e->getHttpStatus());
        }
    }

    public function testPinnedToAnotherBuild(): void
    {
        $c = new Client();
        $c->ensureTemplate(self::TEMPLATE, __DIR__ . '/migrations');
        try {
            $c->acquire(self::TEMPLATE, 'phpunit-pinned', null, 60, 0, str_repeat('0', 64));
            $this->fail('leased a database of another build than the pinned one');
        } catch (TestdbdException $e) {
            // Refused by the daemon, or released by the client after the fact.
        }
        $this->assertNotContains('phpunit-pinned', array_column($c->listLeases(self::TEMPLATE), 'worker'));
    }

    public function testUnreachableDaemon(): void
    {
        $this->expectException(TestdbdException::class);
        $this->expectExceptionMessageMatches('/cannot reach the testdbd daemon at http:\/\/127\.0\.0\.1:1 .*TESTDBD_ADDR/');
        (new Client('127.0.0.1:1'))->listLeases();
    }

    public function testInt64FieldsAsStringsOrNumbers(): void
    {
        $in = ['resets' => '7', 'port' => 3306, 'version' => 9, 'engine' => 'mariadb 10.11.19',
            'acquire' => ['count' => '9223372036854775807', 'p50_ms' => 0.5],
            'resets_by_strategy' => [['fallbacks' => '2']], 'name' => '12'];
        $out = Client::ints($in);
        $this->assertSame(7, $out['resets']);
        $this->assertSame(9, $out['version']);
        $this->assertSame(PHP_INT_MAX, $out['acquire']['count']);
        $this->assertSame(2, $out['resets_by_strategy'][0]['fallbacks']);
        $this->assertSame('12', $out['name']); // not a 64-bit field
        $this->assertSame('mariadb 10.11.19', $out['engine']);
    }

    public function testStrategyNames(): void
    {
        $this->assertSame('STRATEGY_ROLLBACK', Client::strategy('rollback'));
        $this->assertSame('STRATEGY_TRUNCATE', Client::strategy('STRATEGY_TRUNCATE'));
        $this->assertNull(Client::strategy(''));
        $this->expectException(\InvalidArgumentException::class);
        Client::strategy('fast');
    }

    /**
     * PDO with PDO::MYSQL_ATTR_SSL_CA (the lease's CA certificate) and
     * PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT connects with TLS; trusting
     * other authorities (the system's) it is refused, and connects when it
     * does not verify, so the refusal is the verification's; Client::pdo
     * without $tls stays a plain connection.
     */
    public function testTlsWithTheLeaseCa(): void
    {
        $c = new Client();
        $tpl = $c->ensureTemplate(self::TEMPLATE, __DIR__ . '/migrations');
        $lease = $c->acquire(self::TEMPLATE, 'phpunit-tls', 'snapshot', 60, 0, $tpl['hash']);
        $cipher = static fn (\PDO $db): string => (string) $db->query("SHOW STATUS LIKE 'Ssl_cipher'")->fetch(\PDO::FETCH_NUM)[1];
        $connect = static fn (string $ca, bool $verify = true): \PDO => new \PDO(
            sprintf('mysql:host=%s;port=%d;dbname=%s', $lease['host'], $lease['port'], $lease['database']),
            $lease['user'],
            $lease['password'],
            [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION, \PDO::MYSQL_ATTR_SSL_CA => $ca, \PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => $verify],
        );
        try {
            $this->assertStringStartsWith('-----BEGIN CERTIFICATE-----', $lease['ca_cert']);
            $this->assertNotSame('', $cipher($connect(Client::caFile($lease))));
            $this->assertNotSame('', $cipher(Client::pdo($lease, [], true)));
            $this->assertSame('', $cipher(Client::pdo($lease)));

            $others = openssl_get_cert_locations()['default_cert_file'];
            if (!is_file($others)) {
                $this->markTestIncomplete("no system CA bundle at $others (Debian package ca-certificates)");
            }
            // The same connection without verification succeeds: the
            // refusal is the verification's (mysqlnd says no more than
            // that TLS failed).
            $this->assertNotSame('', $cipher($connect($others, false)));
            try {
                $connect($others);
                $this->fail('a client trusting other authorities connected');
            } catch (\PDOException $e) {
                $this->assertStringContainsString('[2002] Cannot connect to MySQL using SSL', $e->getMessage());
            }
        } finally {
            $c->release($lease['id']);
        }
    }
}
