<?php

namespace Database\Factories;

use App\Models\Order;
use App\Models\OrderItem;
use App\Models\Product;
use App\Models\User;
use Illuminate\Database\Eloquent\Factories\Factory;

class OrderFactory extends Factory
{
    protected $model = Order::class;

    public function definition(): array
    {
        return [
            'number' => 'SO-' . $this->faker->unique()->numerify('######'),
            'user_id' => User::factory(),
            'status' => 'pending',
            'currency_id' => 1,
            'sales_channel_id' => 1,
            'placed_at' => now(),
        ];
    }

    public function paid(): self
    {
        return $this->state(['status' => 'paid']);
    }

    /** With $count items of new products, totals computed by the database. */
    public function withItems(int $count = 2): self
    {
        return $this->afterCreating(function (Order $order) use ($count) {
            foreach (Product::factory()->count($count)->create() as $product) {
                OrderItem::factory()->create(['order_id' => $order->id, 'product_id' => $product->id, 'unit_price' => $product->price]);
            }
            $order->recalculate();
        });
    }
}
