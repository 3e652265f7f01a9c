<?php

namespace Tests\Feature;

use App\Models\Order;
use App\Models\Product;
use Tests\TestCase;

class OrderApiTest extends TestCase
{
    private const CART = ['user_id' => 1, 'items' => [['product_id' => 1, 'quantity' => 2], ['product_id' => 3, 'quantity' => 1]]];

    public function test_places_order_1(): void
    {
        $this->postJson('/api/orders', self::CART)
            ->assertCreated()
            ->assertJsonPath('id', 1)
            ->assertJsonCount(2, 'items')
            // 2 x 39.90 (books, 5%) + 9.99 (20%), totalled by recalculate_order
            ->assertJsonPath('subtotal', '89.79')
            ->assertJsonPath('tax', '5.99')
            ->assertJsonPath('total', '95.78');

        $this->getJson('/api/orders/1')->assertOk()->assertJsonPath('status', 'pending');
        $this->assertSame(23, Product::find(1)->stock);
        $this->assertDatabaseHas('order_status_history', ['order_id' => 1, 'to_status' => 'pending']);
    }

    public function test_a_coupon_takes_its_discount(): void
    {
        $this->postJson('/api/orders', self::CART + ['coupon' => 'WELCOME10'])
            ->assertCreated()
            ->assertJsonPath('discount', '8.98')
            ->assertJsonPath('total', '86.80');
        $this->assertDatabaseHas('coupon_redemptions', ['coupon_id' => 1, 'order_id' => 1, 'user_id' => 1]);
    }

    public function test_an_item_out_of_stock_places_nothing(): void
    {
        $this->postJson('/api/orders', ['user_id' => 1, 'items' => [['product_id' => 3, 'quantity' => 1], ['product_id' => 4, 'quantity' => 1]]])
            ->assertStatus(422)
            ->assertJsonValidationErrors('items.1.quantity');

        $this->assertDatabaseCount('orders', 0);
        $this->assertSame(200, Product::find(3)->stock);
    }

    public function test_cancelling_puts_the_stock_back(): void
    {
        $id = $this->postJson('/api/orders', self::CART)->assertCreated()->json('id');
        $this->assertSame(23, Product::find(1)->stock);

        $this->postJson("/api/orders/$id/cancel")->assertOk()->assertJsonPath('status', 'cancelled');

        $this->assertSame(25, Product::find(1)->stock);
        $this->assertDatabaseCount('order_status_history', 2);
    }

    public function test_a_paid_order_cannot_be_cancelled(): void
    {
        $order = Order::factory()->paid()->create();

        $this->postJson("/api/orders/{$order->id}/cancel")->assertStatus(409);
    }

    public function test_a_factory_order_is_order_1(): void
    {
        Order::factory()->withItems(3)->create();

        $this->getJson('/api/orders/1')
            ->assertOk()
            ->assertJsonCount(3, 'items')
            ->assertJsonPath('items.0.product_id', 5); // after the 4 seeded products
    }

    public function test_an_order_needs_items(): void
    {
        $this->postJson('/api/orders', ['user_id' => 1, 'items' => []])->assertStatus(422)->assertJsonValidationErrors('items');
    }
}
