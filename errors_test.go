package testdbd

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorCodes(t *testing.T) {
	timeout := Errorf(ETimeout, "2 sessions of u did not end within 30 s of KILL")
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"plain error", errors.New("boom"), EInternal},
		{"coded", timeout, ETimeout},
		{"wrapped by fmt", fmt.Errorf("reset: %w", timeout), ETimeout},
		{"wrapped by Wrapf", Wrapf(fmt.Errorf("end sessions: %w", timeout), "reset of db failed"), ETimeout},
		{"Wrapf of uncoded", Wrapf(errors.New("boom"), "reset of db failed"), EInternal},
		{"Errorf with cause keeps its own code", Errorf(EConflict, "lease ended: %w", timeout), EConflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ErrorCode(c.err); got != c.want {
				t.Errorf("ErrorCode(%v) = %s, want %s", c.err, got, c.want)
			}
		})
	}
	w := Wrapf(timeout, "reset of %s failed", "db")
	if w.Error() != "reset of db failed: "+timeout.Error() || !errors.Is(w, timeout) {
		t.Errorf("Wrapf: %q, unwraps to the cause: %v", w, errors.Is(w, timeout))
	}
}

func TestParseEngine(t *testing.T) {
	cases := []struct {
		in   string
		want Engine
		err  bool
	}{
		{"mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)", Engine{MariaDB, "10.11.19"}, false},
		{"10.11.19-MariaDB-0+deb12u1", Engine{MariaDB, "10.11.19"}, false},
		{"/usr/sbin/mysqld  Ver 9.7.4 for Linux on x86_64 (MySQL Community Server - GPL)", Engine{MySQL, "9.7.4"}, false},
		{"8.4.3", Engine{MySQL, "8.4.3"}, false},
		{"11.8.3-MariaDB-1 from Debian", Engine{MariaDB, "11.8.3"}, false},
		{"mysqld Ver unknown", Engine{}, true},
		{"", Engine{}, true},
	}
	for _, c := range cases {
		got, err := ParseEngine(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseEngine(%q) = %v, %v; want %v (error: %v)", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseStrategy(t *testing.T) {
	for _, s := range Strategies {
		got, err := ParseStrategy(s.String())
		if err != nil || got != s {
			t.Errorf("ParseStrategy(%q) = %v, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "STRATEGY_SNAPSHOT", "Snapshot", "unspecified", "drop"} {
		if _, err := ParseStrategy(bad); ErrorCode(err) != EInvalid {
			t.Errorf("ParseStrategy(%q): %v, want an invalid-input error", bad, err)
		}
	}
}

func TestMismatched(t *testing.T) {
	got := Mismatched([]Setting{
		{Name: "max_connections", Requested: "512", Actual: "214", OK: false},
		{Name: "log_bin", Requested: "OFF", Actual: "OFF", OK: true},
	})
	if len(got) != 1 || got[0] != "max_connections (asked 512, runs with 214)" {
		t.Errorf("Mismatched = %q", got)
	}
}
