<?php

use Illuminate\Database\Migrations\Migration;
use Illuminate\Database\Schema\Blueprint;
use Illuminate\Support\Facades\Schema;

return new class extends Migration
{
    public function up(): void
    {
        Schema::create('addresses', function (Blueprint $table) {
            $table->id();
            $table->foreignId('user_id')->constrained('users')->cascadeOnDelete();
            $table->foreignId('address_type_id')->nullable()->constrained('address_types')->nullOnDelete();
            $table->string('line1');
            $table->string('line2')->nullable();
            $table->string('city');
            $table->string('postcode', 16);
            $table->foreignId('country_id')->constrained('countries')->restrictOnDelete();
            $table->boolean('is_default')->default(false);
            $table->timestamps();
        });
    }

    public function down(): void
    {
        Schema::dropIfExists('addresses');
    }
};
