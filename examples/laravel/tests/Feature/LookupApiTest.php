<?php

namespace Tests\Feature;

use Tests\TestCase;

class LookupApiTest extends TestCase
{
    public function test_lists_the_countries(): void
    {
        $this->getJson('/api/lookups/countries')->assertOk()->assertJsonCount(5)->assertJsonPath('0.code', 'DE');
    }

    public function test_lists_the_payment_methods_in_order(): void
    {
        $this->getJson('/api/lookups/payment_methods')
            ->assertOk()
            ->assertJsonPath('*.code', ['card', 'paypal', 'transfer', 'gift_card']);
    }

    public function test_only_lookup_tables_are_served(): void
    {
        $this->getJson('/api/lookups/users')->assertNotFound();
    }
}
