<?php

namespace Database\Factories;

use App\Models\Coupon;
use Illuminate\Database\Eloquent\Factories\Factory;

class CouponFactory extends Factory
{
    protected $model = Coupon::class;

    public function definition(): array
    {
        return ['code' => strtoupper($this->faker->unique()->bothify('SAVE-####')), 'percent_off' => 0, 'amount_off' => 5];
    }
}
