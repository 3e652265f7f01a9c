<?php

namespace Database\Factories;

use App\Models\Order;
use App\Models\Payment;
use Illuminate\Database\Eloquent\Factories\Factory;

class PaymentFactory extends Factory
{
    protected $model = Payment::class;

    public function definition(): array
    {
        return [
            'order_id' => Order::factory(),
            'method' => 'card',
            'status' => 'captured',
            'amount' => $this->faker->randomFloat(2, 5, 100),
            'reference' => $this->faker->unique()->uuid(),
        ];
    }
}
