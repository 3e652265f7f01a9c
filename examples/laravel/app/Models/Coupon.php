<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Factories\HasFactory;
use Illuminate\Database\Eloquent\Model;

class Coupon extends Model
{
    use HasFactory;

    protected $fillable = ['code', 'percent_off', 'amount_off', 'max_redemptions', 'expires_at'];
    protected $casts = ['expires_at' => 'datetime'];
}
