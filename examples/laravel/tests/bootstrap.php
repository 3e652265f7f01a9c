<?php

require __DIR__ . '/../autoload.php';

$reset = getenv('EXAMPLE_RESET') ?: 'testdbd';
if (!in_array($reset, ['testdbd', 'RefreshDatabase', 'DatabaseMigrations'], true)) {
    fwrite(STDERR, "EXAMPLE_RESET=$reset: use testdbd (the default), RefreshDatabase or DatabaseMigrations\n");
    exit(2);
}
if ($reset !== 'testdbd') {
    require __DIR__ . '/Comparison/TestCase.php'; // Tests\TestCase the way Laravel resets
}
