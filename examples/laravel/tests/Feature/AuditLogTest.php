<?php

namespace Tests\Feature;

use Tests\TestCase;

class AuditLogTest extends TestCase
{
    public function test_the_template_has_an_empty_audit_log(): void
    {
        $this->getJson('/api/audit-log')->assertOk()->assertJsonCount(0);
    }

    public function test_a_signup_is_audited(): void
    {
        $this->postJson('/api/users', ['name' => 'Linus', 'email' => 'linus@example.com', 'password' => 'penguins!'])->assertCreated();

        $this->getJson('/api/audit-log?entity=users')
            ->assertOk()
            ->assertJsonCount(1)
            ->assertJsonPath('0.id', 1)
            ->assertJsonPath('0.entity_id', 3)
            ->assertJsonPath('0.changes.email', 'linus@example.com');
    }

    public function test_an_order_is_audited_with_its_user(): void
    {
        $this->postJson('/api/orders', ['user_id' => 2, 'items' => [['product_id' => 3, 'quantity' => 4]]])->assertCreated();

        $this->getJson('/api/audit-log?entity=orders')
            ->assertOk()
            ->assertJsonCount(1)
            ->assertJsonPath('0.user_id', 2)
            ->assertJsonPath('0.entity_id', 1);
    }
}
