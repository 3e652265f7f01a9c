package random

import (
	"crypto/rand"
	"encoding/hex"
)

// Alphabets for String.
const (
	Alnum      = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	LowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// Hex returns n random bytes as 2n hexadecimal digits.
func Hex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// String returns n characters drawn uniformly from alphabet (at most 256
// characters long).
func String(n int, alphabet string) string {
	out := make([]byte, n)
	// Rejection sampling keeps the draw uniform: bytes at or above the
	// largest multiple of len(alphabet) are drawn again.
	limit := 256 - 256%len(alphabet)
	buf := make([]byte, n+n/2+8)
	for i := 0; i < n; {
		_, _ = rand.Read(buf)
		for _, c := range buf {
			if int(c) < limit && i < n {
				out[i] = alphabet[int(c)%len(alphabet)]
				i++
			}
		}
	}
	return string(out)
}
