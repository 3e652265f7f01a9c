<?php

namespace Tests\Feature;

use App\Models\User;
use Illuminate\Foundation\Testing\TestCase as BaseTestCase;
use Illuminate\Support\Facades\DB;
use Testdbd\Worker;
use Tests\CreatesApplication;

/**
 * A test case without the TestdbdDatabase trait: in parallel runs the
 * ParallelTesting hooks alone give it its database (setUpTestCase points the
 * connection at the lease the runner took for this worker's token) and
 * reset it after each test (tearDownTestCase). Serial runs skip it: Laravel
 * calls those hooks only in parallel ones.
 */
class ParallelHooksTest extends BaseTestCase
{
    use CreatesApplication;

    protected function setUp(): void
    {
        if (empty($_SERVER['LARAVEL_PARALLEL_TESTING']) || empty($_SERVER['TEST_TOKEN'])) {
            $this->markTestSkipped('runs in parallel runs only (paratest.php, php artisan test --parallel)');
        }
        if (in_array(getenv('EXAMPLE_RESET'), ['RefreshDatabase', 'DatabaseMigrations', 'DatabaseTruncation'], true)) {
            $this->markTestSkipped('testdbd\'s hooks are not registered with EXAMPLE_RESET=' . getenv('EXAMPLE_RESET'));
        }
        parent::setUp();
    }

    public function test_the_connection_points_at_the_runners_lease(): void
    {
        $id = getenv('TESTDBD_LEASE_ID_' . $_SERVER['TEST_TOKEN']);
        $this->assertNotEmpty($id, 'the runner hands each worker its lease in TESTDBD_LEASE_ID_<token>');
        $lease = Worker::client()->getLease($id);
        $this->assertSame('laravel-' . $_SERVER['TEST_TOKEN'], $lease['worker']);

        $this->assertSame($lease['database'], DB::selectOne('SELECT DATABASE() AS db')->db);
        $this->assertSame($lease['user'], explode('@', DB::selectOne('SELECT CURRENT_USER() AS u')->u)[0]);
        $mysql = config('database.connections.mysql');
        $this->assertSame([$lease['host']], $mysql['read']['host']);
        $this->assertSame([$lease['host']], $mysql['write']['host']);
    }

    public function test_a_signup_here_is_user_3(): void
    {
        $this->postJson('/api/users', ['name' => 'Hook', 'email' => 'hook@example.com', 'password' => 'parallel!'])
            ->assertCreated()
            ->assertJsonPath('id', 3);
    }

    public function test_and_after_the_hooks_reset_user_3_again(): void
    {
        User::factory()->create(['name' => 'Hook again']);

        $this->getJson('/api/users/3')->assertOk()->assertJsonPath('name', 'Hook again');
        $this->assertDatabaseCount('users', 3);
    }
}
