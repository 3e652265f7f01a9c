<?php

namespace App\Http\Controllers;

use App\Models\Order;
use App\Models\Payment;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Str;

class PaymentController extends Controller
{
    /** Takes a payment; an order paid in full becomes paid (the payments_audit trigger logs it). */
    public function store(Request $request, Order $order): JsonResponse
    {
        $data = $this->validate($request, ['method' => 'required|exists:payment_methods,code', 'amount' => 'required|numeric|min:0.01']);
        if ($order->status !== 'pending') {
            return response()->json(['message' => "a $order->status order takes no payments"], 409);
        }
        $payment = DB::transaction(function () use ($order, $data) {
            $payment = Payment::create(['order_id' => $order->id, 'method' => $data['method'], 'amount' => $data['amount'], 'reference' => (string) Str::uuid()]);
            if ((float) $order->payments()->sum('amount') >= (float) $order->total) {
                $order->transition('paid');
            }
            return $payment;
        });
        return response()->json($payment->fresh()->toArray() + ['order_status' => $order->fresh()->status], 201);
    }
}
