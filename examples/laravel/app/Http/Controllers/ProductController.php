<?php

namespace App\Http\Controllers;

use App\Models\AuditLog;
use App\Models\Product;
use App\Models\Review;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\DB;

class ProductController extends Controller
{
    public function index(Request $request): JsonResponse
    {
        $query = Product::query()->where('active', true)->orderBy('id');
        if ($request->filled('q')) {
            $query->where('name', 'like', '%' . $request->input('q') . '%');
        }
        if ($request->boolean('in_stock')) {
            $query->where('stock', '>', 0);
        }
        return response()->json($query->paginate(20));
    }

    public function store(Request $request): JsonResponse
    {
        $data = $this->validate($request, [
            'category_id' => 'required|exists:categories,id',
            'brand_id' => 'nullable|exists:brands,id',
            'sku' => 'required|string|max:64|unique:products,sku',
            'name' => 'required|string|max:255',
            'price' => 'required|numeric|min:0',
            'stock' => 'integer|min:0',
        ]);
        $product = Product::create($data);
        AuditLog::record('create', $product, ['sku' => $product->sku]);
        return response()->json($product, 201);
    }

    public function show(Product $product): JsonResponse
    {
        $rating = DB::selectOne('SELECT product_rating(?) AS rating', [$product->id])->rating;
        return response()->json($product->load('category', 'brand')->toArray() + ['rating' => (float) $rating]);
    }

    public function update(Request $request, Product $product): JsonResponse
    {
        $data = $this->validate($request, ['price' => 'numeric|min:0', 'name' => 'string|max:255', 'active' => 'boolean']);
        if (isset($data['price']) && (float) $data['price'] !== (float) $product->price) {
            DB::table('price_history')->insert(['product_id' => $product->id, 'old_price' => $product->price, 'new_price' => $data['price']]);
        }
        $product->update($data);
        AuditLog::record('update', $product, $data);
        return response()->json($product->fresh());
    }

    public function restock(Request $request, Product $product): JsonResponse
    {
        $data = $this->validate($request, ['quantity' => 'required|integer|min:1', 'warehouse' => 'string|exists:warehouses,code']);
        $warehouse = DB::table('warehouses')->where('code', $data['warehouse'] ?? 'MAIN')->value('id');
        DB::statement('CALL restock_product(?, ?, ?)', [$product->id, $warehouse, $data['quantity']]);
        return response()->json($product->fresh());
    }

    public function review(Request $request, Product $product): JsonResponse
    {
        $data = $this->validate($request, ['user_id' => 'required|exists:users,id', 'rating' => 'required|integer|between:1,5', 'body' => 'nullable|string']);
        $review = Review::create($data + ['product_id' => $product->id, 'approved' => $data['rating'] >= 3]);
        return response()->json($review, 201);
    }
}
