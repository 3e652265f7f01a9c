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

// TestFulltextTablesLeftOut: InnoDB's hidden FULLTEXT tables, with their
// names whole or cut at 64 characters of "database/table" by MariaDB, are
// not tables of their own; tables merely named alike are.
func TestFulltextTablesLeftOut(t *testing.T) {
	tables := map[string]TableState{}
	for _, name := range []string{
		"FTS_0000000000000246_CONFIG", "FTS_0000000000000246_BEING_DELETED_CACHE",
		"FTS_0000000000000246_000000000000033f_INDEX_1", "FTS_0000000000000246_000000000000033f_INDE",
		"fts_0000000000000246_000000000000033f_index_6", "FTS_0000000000000246_0000",
	} {
		addTable(tables, name, TableState{ID: 1})
	}
	addTable(tables, "fts_notes", TableState{ID: 2})
	addTable(tables, "FTS_0000_CONFIG", TableState{ID: 3})
	if len(tables) != 2 || tables["fts_notes"].ID != 2 || tables["FTS_0000_CONFIG"].ID != 3 {
		t.Errorf("tables: %v", tables)
	}
}
