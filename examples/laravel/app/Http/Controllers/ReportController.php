<?php

namespace App\Http\Controllers;

use App\Models\AuditLog;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\DB;

class ReportController extends Controller
{
    /** The order_summaries view. */
    public function orders(Request $request): JsonResponse
    {
        $query = DB::table('order_summaries')->orderBy('order_id');
        if ($request->filled('status')) {
            $query->where('status', $request->input('status'));
        }
        return response()->json($query->get());
    }

    /** The product_sales view: units and revenue of paid and shipped orders. */
    public function products(): JsonResponse
    {
        return response()->json(DB::table('product_sales')->where('units_sold', '>', 0)->orderByDesc('revenue')->get());
    }

    public function auditLog(Request $request): JsonResponse
    {
        $query = AuditLog::query()->orderBy('id');
        foreach (['entity', 'action'] as $filter) {
            if ($request->filled($filter)) {
                $query->where($filter, $request->input($filter));
            }
        }
        return response()->json($query->get());
    }
}
