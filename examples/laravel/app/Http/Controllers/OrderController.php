<?php

namespace App\Http\Controllers;

use App\Models\AuditLog;
use App\Models\Coupon;
use App\Models\Order;
use App\Models\Product;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\DB;
use Illuminate\Validation\ValidationException;

class OrderController extends Controller
{
    /** Places an order: items priced now, stock taken, totals computed by the database. */
    public function store(Request $request): JsonResponse
    {
        $data = $this->validate($request, [
            'user_id' => 'required|exists:users,id',
            'items' => 'required|array|min:1',
            'items.*.product_id' => 'required|exists:products,id',
            'items.*.quantity' => 'required|integer|min:1',
            'coupon' => 'nullable|string|exists:coupons,code',
        ]);
        $order = DB::transaction(function () use ($data) {
            $order = Order::create([
                'number' => 'SO-' . now()->format('ymd') . '-' . random_int(100000, 999999),
                'user_id' => $data['user_id'],
                'coupon_id' => isset($data['coupon']) ? Coupon::where('code', $data['coupon'])->value('id') : null,
                'currency_id' => 1,
                'sales_channel_id' => 1,
                'placed_at' => now(),
            ]);
            foreach ($data['items'] as $i => $item) {
                $product = Product::lockForUpdate()->findOrFail($item['product_id']);
                if ($product->stock < $item['quantity']) {
                    throw ValidationException::withMessages(["items.$i.quantity" => "only {$product->stock} of {$product->sku} in stock"]);
                }
                $product->decrement('stock', $item['quantity']);
                $rate = DB::table('tax_rates')->where('code', $product->vat_category_id === 2 ? 'reduced' : 'standard')->value('rate');
                $order->items()->create(['product_id' => $product->id, 'quantity' => $item['quantity'], 'unit_price' => $product->price, 'tax_rate' => $rate]);
                DB::table('stock_movements')->insert([
                    'product_id' => $product->id, 'quantity' => -$item['quantity'], 'reason' => 'order',
                    'reference_type' => Order::class, 'reference_id' => $order->id, 'created_at' => now(), 'updated_at' => now(),
                ]);
            }
            if ($order->coupon_id !== null) {
                DB::table('coupon_redemptions')->insert(['coupon_id' => $order->coupon_id, 'order_id' => $order->id, 'user_id' => $order->user_id, 'created_at' => now(), 'updated_at' => now()]);
            }
            $order->transition('pending', 'placed');
            AuditLog::record('create', $order, ['items' => count($data['items'])], (int) $data['user_id']);
            return $order->recalculate();
        });
        return response()->json($order->load('items'), 201);
    }

    public function show(Order $order): JsonResponse
    {
        return response()->json($order->load('items', 'payments'));
    }

    /** Cancels a pending order and puts its stock back. */
    public function cancel(Order $order): JsonResponse
    {
        if ($order->status !== 'pending') {
            return response()->json(['message' => "a $order->status order cannot be cancelled"], 409);
        }
        DB::transaction(function () use ($order) {
            foreach ($order->items as $item) {
                Product::whereKey($item->product_id)->increment('stock', $item->quantity);
            }
            $order->transition('cancelled');
            AuditLog::record('cancel', $order);
        });
        return response()->json($order->fresh());
    }
}
