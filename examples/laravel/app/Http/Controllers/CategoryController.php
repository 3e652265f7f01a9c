<?php

namespace App\Http\Controllers;

use App\Models\Category;
use Illuminate\Http\JsonResponse;

class CategoryController extends Controller
{
    public function index(): JsonResponse
    {
        return response()->json(Category::withCount('products')->orderBy('position')->get());
    }

    public function products(Category $category): JsonResponse
    {
        return response()->json($category->products()->where('active', true)->orderBy('id')->get());
    }
}
