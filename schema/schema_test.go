package schema

import (
	"reflect"
	"testing"
)

func TestStripAutoInc(t *testing.T) {
	cases := map[string]string{
		"CREATE TABLE `t` (\n  `id` int NOT NULL AUTO_INCREMENT\n) ENGINE=InnoDB AUTO_INCREMENT=42 DEFAULT CHARSET=utf8mb4": "CREATE TABLE `t` (\n  `id` int NOT NULL AUTO_INCREMENT\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		"CREATE TABLE `t` (`a` int) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4":                                                  "CREATE TABLE `t` (`a` int) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		"CREATE TABLE `t` (`id` int AUTO_INCREMENT) ENGINE=InnoDB AUTO_INCREMENT=7":                                         "CREATE TABLE `t` (`id` int AUTO_INCREMENT) ENGINE=InnoDB",
	}
	for in, want := range cases {
		if got := stripAutoInc(in); got != want {
			t.Errorf("stripAutoInc(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

func TestDiff(t *testing.T) {
	tpl := &Schema{Charset: "utf8mb4", Collation: "utf8mb4_general_ci",
		Tables: []*Table{{Name: "users", Create: "CREATE TABLE `users` (`id` int) AUTO_INCREMENT=3"},
			{Name: "posts", Create: "CREATE TABLE `posts` (`id` int)"}},
		Views:    []Object{{Kind: "VIEW", Name: "v", Create: "CREATE VIEW v AS SELECT 1"}},
		Triggers: []Object{{Kind: "TRIGGER", Name: "a", Create: "x", SQLMode: "STRICT"}, {Kind: "TRIGGER", Name: "b", Create: "y"}},
	}
	same := &Schema{Charset: "utf8mb4", Collation: "utf8mb4_general_ci",
		Tables: []*Table{{Name: "users", Create: "CREATE TABLE `users` (`id` int) AUTO_INCREMENT=99"},
			{Name: "posts", Create: "CREATE TABLE `posts` (`id` int)"}},
		Views:    []Object{{Kind: "VIEW", Name: "v", Create: "CREATE VIEW v AS SELECT 1"}},
		Triggers: []Object{{Kind: "TRIGGER", Name: "a", Create: "x", SQLMode: "STRICT"}, {Kind: "TRIGGER", Name: "b", Create: "y"}},
	}
	if d := Diff(tpl, same); len(d) != 0 {
		t.Errorf("a different AUTO_INCREMENT is not a schema change: %v", d)
	}
	changed := &Schema{Charset: "latin1", Collation: "latin1_swedish_ci",
		Tables:   []*Table{{Name: "users", Create: "CREATE TABLE `users` (`id` bigint)"}, {Name: "extra", Create: "CREATE TABLE `extra` (`id` int)"}},
		Triggers: []Object{{Kind: "TRIGGER", Name: "b", Create: "y"}, {Kind: "TRIGGER", Name: "a", Create: "x", SQLMode: ""}},
	}
	want := []string{
		"database default character set or collation",
		"table extra was created",
		"table posts was dropped",
		"table users was altered",
		"trigger a was altered",
		"trigger order was altered",
		"view v was dropped",
	}
	if got := Diff(tpl, changed); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff =\n%q\nwant\n%q", got, want)
	}
}

func TestIdentifiers(t *testing.T) {
	got := identifiers("INSERT INTO `audit log` (x) SELECT n FROM posts_2 WHERE `a``b` = 'c'")
	want := []string{"INSERT", "INTO", "audit log", "x", "SELECT", "n", "FROM", "posts_2", "WHERE", "a`b", "c"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("identifiers = %q, want %q", got, want)
	}
}

func TestSettingLiteral(t *testing.T) {
	if v, err := settingLiteral("STRICT_TRANS_TABLES,NO_ZERO_DATE"); err != nil || v != "'STRICT_TRANS_TABLES,NO_ZERO_DATE'" {
		t.Errorf("settingLiteral: %q, %v", v, err)
	}
	if _, err := settingLiteral("x'; DROP DATABASE y; --"); err == nil {
		t.Error("settingLiteral accepted a quote")
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("a`b"); got != "`a``b`" {
		t.Errorf("Quote = %s", got)
	}
}

func TestTrimBody(t *testing.T) {
	cases := map[string]string{
		"CREATE PROCEDURE `p`() SELECT 1":     "CREATE PROCEDURE `p`() SELECT 1",
		"CREATE PROCEDURE `p`() SELECT 1;":    "CREATE PROCEDURE `p`() SELECT 1",
		"... DO DELETE FROM t WHERE v = 2\n;": "... DO DELETE FROM t WHERE v = 2",
		"... SET NEW.v = NEW.v + 1 ; ;\n":     "... SET NEW.v = NEW.v + 1",
		"... BEGIN\n  SELECT 1;\nEND":         "... BEGIN\n  SELECT 1;\nEND",
		"... SELECT 1 -- a comment\n":         "... SELECT 1 -- a comment\n", // no ";": as it is
		"... RETURN ';'":                      "... RETURN ';'",
	}
	for in, want := range cases {
		if got := trimBody(in); got != want {
			t.Errorf("trimBody(%q) = %q, want %q", in, got, want)
		}
	}
}
