<?php

namespace Tests\Feature;

use App\Models\Order;
use App\Models\Payment;
use Tests\TestCase;

class PaymentApiTest extends TestCase
{
    private function placeOrder(): array
    {
        return $this->postJson('/api/orders', ['user_id' => 2, 'items' => [['product_id' => 2, 'quantity' => 1]]])->assertCreated()->json();
    }

    public function test_paying_in_full_marks_the_order_paid(): void
    {
        $order = $this->placeOrder(); // 54.00 + 5% = 56.70

        $this->postJson("/api/orders/{$order['id']}/payments", ['method' => 'card', 'amount' => 56.70])
            ->assertCreated()
            ->assertJsonPath('id', 1)
            ->assertJsonPath('order_status', 'paid');
        $this->assertDatabaseHas('order_status_history', ['order_id' => $order['id'], 'from_status' => 'pending', 'to_status' => 'paid']);
    }

    public function test_a_partial_payment_leaves_the_order_pending(): void
    {
        $order = $this->placeOrder();

        $this->postJson("/api/orders/{$order['id']}/payments", ['method' => 'paypal', 'amount' => 20])
            ->assertCreated()
            ->assertJsonPath('order_status', 'pending');
        $this->postJson("/api/orders/{$order['id']}/payments", ['method' => 'card', 'amount' => 36.70])
            ->assertCreated()
            ->assertJsonPath('id', 2)
            ->assertJsonPath('order_status', 'paid');
    }

    public function test_the_trigger_audits_every_payment(): void
    {
        $order = $this->placeOrder();
        $this->postJson("/api/orders/{$order['id']}/payments", ['method' => 'transfer', 'amount' => 10])->assertCreated();
        Payment::factory()->create(['amount' => 5]); // written by the model, not the controller: audited all the same

        $this->getJson('/api/audit-log?action=payment')
            ->assertOk()
            ->assertJsonCount(2)
            ->assertJsonPath('0.entity_id', $order['id'])
            ->assertJsonPath('0.changes.payment_id', 1)
            ->assertJsonPath('1.changes.payment_id', 2);
    }

    public function test_rejects_an_unknown_payment_method(): void
    {
        $order = Order::factory()->create();

        $this->postJson("/api/orders/{$order->id}/payments", ['method' => 'barter', 'amount' => 1])
            ->assertStatus(422)
            ->assertJsonValidationErrors('method');
    }

    public function test_a_cancelled_order_takes_no_payment(): void
    {
        $order = Order::factory()->create(['status' => 'cancelled']);

        $this->postJson("/api/orders/{$order->id}/payments", ['method' => 'card', 'amount' => 1])->assertStatus(409);
        $this->assertDatabaseCount('payments', 0);
    }
}
