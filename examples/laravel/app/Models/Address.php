<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Factories\HasFactory;
use Illuminate\Database\Eloquent\Model;

class Address extends Model
{
    use HasFactory;

    protected $fillable = ['user_id', 'address_type_id', 'line1', 'line2', 'city', 'postcode', 'country_id', 'is_default'];
    protected $casts = ['is_default' => 'boolean'];
}
