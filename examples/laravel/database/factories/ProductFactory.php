<?php

namespace Database\Factories;

use App\Models\Category;
use App\Models\Product;
use Illuminate\Database\Eloquent\Factories\Factory;

class ProductFactory extends Factory
{
    protected $model = Product::class;

    public function definition(): array
    {
        return [
            'category_id' => Category::factory(),
            'sku' => strtoupper($this->faker->unique()->bothify('??-#####')),
            'name' => ucfirst($this->faker->words(3, true)),
            'description' => $this->faker->sentence(),
            'price' => $this->faker->randomFloat(2, 1, 200),
            'stock' => $this->faker->numberBetween(5, 50),
            'vat_category_id' => 1,
        ];
    }

    /** In a category of the seed data (1 Books, 2 Electronics, 3 Garden). */
    public function inCategory(int $categoryId): self
    {
        return $this->state(['category_id' => $categoryId]);
    }

    public function outOfStock(): self
    {
        return $this->state(['stock' => 0]);
    }
}
