<?php

namespace Tests\Feature;

use App\Models\Order;
use App\Models\OrderItem;
use Tests\TestCase;

class ReportApiTest extends TestCase
{
    public function test_the_order_summaries_view(): void
    {
        Order::factory()->withItems(3)->create();

        $this->getJson('/api/reports/orders')
            ->assertOk()
            ->assertJsonCount(1)
            ->assertJsonPath('0.order_id', 1)
            ->assertJsonPath('0.items', 3);
    }

    public function test_product_sales_count_paid_orders_only(): void
    {
        $paid = Order::factory()->paid()->create();
        OrderItem::factory()->create(['order_id' => $paid->id, 'product_id' => 1, 'quantity' => 2, 'unit_price' => 39.90]);
        $pending = Order::factory()->create();
        OrderItem::factory()->create(['order_id' => $pending->id, 'product_id' => 1, 'quantity' => 5, 'unit_price' => 39.90]);

        $this->getJson('/api/reports/products')
            ->assertOk()
            ->assertJsonCount(1)
            ->assertJsonPath('0.sku', 'BK-001')
            ->assertJsonPath('0.units_sold', '2')
            ->assertJsonPath('0.revenue', '79.80');
    }

    public function test_the_summaries_filter_by_status(): void
    {
        Order::factory()->count(2)->create();
        Order::factory()->paid()->create();

        $this->getJson('/api/reports/orders?status=paid')->assertOk()->assertJsonCount(1)->assertJsonPath('0.order_id', 3);
        $this->getJson('/api/reports/orders?status=pending')->assertOk()->assertJsonCount(2);
    }
}
