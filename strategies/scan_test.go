package strategies

import "testing"

func TestAddTablePartitions(t *testing.T) {
	tables := map[string]TableState{}
	addTable(tables, "plain", TableState{ID: 7, Modified: 3, AutoInc: 11})
	addTable(tables, "log#P#p0", TableState{ID: 20, Modified: 2, AutoInc: 5})
	addTable(tables, "log#P#p1", TableState{ID: 21, Modified: 4, AutoInc: 9})
	addTable(tables, "log#p#p2", TableState{ID: 19, Modified: 1, AutoInc: 0})
	if got := tables["plain"]; got != (TableState{ID: 7, Modified: 3, AutoInc: 11}) {
		t.Errorf("plain: %+v", got)
	}
	// Partitions add up: modifications summed, the newest id and the
	// highest counter kept.
	if got := tables["log"]; got != (TableState{ID: 21, Modified: 7, AutoInc: 9}) {
		t.Errorf("log: %+v", got)
	}
	if len(tables) != 2 {
		t.Errorf("tables: %v", tables)
	}
}

func TestLikeEscape(t *testing.T) {
	cases := map[string]string{
		"tdb_abc_w1": `tdb\_abc\_w1`,
		"50%":        `50\%`,
		`a\b`:        `a\\\\b`,
		"it's":       "it''s",
	}
	for in, want := range cases {
		if got := likeEscape(in); got != want {
			t.Errorf("likeEscape(%q) = %q, want %q", in, got, want)
		}
	}
}
