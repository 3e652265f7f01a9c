<?php

declare(strict_types=1);

/*
 * The package's classes without Composer (e.g. from a checkout of the
 * repository): require this file instead of vendor/autoload.php. With
 * Composer, `composer require testdbd/testdbd` autoloads them the same way
 * (PSR-4, namespace Testdbd\ in src/).
 */
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Testdbd\\')) {
        $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen('Testdbd\\'))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
