<?php

declare(strict_types=1);

/*
 * What a PHPUnit suite run by paratest (or `php artisan test --parallel`)
 * does with testdbd, without PHPUnit: each worker process has its own
 * TEST_TOKEN, leases one database for it, runs its tests one after another
 * with a reset between them, and releases the database when it exits. A
 * reset ends the lease's open connections, so each test connects anew
 * (Laravel reconnects by itself; see docs/laravel.md).
 *
 *   php examples/php/paratest.php          # a daemon at TESTDBD_ADDR (default 127.0.0.1:8080)
 *
 * Run without TEST_TOKEN it plays paratest: it builds the template once and
 * starts three workers (TEST_TOKEN=1..3). Workers 1 and 2 let tests commit
 * and reset with the snapshot strategy; worker 3 wraps each test in a
 * transaction and resets with the rollback strategy, as Laravel's
 * DatabaseTransactions would. Every test expects the template's state, so a
 * reset that missed anything fails the next one. Exit status 1 if any test
 * failed. It uses the testdbd package (clients/php) as a library; its
 * PHPUnit trait, Testdbd\PHPUnit\TestdbdDatabase, does all of this for a
 * PHPUnit suite (docs/laravel.md).
 */

// The testdbd package (clients/php), from this checkout; a project that
// requires testdbd/testdbd with Composer loads vendor/autoload.php instead.
require __DIR__ . '/../../clients/php/autoload.php';

use Testdbd\Client;

const TEMPLATE = 'app';
const WORKERS = 3;

$token = getenv('TEST_TOKEN');
exit($token === false || $token === '' ? runParent() : runWorker($token));

/** Builds the template and runs the workers, as paratest would. */
function runParent(): int
{
    $tpl = (new Client())->ensureTemplate(TEMPLATE, __DIR__ . '/../migrations');
    printf("template %s: %s, %d tables\n", $tpl['name'], $tpl['state'], $tpl['tables']);
    $workers = [];
    for ($t = 1; $t <= WORKERS; $t++) {
        $env = ['TEST_TOKEN' => (string) $t] + getenv();
        $proc = proc_open([PHP_BINARY, __FILE__], [1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes, null, $env);
        $workers[$t] = [$proc, $pipes[1]];
    }
    $failed = 0;
    foreach ($workers as $t => [$proc, $stdout]) {
        $out = stream_get_contents($stdout);
        fclose($stdout);
        $code = proc_close($proc);
        echo $out;
        if ($code !== 0) {
            echo "worker $t failed (exit $code)\n";
            $failed++;
        }
    }
    return $failed === 0 ? 0 : 1;
}

/** One worker: one lease for its TEST_TOKEN, the tests, a reset after each. */
function runWorker(string $token): int
{
    $strategy = $token === (string) WORKERS ? 'STRATEGY_ROLLBACK' : 'STRATEGY_SNAPSHOT';
    $testdbd = new Client(); // TESTDBD_ADDR, TESTDBD_TOKEN
    $lease = $testdbd->acquire(TEMPLATE, "paratest-$token", $strategy);
    register_shutdown_function(fn () => $testdbd->release($lease['id']));
    printf("[worker %s] lease %s: database %s, strategy %s\n", $token, $lease['id'], $lease['database'], $strategy);

    $failed = 0;
    foreach (tests() as $name => $test) {
        $transaction = $strategy === 'STRATEGY_ROLLBACK';
        $db = Client::pdo($lease);
        try {
            if ($transaction) {
                $db->beginTransaction();
            }
            $test($db);
            $result = 'ok';
        } catch (Throwable $e) {
            $result = 'FAIL: ' . $e->getMessage();
            $failed++;
        } finally {
            if ($transaction && $db->inTransaction()) {
                $db->rollBack();
            }
        }
        // A reset ends the lease's open sessions (rolling back whatever they
        // hold), so close the connection first and open a new one per test.
        $db = null;
        $report = $testdbd->reset($lease['id']);
        printf("[worker %s] %s: %s (reset by %s in %.2f ms: %s)\n", $token, $name, $result,
            strtolower(substr($report['strategy'], 9)), $report['total_ms'],
            $report['tables_reset'] ? implode(', ', $report['tables_reset']) : 'nothing to restore');
        if ($report['fallback_reason'] !== '') {
            printf("[worker %s]   the reset did more than usual: %s\n", $token, $report['fallback_reason']);
        }
    }
    return $failed === 0 ? 0 : 1;
}

function check(bool $ok, string $what): void
{
    if (!$ok) {
        throw new RuntimeException($what);
    }
}

function scalar(PDO $db, string $sql): mixed
{
    return $db->query($sql)->fetchColumn();
}

/** The "tests": each starts from the template and changes it. */
function tests(): array
{
    $createUser = function (PDO $db): void {
        $db->exec("INSERT INTO users (email, name) VALUES ('new@example.com', 'New')");
        // Ids hard-coded in tests stay right: the reset rewinds AUTO_INCREMENT.
        check((int) $db->lastInsertId() === 4, 'new user id is ' . $db->lastInsertId() . ', want 4');
        check((int) scalar($db, 'SELECT COUNT(*) FROM users') === 4, 'want 4 users');
    };
    return [
        'creates a user with id 4' => $createUser,
        'creates a user with id 4 again' => $createUser,
        'deleting a user cascades and is audited' => function (PDO $db): void {
            check((int) scalar($db, 'SELECT COUNT(*) FROM posts') === 2, 'want the 2 seeded posts');
            $db->exec('DELETE FROM users WHERE id = 1');
            check((int) scalar($db, 'SELECT COUNT(*) FROM posts') === 1, 'the post of user 1 was not deleted');
            check((int) scalar($db, "SELECT COUNT(*) FROM audit_log WHERE action = 'delete'") === 1, 'the delete was not audited');
        },
        'publishing fires the triggers' => function (PDO $db): void {
            check((int) scalar($db, 'SELECT post_count(3)') === 0, 'user 3 has posts already');
            $db->exec("INSERT INTO posts (user_id, title) VALUES (3, 'Kernels')");
            check((int) scalar($db, 'SELECT post_count(3)') === 1, 'post_counts was not updated');
            check((int) scalar($db, 'SELECT COUNT(*) FROM active_users') === 3, 'the view does not see user 3');
        },
        'the template is back' => function (PDO $db): void {
            check((int) scalar($db, 'SELECT COUNT(*) FROM users') === 3, 'want the 3 seeded users');
            check((int) scalar($db, 'SELECT COUNT(*) FROM audit_log') === 2, 'want the 2 seeded audit rows');
            check((int) scalar($db, 'SELECT COUNT(*) FROM active_users') === 2, 'want 2 active users');
        },
    ];
}
