<?php

namespace Database\Factories;

use App\Models\Category;
use Illuminate\Database\Eloquent\Factories\Factory;
use Illuminate\Support\Str;

class CategoryFactory extends Factory
{
    protected $model = Category::class;

    public function definition(): array
    {
        $name = ucfirst($this->faker->word()) . ' ' . $this->faker->unique()->numberBetween(1, 1_000_000);
        return ['name' => $name, 'slug' => Str::slug($name), 'position' => $this->faker->numberBetween(10, 99)];
    }
}
