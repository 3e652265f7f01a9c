<?php

use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\DB;

return new class extends Migration
{
    public function up(): void
    {
        // migrate:fresh drops tables (and views, with --drop-views), not
        // routines: drop what an earlier run left before creating them.
        $this->down();
        // Totals of an order from its items, its coupon and the items' tax.
        DB::unprepared(<<<'SQL'
            CREATE PROCEDURE recalculate_order(IN p_order_id BIGINT UNSIGNED)
            BEGIN
                DECLARE v_subtotal DECIMAL(12, 2);
                DECLARE v_tax DECIMAL(12, 2);
                DECLARE v_discount DECIMAL(12, 2);
                SELECT COALESCE(SUM(quantity * unit_price), 0), COALESCE(SUM(ROUND(quantity * unit_price * tax_rate / 100, 2)), 0)
                  INTO v_subtotal, v_tax FROM order_items WHERE order_id = p_order_id;
                SELECT COALESCE(LEAST(v_subtotal, ROUND(v_subtotal * c.percent_off / 100, 2) + c.amount_off), 0)
                  INTO v_discount FROM orders o LEFT JOIN coupons c ON c.id = o.coupon_id WHERE o.id = p_order_id;
                UPDATE orders SET subtotal = v_subtotal, discount = v_discount, tax = v_tax,
                       total = v_subtotal - v_discount + v_tax, updated_at = NOW()
                 WHERE id = p_order_id;
            END
            SQL);
        // Stock into a warehouse: the product's count, the warehouse's level, a movement.
        DB::unprepared(<<<'SQL'
            CREATE PROCEDURE restock_product(IN p_product_id BIGINT UNSIGNED, IN p_warehouse_id BIGINT UNSIGNED, IN p_quantity INT)
            BEGIN
                UPDATE products SET stock = stock + p_quantity, updated_at = NOW() WHERE id = p_product_id;
                INSERT INTO stock_levels (warehouse_id, product_id, quantity, created_at, updated_at)
                     VALUES (p_warehouse_id, p_product_id, p_quantity, NOW(), NOW())
                ON DUPLICATE KEY UPDATE quantity = quantity + p_quantity, updated_at = NOW();
                INSERT INTO stock_movements (product_id, warehouse_id, quantity, reason, created_at, updated_at)
                     VALUES (p_product_id, p_warehouse_id, p_quantity, 'restock', NOW(), NOW());
            END
            SQL);
        DB::unprepared(<<<'SQL'
            CREATE FUNCTION product_rating(p_product_id BIGINT UNSIGNED) RETURNS DECIMAL(3, 2)
            READS SQL DATA
            BEGIN
                RETURN (SELECT COALESCE(ROUND(AVG(rating), 2), 0) FROM reviews WHERE product_id = p_product_id AND approved = 1);
            END
            SQL);
        // Every payment is audited, whoever writes it.
        DB::unprepared(<<<'SQL'
            CREATE TRIGGER payments_audit AFTER INSERT ON payments FOR EACH ROW
                INSERT INTO audit_log (action, entity, entity_id, changes, created_at)
                VALUES ('payment', 'orders', NEW.order_id, JSON_OBJECT('payment_id', NEW.id, 'amount', NEW.amount, 'method', NEW.method), NOW())
            SQL);
    }

    public function down(): void
    {
        DB::unprepared('DROP TRIGGER IF EXISTS payments_audit');
        DB::unprepared('DROP FUNCTION IF EXISTS product_rating');
        DB::unprepared('DROP PROCEDURE IF EXISTS restock_product');
        DB::unprepared('DROP PROCEDURE IF EXISTS recalculate_order');
    }
};
