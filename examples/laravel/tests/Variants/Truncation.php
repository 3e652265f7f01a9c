<?php

namespace Tests;

use Illuminate\Contracts\Console\Kernel;
use Illuminate\Foundation\Testing\RefreshDatabaseState;
use Illuminate\Foundation\Testing\TestCase as BaseTestCase;
use Illuminate\Foundation\Testing\Traits\CanConfigureMigrationCommands;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\ParallelTesting;

/*
 * EXAMPLE_RESET=DatabaseTruncation (tests/bootstrap.php loads this file
 * instead of tests/TestCase.php): Laravel 10's DatabaseTruncation trait,
 * which Laravel 8 lacks, reproduced for comparison. The first test of a
 * process runs migrate:fresh (with the seeders); every later one first
 * truncates every table but the migrations table, with foreign key checks
 * off, and runs the seeders again. In parallel runs each process works on
 * a database of its own, <database>_test_<token>, as Laravel 10 gives
 * suites with this trait. DB_* point at a server whose user may create
 * databases.
 */
trait DatabaseTruncation
{
    use CanConfigureMigrationCommands;

    protected static ?array $allTables = null;

    protected function truncateDatabaseTables(): void
    {
        if (!RefreshDatabaseState::$migrated) {
            $this->artisan('migrate:fresh', $this->migrateFreshUsing());
            $this->app[Kernel::class]->setArtisan(null);
            RefreshDatabaseState::$migrated = true;
            return;
        }
        $connection = DB::connection();
        $dispatcher = $connection->getEventDispatcher();
        $connection->unsetEventDispatcher();
        // Schema::withoutForeignKeyConstraints, which Laravel 8 lacks.
        $connection->getSchemaBuilder()->disableForeignKeyConstraints();
        try {
            static::$allTables ??= array_map(
                fn ($row) => array_values((array) $row)[0],
                $connection->select("SHOW FULL TABLES WHERE Table_type = 'BASE TABLE'")
            );
            $migrations = $this->app['config']->get('database.migrations');
            foreach (static::$allTables as $table) {
                if ($table !== $migrations && $connection->table($table)->exists()) {
                    $connection->table($table)->truncate();
                }
            }
        } finally {
            $connection->getSchemaBuilder()->enableForeignKeyConstraints();
        }
        $connection->setEventDispatcher($dispatcher);
        if ($seeder = $this->seeder()) {
            $this->artisan('db:seed', ['--class' => $seeder]);
        } elseif ($this->shouldSeed()) {
            $this->artisan('db:seed');
        }
    }

    /** A database of this process's own in parallel runs. */
    protected function switchToProcessDatabase(): void
    {
        $token = ParallelTesting::token();
        if (!$token) {
            return;
        }
        $name = DB::getDefaultConnection();
        $database = config("database.connections.$name.database") . '_test_' . $token;
        DB::statement('CREATE DATABASE IF NOT EXISTS `' . $database . '`');
        config(["database.connections.$name.database" => $database]);
        DB::purge($name);
    }
}

abstract class TestCase extends BaseTestCase
{
    use CreatesApplication;
    use DatabaseTruncation;

    protected $seed = true;
    protected $dropViews = true; // migrate:fresh --drop-views: the schema has views
    public $mockConsoleOutput = false; // artisan() without Mockery, which Debian's Laravel does not pull in

    protected function setUpTraits()
    {
        $uses = parent::setUpTraits();
        $this->switchToProcessDatabase();
        $this->truncateDatabaseTables();
        return $uses;
    }
}
