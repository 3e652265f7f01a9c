<?php

namespace App\Http\Controllers;

use App\Models\AuditLog;
use App\Models\User;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Hash;

class UserController extends Controller
{
    public function index(): JsonResponse
    {
        return response()->json(User::orderBy('id')->paginate(20));
    }

    public function store(Request $request): JsonResponse
    {
        $data = $this->validate($request, [
            'name' => 'required|string|max:255',
            'email' => 'required|email|unique:users,email',
            'password' => 'required|string|min:8',
            'country' => 'nullable|exists:countries,code',
        ]);
        $user = User::create([
            'name' => $data['name'],
            'email' => $data['email'],
            'password' => Hash::make($data['password']),
            'country_id' => isset($data['country']) ? DB::table('countries')->where('code', $data['country'])->value('id') : null,
        ]);
        AuditLog::record('create', $user, ['email' => $user->email]);
        return response()->json($user, 201);
    }

    public function show(User $user): JsonResponse
    {
        return response()->json($user);
    }

    public function destroy(User $user): JsonResponse
    {
        $user->delete(); // soft
        AuditLog::record('delete', $user);
        return response()->json(null, 204);
    }

    public function orders(User $user): JsonResponse
    {
        return response()->json($user->orders()->with('items')->orderBy('id')->get());
    }
}
