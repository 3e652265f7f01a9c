<?php

namespace Tests\Feature;

use App\Models\Category;
use App\Models\Product;
use Tests\TestCase;

class CategoryApiTest extends TestCase
{
    public function test_lists_the_categories_with_product_counts(): void
    {
        $this->getJson('/api/categories')
            ->assertOk()
            ->assertJsonCount(3)
            ->assertJsonPath('0.slug', 'books')
            ->assertJsonPath('0.products_count', 2);
    }

    public function test_lists_a_categorys_products(): void
    {
        Product::factory()->count(2)->inCategory(2)->create();
        Product::factory()->inCategory(2)->create(['active' => false]);

        $this->getJson('/api/categories/2/products')->assertOk()->assertJsonCount(3);
    }

    public function test_a_new_category_is_category_4(): void
    {
        Category::factory()->create(['name' => 'Toys', 'slug' => 'toys']);

        $this->getJson('/api/categories/4/products')->assertOk()->assertJsonCount(0);
        $this->getJson('/api/categories')->assertJsonPath('3.slug', 'toys');
    }

    public function test_a_subcategory_points_at_its_parent(): void
    {
        $child = Category::factory()->create(['parent_id' => 1]);

        $this->assertSame('Books', $child->parent->name);
        $this->assertSame(4, $child->id);
    }
}
