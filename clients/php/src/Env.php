<?php

declare(strict_types=1);

namespace Testdbd;

/**
 * Reads and sets environment variables the way PHP test runners pass them:
 * the process environment (getenv, phpunit.xml's <env>), $_ENV and $_SERVER
 * (Laravel and paratest put TEST_TOKEN there).
 *
 * @internal
 */
final class Env
{
    /** The variable's value, or null when it is unset or empty. */
    public static function get(string $name): ?string
    {
        foreach ([getenv($name), $_ENV[$name] ?? null, $_SERVER[$name] ?? null] as $value) {
            if (is_scalar($value) && (string) $value !== '') {
                return (string) $value;
            }
        }
        return null;
    }

    /** Sets a variable for this process, what it starts, and the frameworks that read $_ENV or $_SERVER. */
    public static function set(string $name, string $value): void
    {
        putenv("$name=$value");
        $_ENV[$name] = $value;
        $_SERVER[$name] = $value;
    }

    public static function unset(string $name): void
    {
        putenv($name);
        unset($_ENV[$name], $_SERVER[$name]);
    }

    public static function bool(string $name): bool
    {
        return in_array(strtolower(self::get($name) ?? ''), ['1', 'true', 'yes', 'on'], true);
    }
}
