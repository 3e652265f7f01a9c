<?php

/*
 * What vendor/autoload.php is in a Composer project: this application runs
 * on Debian's Laravel 8 (php-laravel-framework, php-faker: autoloaded from
 * /usr/share/php, no Composer install) and the testdbd package from this
 * checkout. A Composer project requires testdbd/testdbd (docs/laravel.md)
 * and loads vendor/autoload.php instead.
 */

require_once 'Illuminate/autoload.php'; // /usr/share/php, on Debian's include_path
require_once 'Faker/autoload.php';      // model factories
require_once __DIR__ . '/../../clients/php/autoload.php';

// The application's own classes (composer.json's autoload.psr-4).
spl_autoload_register(static function (string $class): void {
    static $roots = [
        'App\\' => __DIR__ . '/app/',
        'Database\\Factories\\' => __DIR__ . '/database/factories/',
        'Database\\Seeders\\' => __DIR__ . '/database/seeders/',
        'Tests\\' => __DIR__ . '/tests/',
    ];
    foreach ($roots as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }
            return;
        }
    }
});
