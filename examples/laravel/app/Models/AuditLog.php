<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Model;

class AuditLog extends Model
{
    protected $table = 'audit_log';
    public $timestamps = false;
    protected $fillable = ['user_id', 'action', 'entity', 'entity_id', 'changes'];
    protected $casts = ['changes' => 'array'];

    public static function record(string $action, Model $entity, array $changes = [], ?int $userId = null): self
    {
        return static::create([
            'user_id' => $userId, 'action' => $action, 'entity' => $entity->getTable(),
            'entity_id' => $entity->getKey(), 'changes' => $changes ?: null,
        ]);
    }
}
