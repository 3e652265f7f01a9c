<?php

namespace Database\Seeders;

use Illuminate\Database\Seeder;
use Illuminate\Support\Facades\DB;

/**
 * What every test starts from: the lookups, two staff users, a small
 * catalogue, a warehouse and a coupon. The template is built with
 * `php artisan migrate --seed`, so each test sees these rows, and the ids
 * that follow them (user 3, product 5, order 1) are the same in every test.
 */
class DatabaseSeeder extends Seeder
{
    private const LOOKUPS = [
        'countries' => ['DE' => 'Germany', 'FR' => 'France', 'GB' => 'United Kingdom', 'NL' => 'Netherlands', 'US' => 'United States'],
        'currencies' => ['EUR' => 'Euro', 'GBP' => 'Pound sterling', 'USD' => 'US dollar'],
        'languages' => ['de' => 'German', 'en' => 'English', 'fr' => 'French', 'nl' => 'Dutch'],
        'timezones' => ['UTC' => 'UTC', 'Europe/Berlin' => 'Berlin', 'Europe/London' => 'London', 'America/New_York' => 'New York'],
        'regions' => ['EU' => 'European Union', 'UK' => 'United Kingdom', 'NA' => 'North America'],
        'order_statuses' => ['pending' => 'Pending', 'paid' => 'Paid', 'shipped' => 'Shipped', 'cancelled' => 'Cancelled', 'refunded' => 'Refunded'],
        'payment_methods' => ['card' => 'Card', 'paypal' => 'PayPal', 'transfer' => 'Bank transfer', 'gift_card' => 'Gift card'],
        'payment_statuses' => ['authorized' => 'Authorized', 'captured' => 'Captured', 'failed' => 'Failed', 'refunded' => 'Refunded'],
        'shipping_carriers' => ['dhl' => 'DHL', 'ups' => 'UPS', 'royal_mail' => 'Royal Mail'],
        'shipping_methods' => ['standard' => 'Standard', 'express' => 'Express', 'pickup' => 'Pick-up'],
        'tax_rates' => ['standard' => 'Standard rate', 'reduced' => 'Reduced rate', 'zero' => 'Zero rate'],
        'units' => ['pc' => 'Piece', 'kg' => 'Kilogram', 'm' => 'Metre', 'l' => 'Litre'],
        'return_reasons' => ['damaged' => 'Arrived damaged', 'wrong_item' => 'Wrong item', 'unwanted' => 'No longer wanted'],
        'refund_reasons' => ['return' => 'Returned', 'goodwill' => 'Goodwill', 'duplicate' => 'Duplicate payment'],
        'cancellation_reasons' => ['customer' => 'Customer request', 'stock' => 'Out of stock', 'fraud' => 'Suspected fraud'],
        'ticket_priorities' => ['low' => 'Low', 'normal' => 'Normal', 'high' => 'High'],
        'ticket_statuses' => ['open' => 'Open', 'waiting' => 'Waiting', 'closed' => 'Closed'],
        'address_types' => ['billing' => 'Billing', 'shipping' => 'Shipping'],
        'product_conditions' => ['new' => 'New', 'used' => 'Used', 'refurbished' => 'Refurbished'],
        'warranty_types' => ['none' => 'None', 'one_year' => 'One year', 'two_years' => 'Two years'],
        'notification_channels' => ['mail' => 'Mail', 'sms' => 'SMS', 'push' => 'Push'],
        'customer_groups' => ['retail' => 'Retail', 'trade' => 'Trade', 'vip' => 'VIP'],
        'sales_channels' => ['web' => 'Web shop', 'app' => 'App', 'phone' => 'Phone'],
        'vat_categories' => ['standard' => 'Standard', 'books' => 'Books', 'food' => 'Food'],
        'colors' => ['black' => 'Black', 'white' => 'White', 'red' => 'Red', 'blue' => 'Blue'],
        'sizes' => ['s' => 'S', 'm' => 'M', 'l' => 'L', 'xl' => 'XL'],
        'materials' => ['cotton' => 'Cotton', 'steel' => 'Steel', 'wood' => 'Wood'],
        'payment_terms' => ['prepaid' => 'Prepaid', 'net30' => 'Net 30', 'net60' => 'Net 60'],
        'delivery_windows' => ['morning' => 'Morning', 'afternoon' => 'Afternoon', 'evening' => 'Evening'],
        'industries' => ['retail' => 'Retail', 'education' => 'Education', 'health' => 'Health'],
    ];

    public function run(): void
    {
        foreach (self::LOOKUPS as $table => $rows) {
            $sort = 0;
            foreach ($rows as $code => $name) {
                $row = ['code' => $code, 'name' => $name, 'sort' => $sort++];
                if ($table === 'tax_rates') {
                    $row['rate'] = ['standard' => 20, 'reduced' => 5, 'zero' => 0][$code];
                }
                DB::table($table)->insert($row);
            }
        }
        $now = now();
        DB::table('users')->insert([
            ['name' => 'Admin', 'email' => 'admin@shop.test', 'password' => self::PASSWORD, 'is_admin' => true, 'country_id' => 1, 'created_at' => $now, 'updated_at' => $now],
            ['name' => 'Support', 'email' => 'support@shop.test', 'password' => self::PASSWORD, 'is_admin' => true, 'country_id' => 3, 'created_at' => $now, 'updated_at' => $now],
        ]);
        DB::table('categories')->insert([
            ['name' => 'Books', 'slug' => 'books', 'position' => 1, 'created_at' => $now, 'updated_at' => $now],
            ['name' => 'Electronics', 'slug' => 'electronics', 'position' => 2, 'created_at' => $now, 'updated_at' => $now],
            ['name' => 'Garden', 'slug' => 'garden', 'position' => 3, 'created_at' => $now, 'updated_at' => $now],
        ]);
        DB::table('brands')->insert([
            ['name' => 'Acme', 'created_at' => $now, 'updated_at' => $now],
            ['name' => 'Globex', 'created_at' => $now, 'updated_at' => $now],
        ]);
        DB::table('products')->insert([
            ['category_id' => 1, 'brand_id' => null, 'sku' => 'BK-001', 'name' => 'The Art of Testing', 'price' => 39.90, 'stock' => 25, 'vat_category_id' => 2],
            ['category_id' => 1, 'brand_id' => null, 'sku' => 'BK-002', 'name' => 'Databases in Depth', 'price' => 54.00, 'stock' => 10, 'vat_category_id' => 2],
            ['category_id' => 2, 'brand_id' => 1, 'sku' => 'EL-001', 'name' => 'USB-C cable', 'price' => 9.99, 'stock' => 200, 'vat_category_id' => 1],
            ['category_id' => 3, 'brand_id' => 2, 'sku' => 'GD-001', 'name' => 'Watering can', 'price' => 19.50, 'stock' => 0, 'vat_category_id' => 1],
        ]);
        DB::table('warehouses')->insert(['code' => 'MAIN', 'name' => 'Main warehouse', 'country_id' => 1, 'created_at' => $now, 'updated_at' => $now]);
        DB::table('coupons')->insert(['code' => 'WELCOME10', 'percent_off' => 10, 'created_at' => $now, 'updated_at' => $now]);
        DB::table('settings')->insert([
            ['key' => 'shop.name', 'value' => 'Shop', 'created_at' => $now, 'updated_at' => $now],
            ['key' => 'shop.currency', 'value' => 'EUR', 'created_at' => $now, 'updated_at' => $now],
        ]);
        DB::table('feature_flags')->insert(['name' => 'reviews', 'enabled' => true, 'created_at' => $now, 'updated_at' => $now]);
    }

    /** bcrypt of "password". */
    private const PASSWORD = '$2y$10$92IXUNpkjO0rOQ5byMi.Ye4oKoEa3Ro9llC/.og/at2.uheWG/igi';
}
