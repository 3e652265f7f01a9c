<?php

namespace Tests\Feature;

use App\Models\Order;
use App\Models\User;
use Tests\TestCase;

class UserApiTest extends TestCase
{
    public function test_lists_the_seeded_users(): void
    {
        $this->getJson('/api/users')
            ->assertOk()
            ->assertJsonPath('total', 2)
            ->assertJsonPath('data.0.email', 'admin@shop.test');
    }

    public function test_signs_a_user_up_as_user_3(): void
    {
        $this->postJson('/api/users', ['name' => 'Grace Hopper', 'email' => 'grace@example.com', 'password' => 'correct horse', 'country' => 'US'])
            ->assertCreated()
            ->assertJsonPath('id', 3); // the seed data has users 1 and 2

        $this->getJson('/api/users/3')
            ->assertOk()
            ->assertJsonPath('name', 'Grace Hopper')
            ->assertJsonPath('country_id', 5)
            ->assertJsonMissing(['password']);
    }

    public function test_shows_a_factory_user_by_its_id(): void
    {
        User::factory()->create(['name' => 'Ada Lovelace']);

        $this->getJson('/api/users/3')->assertOk()->assertJsonPath('name', 'Ada Lovelace');
    }

    public function test_rejects_a_taken_email(): void
    {
        $this->postJson('/api/users', ['name' => 'Other admin', 'email' => 'admin@shop.test', 'password' => 'long enough'])
            ->assertStatus(422)
            ->assertJsonValidationErrors('email');
        $this->assertDatabaseCount('users', 2);
    }

    public function test_soft_deletes_a_user(): void
    {
        $user = User::factory()->create();

        $this->deleteJson("/api/users/{$user->id}")->assertNoContent();

        $this->getJson("/api/users/{$user->id}")->assertNotFound();
        $this->assertSoftDeleted('users', ['id' => $user->id]);
        $this->assertDatabaseHas('audit_log', ['action' => 'delete', 'entity' => 'users', 'entity_id' => $user->id]);
    }

    public function test_lists_a_users_orders(): void
    {
        $user = User::factory()->create();
        Order::factory()->count(2)->for($user)->withItems(1)->create();
        Order::factory()->create(); // someone else's

        $this->getJson("/api/users/{$user->id}/orders")
            ->assertOk()
            ->assertJsonCount(2)
            ->assertJsonCount(1, '0.items');
    }

    public function test_an_unknown_user_is_404(): void
    {
        $this->getJson('/api/users/999')->assertNotFound();
    }
}
