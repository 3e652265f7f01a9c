<?php

declare(strict_types=1);

namespace Testdbd;

/**
 * With the pcntl extension (PHP CLI), makes SIGTERM, SIGINT and SIGHUP end
 * the process with exit(128 + signal), which runs the shutdown functions
 * (and so releases the lease), where nothing else handles them. Without
 * pcntl these signals kill PHP at once and the lease stays until its TTL
 * runs out.
 *
 * @internal
 */
final class Signals
{
    private static bool $installed = false;

    public static function releaseOn(): void
    {
        if (self::$installed || PHP_SAPI !== 'cli' || !function_exists('pcntl_signal') || !function_exists('pcntl_signal_get_handler')) {
            return;
        }
        self::$installed = true;
        $any = false;
        foreach ([SIGTERM, SIGINT, SIGHUP] as $signal) {
            if (pcntl_signal_get_handler($signal) !== SIG_DFL) {
                continue; // handled (or ignored) by someone else: leave it alone
            }
            pcntl_signal($signal, static function (int $signo): void {
                exit(128 + $signo);
            });
            $any = true;
        }
        if ($any) {
            pcntl_async_signals(true);
        }
    }
}
