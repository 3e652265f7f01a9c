<?php

declare(strict_types=1);

namespace Testdbd\Laravel;

use Illuminate\Support\Facades\ParallelTesting;
use Illuminate\Support\ServiceProvider;

/**
 * Registers testdbd's ParallelTesting hooks (see ParallelTestingHooks) for
 * `php artisan test --parallel`: a lease per worker token, each test's
 * connection pointed at it, a reset after each test, the leases released
 * when the run ends. Add it to bootstrap/providers.php (Laravel 11) or the
 * providers of config/app.php. The connection is config('testdbd.connection'),
 * else the default one; the template and the rest come from the TESTDBD_*
 * variables (see Testdbd\Worker).
 *
 * Tested with Laravel 8.83 (Debian's php-laravel-framework) by the example
 * application examples/laravel, serially and in parallel.
 */
class TestdbdServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        if (!$this->app->runningInConsole() || !$this->app->bound(\Illuminate\Testing\ParallelTesting::class)) {
            return; // ParallelTesting exists only in console runs
        }
        ParallelTestingHooks::register(ParallelTesting::getFacadeRoot(), $this->app['config']->get('testdbd.connection'));
    }
}
