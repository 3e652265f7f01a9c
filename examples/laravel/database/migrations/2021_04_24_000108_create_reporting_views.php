<?php

use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\DB;

return new class extends Migration
{
    public function up(): void
    {
        DB::statement(<<<'SQL'
            CREATE VIEW order_summaries AS
            SELECT o.id AS order_id, o.number, o.user_id, u.email, o.status,
                   COUNT(i.id) AS items, COALESCE(SUM(i.quantity), 0) AS units, o.total
            FROM orders o
            JOIN users u ON u.id = o.user_id
            LEFT JOIN order_items i ON i.order_id = o.id
            GROUP BY o.id, o.number, o.user_id, u.email, o.status, o.total
            SQL);
        DB::statement(<<<'SQL'
            CREATE VIEW product_sales AS
            SELECT p.id AS product_id, p.sku, p.name,
                   COALESCE(SUM(i.quantity), 0) AS units_sold,
                   COALESCE(SUM(i.quantity * i.unit_price), 0) AS revenue
            FROM products p
            LEFT JOIN order_items i ON i.product_id = p.id
            LEFT JOIN orders o ON o.id = i.order_id AND o.status IN ('paid', 'shipped')
            WHERE i.id IS NULL OR o.id IS NOT NULL
            GROUP BY p.id, p.sku, p.name
            SQL);
    }

    public function down(): void
    {
        DB::statement('DROP VIEW IF EXISTS product_sales');
        DB::statement('DROP VIEW IF EXISTS order_summaries');
    }
};
