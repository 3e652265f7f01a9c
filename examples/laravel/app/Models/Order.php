<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Factories\HasFactory;
use Illuminate\Database\Eloquent\Model;
use Illuminate\Database\Eloquent\Relations\BelongsTo;
use Illuminate\Database\Eloquent\Relations\HasMany;

class Order extends Model
{
    use HasFactory;

    protected $fillable = ['number', 'user_id', 'status', 'shipping_address_id', 'coupon_id', 'currency_id', 'sales_channel_id', 'placed_at'];
    protected $casts = ['subtotal' => 'decimal:2', 'discount' => 'decimal:2', 'tax' => 'decimal:2', 'total' => 'decimal:2', 'placed_at' => 'datetime'];

    public function user(): BelongsTo
    {
        return $this->belongsTo(User::class);
    }

    public function items(): HasMany
    {
        return $this->hasMany(OrderItem::class);
    }

    public function payments(): HasMany
    {
        return $this->hasMany(Payment::class);
    }

    /** Moves the order to $status, keeping the history. */
    public function transition(string $status, ?string $note = null): void
    {
        $from = $this->status;
        $this->status = $status;
        $this->save();
        $this->getConnection()->table('order_status_history')->insert([
            'order_id' => $this->id, 'from_status' => $from, 'to_status' => $status, 'note' => $note,
        ]);
    }

    /** Recomputes subtotal, discount, tax and total in the database (the recalculate_order procedure). */
    public function recalculate(): self
    {
        $this->getConnection()->statement('CALL recalculate_order(?)', [$this->id]);
        return $this->refresh();
    }
}
