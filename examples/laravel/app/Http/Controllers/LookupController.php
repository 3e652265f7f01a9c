<?php

namespace App\Http\Controllers;

use Illuminate\Http\JsonResponse;
use Illuminate\Support\Facades\DB;

class LookupController extends Controller
{
    private const TABLES = ['countries', 'currencies', 'languages', 'order_statuses', 'payment_methods', 'shipping_methods', 'tax_rates', 'units'];

    public function show(string $table): JsonResponse
    {
        abort_unless(in_array($table, self::TABLES, true), 404);
        return response()->json(DB::table($table)->where('active', true)->orderBy('sort')->get(['code', 'name']));
    }
}
