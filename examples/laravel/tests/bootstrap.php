<?php

require __DIR__ . '/../autoload.php';

// Which Tests\TestCase the suite runs with (EXAMPLE_RESET):
//   testdbd             tests/TestCase.php: the TestdbdDatabase trait (the default)
//   testdbd-rollback    tests/Variants/Rollback.php: RefreshDatabase, reset by rollback
//   RefreshDatabase     tests/Variants/Laravel.php: Laravel alone, for comparison
//   DatabaseMigrations  the same
//   DatabaseTruncation  tests/Variants/Truncation.php: Laravel 10's trait, reproduced
$variants = ['testdbd' => null, 'testdbd-rollback' => 'Rollback', 'RefreshDatabase' => 'Laravel', 'DatabaseMigrations' => 'Laravel',
    'DatabaseTruncation' => 'Truncation'];
$reset = getenv('EXAMPLE_RESET') ?: 'testdbd';
if (!array_key_exists($reset, $variants)) {
    fwrite(STDERR, "EXAMPLE_RESET=$reset: use one of " . implode(', ', array_keys($variants)) . "\n");
    exit(2);
}
if ($variants[$reset] !== null) {
    require __DIR__ . "/Variants/{$variants[$reset]}.php";
}
