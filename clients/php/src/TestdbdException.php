<?php

declare(strict_types=1);

namespace Testdbd;

/**
 * An error answered by the daemon (with its message, which says what went
 * wrong and what to do), or a daemon that cannot be reached.
 *
 * getGrpcCode() is the gRPC status code the daemon gave (5 NotFound, 8
 * ResourceExhausted, ...) and getHttpStatus() the HTTP status; both are
 * null when the daemon could not be reached.
 */
class TestdbdException extends \RuntimeException
{
    public function __construct(string $message, private ?int $grpcCode = null, private ?int $httpStatus = null)
    {
        parent::__construct($message, $grpcCode ?? 0);
    }

    public function getGrpcCode(): ?int
    {
        return $this->grpcCode;
    }

    public function getHttpStatus(): ?int
    {
        return $this->httpStatus;
    }
}
