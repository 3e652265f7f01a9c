<?php

use App\Http\Controllers\CategoryController;
use App\Http\Controllers\LookupController;
use App\Http\Controllers\OrderController;
use App\Http\Controllers\PaymentController;
use App\Http\Controllers\ProductController;
use App\Http\Controllers\ReportController;
use App\Http\Controllers\UserController;
use Illuminate\Support\Facades\Route;

Route::get('/users', [UserController::class, 'index']);
Route::post('/users', [UserController::class, 'store']);
Route::get('/users/{user}', [UserController::class, 'show']);
Route::delete('/users/{user}', [UserController::class, 'destroy']);
Route::get('/users/{user}/orders', [UserController::class, 'orders']);

Route::get('/categories', [CategoryController::class, 'index']);
Route::get('/categories/{category}/products', [CategoryController::class, 'products']);

Route::get('/products', [ProductController::class, 'index']);
Route::post('/products', [ProductController::class, 'store']);
Route::get('/products/{product}', [ProductController::class, 'show']);
Route::patch('/products/{product}', [ProductController::class, 'update']);
Route::post('/products/{product}/restock', [ProductController::class, 'restock']);
Route::post('/products/{product}/reviews', [ProductController::class, 'review']);

Route::post('/orders', [OrderController::class, 'store']);
Route::get('/orders/{order}', [OrderController::class, 'show']);
Route::post('/orders/{order}/cancel', [OrderController::class, 'cancel']);
Route::post('/orders/{order}/payments', [PaymentController::class, 'store']);

Route::get('/reports/orders', [ReportController::class, 'orders']);
Route::get('/reports/products', [ReportController::class, 'products']);
Route::get('/audit-log', [ReportController::class, 'auditLog']);

Route::get('/lookups/{table}', [LookupController::class, 'show']);
