<?php

declare(strict_types=1);

/*
 * `php artisan test --parallel` without paratest (Debian does not package
 * it): N PHPUnit worker processes, each given a share of the test files,
 * started the way paratest starts them, with Laravel's own ParallelRunner
 * calling the ParallelTesting hooks around them.
 *
 *   php paratest.php [--processes N] [--configuration phpunit.xml] [--phpunit PATH]
 *                    [--recreate-databases] [--without-databases] [FILE_OR_DIR ...]
 *
 * What `artisan test --parallel` does, this does too: it sets
 * LARAVEL_PARALLEL_TESTING=1 (and LARAVEL_PARALLEL_TESTING_RECREATE_DATABASES
 * and _WITHOUT_DATABASES for those options) and runs paratest with
 * `--runner Illuminate\Testing\ParallelRunner`. That runner, Laravel's class
 * as it is, applies phpunit.xml's <php> settings, creates the application
 * once per token 1..N and calls the setUpProcess hooks with it (testdbd's
 * lease a database for the token and hand its id to the worker in
 * TESTDBD_LEASE_ID_<token>), runs the workers, and then, also when they
 * fail, calls the tearDownProcess hooks (testdbd's release the leases).
 * Paratest's part is the classes of its own that ParallelRunner names
 * (Options, RunnerInterface), reduced to what ParallelRunner uses, and the
 * workers: process i gets TEST_TOKEN=i, UNIQUE_TEST_TOKEN and PARATEST=1
 * on top of this process's environment, and runs its files (whole files,
 * shared out by their number of tests) with PHPUnit. In the workers Laravel
 * calls the setUpTestCase and tearDownTestCase hooks around every test.
 *
 * The exit status is the highest of the workers' (0 when all passed); a
 * worker that could not start, or a hook that failed, gives 1. SIGINT,
 * SIGTERM and SIGHUP stop the workers, and the leases are released before
 * this process exits.
 */

namespace ParaTest\Runners\PHPUnit {
    /*
     * Paratest's classes that Illuminate\Testing\ParallelRunner names, with
     * what it uses of them: the number of processes and the PHPUnit
     * configuration. Where paratest is installed, run vendor/bin/paratest.
     */
    if (!interface_exists(RunnerInterface::class, false)) {
        interface RunnerInterface
        {
            public const SUCCESS_EXIT = 0;
            public const FAILURE_EXIT = 1;
            public const EXCEPTION_EXIT = 2;

            public function run(): void;

            public function getExitCode(): int;
        }

        final class Options
        {
            public function __construct(private int $processes, private \PHPUnit\TextUI\XmlConfiguration\Configuration $configuration)
            {
            }

            public function processes(): int
            {
                return $this->processes;
            }

            public function configuration(): \PHPUnit\TextUI\XmlConfiguration\Configuration
            {
                return $this->configuration;
            }
        }
    }
}

namespace {
    use Illuminate\Testing\ParallelRunner;
    use ParaTest\Runners\PHPUnit\Options;
    use ParaTest\Runners\PHPUnit\RunnerInterface;
    use PHPUnit\TextUI\XmlConfiguration\Configuration;
    use PHPUnit\TextUI\XmlConfiguration\Loader;
    use Symfony\Component\Console\Output\ConsoleOutput;
    use Symfony\Component\Console\Output\OutputInterface;

    function main(array $args): int
    {
        try {
            $opts = parseArgs($args);
        } catch (InvalidArgumentException $e) {
            fwrite(STDERR, "paratest.php: {$e->getMessage()}\n");
            return 2;
        }
        if (is_file(getcwd() . '/vendor/autoload.php')) {
            require_once getcwd() . '/vendor/autoload.php'; // a Composer project's PHPUnit and Laravel
        }
        if (!class_exists(Loader::class)) {
            if (stream_resolve_include_path('PHPUnit/Autoload.php') === false) {
                fwrite(STDERR, "paratest.php: PHPUnit 9 not found: composer require --dev phpunit/phpunit:^9, or apt-get install phpunit\n");
                return 2;
            }
            require_once 'PHPUnit/Autoload.php'; // Debian's phpunit, from /usr/share/php
        }
        $configuration = (new Loader())->load($opts['configuration']);
        if ($configuration->phpunit()->hasBootstrap()) {
            require_once $configuration->phpunit()->bootstrap(); // the application's autoloader, as paratest loads it
        }

        // What `php artisan test --parallel` puts in paratest's environment.
        setEnv('LARAVEL_PARALLEL_TESTING', '1');
        setEnv('LARAVEL_PARALLEL_TESTING_RECREATE_DATABASES', $opts['recreate-databases'] ? '1' : '');
        setEnv('LARAVEL_PARALLEL_TESTING_WITHOUT_DATABASES', $opts['without-databases'] ? '1' : '');

        $output = new ConsoleOutput();
        $workers = new Workers($opts, $configuration, $output);
        ParallelRunner::resolveRunnerUsing(fn (Options $options, OutputInterface $out) => $workers);
        $runner = new ParallelRunner(new Options($opts['processes'], $configuration), $output);
        try {
            $runner->run();
        } catch (Throwable $e) {
            fwrite(STDERR, 'paratest.php: ' . get_class($e) . ': ' . $e->getMessage() . "\n");
            return max(1, $runner->getExitCode());
        }
        return $runner->getExitCode();
    }

    function parseArgs(array $args): array
    {
        $opts = ['processes' => cpus(), 'configuration' => getcwd() . '/phpunit.xml', 'phpunit' => null,
            'recreate-databases' => false, 'without-databases' => false, 'paths' => []];
        while ($args !== []) {
            $arg = array_shift($args);
            [$name, $value] = str_contains($arg, '=') ? explode('=', $arg, 2) : [$arg, null];
            switch ($name) {
                case '-p':
                case '--processes':
                    $opts['processes'] = (int) ($value ?? array_shift($args));
                    if ($opts['processes'] < 1) {
                        throw new InvalidArgumentException('--processes wants a number of at least 1');
                    }
                    break;
                case '-c':
                case '--configuration':
                    $opts['configuration'] = realpath((string) ($value ?? array_shift($args))) ?: throw new InvalidArgumentException("no configuration file $arg");
                    break;
                case '--phpunit':
                    $opts['phpunit'] = (string) ($value ?? array_shift($args));
                    break;
                case '--recreate-databases':
                case '--without-databases':
                    $opts[substr($name, 2)] = true;
                    break;
                default:
                    if (str_starts_with($arg, '-')) {
                        throw new InvalidArgumentException("unknown option $arg (--processes, --configuration, --phpunit, --recreate-databases, --without-databases)");
                    }
                    $opts['paths'][] = realpath($arg) ?: throw new InvalidArgumentException("no such file or directory: $arg");
            }
        }
        if (!is_file($opts['configuration'])) {
            throw new InvalidArgumentException("no {$opts['configuration']}: run in the application's directory or pass --configuration");
        }
        $opts['phpunit'] ??= is_file(getcwd() . '/vendor/bin/phpunit') ? getcwd() . '/vendor/bin/phpunit' : (trim((string) shell_exec('command -v phpunit')) ?: 'phpunit');
        return $opts;
    }

    function cpus(): int
    {
        $n = (int) trim((string) @shell_exec('nproc 2>/dev/null'));
        return $n > 0 ? $n : 2;
    }

    /** Sets a variable for this process and the workers it starts (Laravel reads $_SERVER). */
    function setEnv(string $name, string $value): void
    {
        putenv("$name=$value");
        $_ENV[$name] = $_SERVER[$name] = $value;
    }

    /**
     * The workers: process i of N runs its share of the test files with
     * TEST_TOKEN=i. ParallelRunner calls run() between the setUpProcess and
     * tearDownProcess hooks.
     */
    final class Workers implements RunnerInterface
    {
        /** @var array<int, array{proc: resource, out: string, config: string, files: list<string>, code: ?int}> */
        private array $running = [];
        private int $exitCode = 0;

        public function __construct(private array $opts, private Configuration $configuration, private OutputInterface $output)
        {
        }

        public function run(): void
        {
            $files = $this->testFiles();
            $shares = self::share($files, $this->opts['processes']);
            $this->output->writeln(sprintf('paratest.php: %d test files in %d processes', count($files), count($shares)));
            $this->stopOnSignals();
            $started = microtime(true);
            try {
                foreach ($shares as $i => $share) {
                    $this->start($i + 1, $share);
                }
                $this->wait();
            } catch (\Throwable $e) {
                $this->stop(); // what is still running when something failed here
                $this->removeFiles();
                throw $e;
            }
            $tests = 0;
            foreach ($this->running as $token => $w) {
                $out = (string) file_get_contents($w['out']);
                $this->output->writeln("[worker $token] " . implode(' ', array_map('basename', $w['files'])));
                foreach (explode("\n", rtrim($out)) as $line) {
                    $this->output->writeln("[worker $token] $line", OutputInterface::OUTPUT_RAW);
                }
                if (preg_match('/^OK \((\d+) tests?/m', $out, $m) || preg_match('/^Tests: (\d+)/m', $out, $m)) {
                    $tests += (int) $m[1];
                }
                if ($w['code'] !== 0) {
                    $this->output->writeln("[worker $token] exit status {$w['code']}");
                }
                $this->exitCode = max($this->exitCode, $w['code'] ?? 1);
            }
            $this->removeFiles();
            $this->output->writeln(sprintf('paratest.php: %d tests in %d processes, %.2f s: %s', $tests, count($shares),
                microtime(true) - $started, $this->exitCode === 0 ? 'OK' : 'FAILED'));
        }

        public function getExitCode(): int
        {
            return $this->exitCode;
        }

        /** The test files of the configuration's test suites, or of the paths given. */
        private function testFiles(): array
        {
            $dirs = [];
            $files = [];
            foreach ($this->opts['paths'] as $path) {
                is_dir($path) ? $dirs[] = [$path, 'Test.php'] : $files[] = $path;
            }
            if ($this->opts['paths'] === []) {
                foreach ($this->configuration->testSuite() as $suite) {
                    foreach ($suite->directories() as $dir) {
                        $dirs[] = [$dir->path(), $dir->suffix()];
                    }
                    foreach ($suite->files() as $file) {
                        $files[] = $file->path();
                    }
                }
            }
            foreach ($dirs as [$dir, $suffix]) {
                $it = new RecursiveIteratorIterator(new RecursiveDirectoryIterator($dir, FilesystemIterator::SKIP_DOTS));
                foreach ($it as $file) {
                    if (str_ends_with($file->getFilename(), $suffix)) {
                        $files[] = $file->getPathname();
                    }
                }
            }
            $files = array_values(array_unique($files));
            sort($files);
            return $files;
        }

        /**
         * Shares whole files out among at most $n processes, the files with the
         * most tests first, each to the process with the fewest tests so far.
         */
        private static function share(array $files, int $n): array
        {
            $weight = [];
            foreach ($files as $file) {
                $weight[$file] = max(1, preg_match_all('/function\s+test\w*\s*\(|@test\b/', (string) file_get_contents($file)));
            }
            arsort($weight);
            $shares = array_fill(0, min($n, max(1, count($files))), []);
            $load = array_fill(0, count($shares), 0);
            foreach ($weight as $file => $w) {
                $i = array_keys($load, min($load))[0];
                $shares[$i][] = $file;
                $load[$i] += $w;
            }
            return $shares;
        }

        private function start(int $token, array $files): void
        {
            // A PHPUnit configuration of the worker's own: the application's,
            // with one test suite of its files.
            $dom = new DOMDocument();
            $dom->load($this->configuration->filename());
            $root = $dom->documentElement;
            foreach (iterator_to_array($root->getElementsByTagName('testsuites')) as $old) {
                $root->removeChild($old);
            }
            $suites = $root->appendChild($dom->createElement('testsuites'));
            $suite = $suites->appendChild($dom->createElement('testsuite'));
            $suite->setAttribute('name', "worker-$token");
            foreach ($files as $file) {
                $suite->appendChild($dom->createElement('file'))->appendChild($dom->createTextNode($file));
            }
            // Next to the original, so that its relative paths stay right.
            $config = dirname($this->configuration->filename()) . sprintf('/.paratest-%d-%d.xml', getmypid(), $token);
            $dom->save($config);
            $out = tempnam(sys_get_temp_dir(), "paratest-$token-");
            $env = getenv(); // with TESTDBD_LEASE_ID_<token> from the setUpProcess hooks
            $env['TEST_TOKEN'] = (string) $token;
            $env['UNIQUE_TEST_TOKEN'] = uniqid($token . '_');
            $env['PARATEST'] = '1';
            $proc = proc_open([PHP_BINARY, $this->opts['phpunit'], '--configuration', $config],
                [0 => ['file', '/dev/null', 'r'], 1 => ['file', $out, 'w'], 2 => ['redirect', 1]], $pipes, getcwd(), $env);
            if ($proc === false) {
                unlink($config);
                unlink($out);
                throw new RuntimeException("could not start PHPUnit ({$this->opts['phpunit']}) for worker $token");
            }
            $this->running[$token] = ['proc' => $proc, 'out' => $out, 'config' => $config, 'files' => $files, 'code' => null];
        }

        private function wait(): void
        {
            do {
                $busy = false;
                foreach ($this->running as $token => $w) {
                    if ($w['code'] !== null) {
                        continue;
                    }
                    $status = proc_get_status($w['proc']);
                    if ($status['running']) {
                        $busy = true;
                        continue;
                    }
                    $this->running[$token]['code'] = $status['signaled'] ? 128 + $status['termsig'] : $status['exitcode'];
                    proc_close($w['proc']);
                }
                if ($busy) {
                    usleep(20_000);
                }
            } while ($busy);
        }

        /** Ends the workers still running (after a signal or an error here). */
        private function stop(): void
        {
            foreach ($this->running as $token => $w) {
                if ($w['code'] === null) {
                    proc_terminate($w['proc']);
                    $this->running[$token]['code'] = 128 + SIGTERM;
                    proc_close($w['proc']);
                }
            }
        }

        private function removeFiles(): void
        {
            foreach ($this->running as $w) {
                @unlink($w['out']);
                @unlink($w['config']);
            }
        }

        /**
         * SIGINT, SIGTERM and SIGHUP stop the workers and end this process
         * through exit(), so that the hooks' shutdown function releases the
         * leases.
         */
        private function stopOnSignals(): void
        {
            if (!function_exists('pcntl_signal')) {
                return;
            }
            pcntl_async_signals(true);
            foreach ([SIGINT, SIGTERM, SIGHUP] as $signal) {
                pcntl_signal($signal, function (int $signo): void {
                    $this->stop();
                    $this->removeFiles();
                    fwrite(STDERR, "paratest.php: stopped by signal $signo\n");
                    exit(128 + $signo);
                });
            }
        }
    }

    exit(main(array_slice($argv, 1)));
}
