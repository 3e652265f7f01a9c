<?php

namespace Tests\Feature;

use App\Models\Product;
use App\Models\Review;
use App\Models\User;
use Tests\TestCase;

class ProductApiTest extends TestCase
{
    public function test_lists_the_active_products(): void
    {
        Product::factory()->inCategory(1)->create(['active' => false]);

        $this->getJson('/api/products')
            ->assertOk()
            ->assertJsonPath('total', 4)
            ->assertJsonPath('data.0.sku', 'BK-001');
    }

    public function test_lists_only_products_in_stock(): void
    {
        $this->getJson('/api/products?in_stock=1')
            ->assertOk()
            ->assertJsonPath('total', 3); // the watering can is out of stock
    }

    public function test_searches_products_by_name(): void
    {
        $this->getJson('/api/products?q=cable')->assertOk()->assertJsonPath('total', 1)->assertJsonPath('data.0.sku', 'EL-001');
    }

    public function test_creates_product_5(): void
    {
        $this->postJson('/api/products', ['category_id' => 2, 'brand_id' => 1, 'sku' => 'EL-002', 'name' => 'HDMI cable', 'price' => 12.5, 'stock' => 40])
            ->assertCreated()
            ->assertJsonPath('id', 5);

        $this->getJson('/api/products/5')
            ->assertOk()
            ->assertJsonPath('sku', 'EL-002')
            ->assertJsonPath('category.slug', 'electronics')
            ->assertJsonPath('brand.name', 'Acme');
    }

    public function test_factory_products_follow_the_seeded_ones(): void
    {
        Product::factory()->count(3)->inCategory(3)->create();

        $this->getJson('/api/products/7')->assertOk()->assertJsonPath('category.slug', 'garden');
        $this->getJson('/api/categories/3/products')->assertOk()->assertJsonCount(4);
    }

    public function test_rejects_a_duplicate_sku(): void
    {
        $this->postJson('/api/products', ['category_id' => 1, 'sku' => 'BK-001', 'name' => 'Copy', 'price' => 1])
            ->assertStatus(422)
            ->assertJsonValidationErrors('sku');
    }

    public function test_a_price_change_is_kept_in_the_history(): void
    {
        $this->patchJson('/api/products/1', ['price' => 44.9])->assertOk()->assertJsonPath('price', '44.90');

        $this->assertDatabaseHas('price_history', ['product_id' => 1, 'old_price' => 39.90, 'new_price' => 44.90]);
        $this->assertDatabaseHas('audit_log', ['action' => 'update', 'entity' => 'products', 'entity_id' => 1]);
    }

    public function test_restocks_through_the_stored_procedure(): void
    {
        $this->postJson('/api/products/4/restock', ['quantity' => 12])->assertOk()->assertJsonPath('stock', 12);
        $this->postJson('/api/products/4/restock', ['quantity' => 3, 'warehouse' => 'MAIN'])->assertOk()->assertJsonPath('stock', 15);

        $this->assertDatabaseHas('stock_levels', ['product_id' => 4, 'warehouse_id' => 1, 'quantity' => 15]);
        $this->assertDatabaseCount('stock_movements', 2);
    }

    public function test_the_rating_comes_from_a_stored_function(): void
    {
        Review::factory()->create(['product_id' => 2, 'rating' => 5]);
        Review::factory()->create(['product_id' => 2, 'rating' => 2]);
        Review::factory()->create(['product_id' => 2, 'rating' => 1, 'approved' => false]);

        $this->getJson('/api/products/2')->assertOk()->assertJsonPath('rating', 3.5);
    }

    public function test_posts_review_1(): void
    {
        $user = User::factory()->create();

        $this->postJson('/api/products/1/reviews', ['user_id' => $user->id, 'rating' => 4, 'body' => 'Clear and useful.'])
            ->assertCreated()
            ->assertJsonPath('id', 1)
            ->assertJsonPath('approved', true);
        $this->getJson('/api/products/1')->assertJsonPath('rating', 4); // JSON has no 4.0
    }
}
