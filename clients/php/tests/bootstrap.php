<?php

declare(strict_types=1);

// The package's classes: Composer's autoloader after `composer install` in
// clients/php, else the package's own autoload.php.
require is_file(__DIR__ . '/../vendor/autoload.php') ? __DIR__ . '/../vendor/autoload.php' : __DIR__ . '/../autoload.php';

// The template's migrations, next to the tests, unless set otherwise.
if ((getenv('TESTDBD_MIGRATIONS') ?: '') === '') {
    \Testdbd\Env::set('TESTDBD_MIGRATIONS', __DIR__ . '/migrations');
}
