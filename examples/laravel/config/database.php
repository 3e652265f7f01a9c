<?php

return [
    'default' => env('DB_CONNECTION', 'mysql'),

    'connections' => [
        'mysql' => [
            'driver' => 'mysql',
            'url' => env('DATABASE_URL'),
            'host' => env('DB_HOST', '127.0.0.1'),
            // A read/write split, as production has: both sides follow the
            // test database (docs/laravel.md, "Read/write split").
            'read' => ['host' => [env('DB_READ_HOST', env('DB_HOST', '127.0.0.1'))]],
            'write' => ['host' => [env('DB_WRITE_HOST', env('DB_HOST', '127.0.0.1'))]],
            'sticky' => true,
            'port' => env('DB_PORT', '3306'),
            'database' => env('DB_DATABASE', 'shop'),
            'username' => env('DB_USERNAME', 'shop'),
            'password' => env('DB_PASSWORD', ''),
            'unix_socket' => env('DB_SOCKET', ''),
            'charset' => 'utf8mb4',
            'collation' => 'utf8mb4_unicode_ci',
            'prefix' => '',
            'prefix_indexes' => true,
            'strict' => true,
            'engine' => null,
        ],
    ],

    'migrations' => 'migrations',
];
