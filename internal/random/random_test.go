package random

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	seen := map[string]bool{}
	counts := map[rune]int{}
	for i := 0; i < 2000; i++ {
		s := String(24, LowerAlnum)
		if len(s) != 24 {
			t.Fatalf("length %d, want 24", len(s))
		}
		for _, r := range s {
			if !strings.ContainsRune(LowerAlnum, r) {
				t.Fatalf("%q has %q, not in the alphabet", s, r)
			}
			counts[r]++
		}
		if seen[s] {
			t.Fatalf("%q drawn twice", s)
		}
		seen[s] = true
	}
	// 48,000 draws over 36 characters: each should appear about 1,333 times.
	for _, r := range LowerAlnum {
		if n := counts[r]; n < 1000 || n > 1700 {
			t.Errorf("%q drawn %d times of 48000: not uniform", r, n)
		}
	}
}

func TestHex(t *testing.T) {
	if h := Hex(8); len(h) != 16 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Fatalf("Hex(8) = %q", h)
	}
	if a, b := Hex(8), Hex(8); a == b {
		t.Fatal("two draws are equal")
	}
}
