package xa

import "testing"

// TestEvents feeds the events of an XA transaction as MariaDB 10.11 and
// MySQL 9.7 show them (SHOW BINLOG EVENTS), with other transactions around
// them, and checks what the log learns.
func TestEvents(t *testing.T) {
	mariadb := [][2]string{
		{"Gtid", "BEGIN GTID 0-1-80004"},
		{"Table_map", "table_id: 22 (other.t)"},
		{"Write_rows_v1", "table_id: 22 flags: STMT_END_F"},
		{"Xid", "COMMIT /* xid=20015 */"},
		{"Gtid", "XA START X'7033',X'',1 GTID 0-1-80007"},
		{"Table_map", "table_id: 22 (a.t)"},
		{"Write_rows_v1", "table_id: 22 flags: STMT_END_F"},
		{"Table_map", "table_id: 23 (a.t(2))"},
		{"Query", "XA END X'7033',X'',1"},
		{"XA_prepare", "XA PREPARE X'7033',X'',1"},
		// A one-phase XA COMMIT is logged as any transaction, and an XA
		// START whose transaction is cut short leaves nothing prepared.
		{"Gtid", "XA START X'7034',X'',1 GTID 0-1-80008"},
		{"Table_map", "table_id: 22 (b.t)"},
		{"Gtid", "GTID 0-1-80009"},
		{"Query", "XA COMMIT X'7034',X'',1"},
	}
	mysql := [][2]string{
		{"Anonymous_Gtid", "SET @@SESSION.GTID_NEXT= 'ANONYMOUS'"},
		{"Query", "XA START X'7832',X'6271',5"},
		{"Table_map", "table_id: 106 (c.t)"},
		{"Update_rows", "table_id: 106 flags: STMT_END_F USE_SQL_FOREIGN_KEY_F"},
		{"Query", "XA END X'7832',X'6271',5"},
		{"XA_prepare", "XA PREPARE X'7832',X'6271',5"},
	}
	var l Log
	for _, e := range append(mariadb, mysql...) {
		l.event(e[0], e[1])
	}
	p3 := l.wrote[ID{Format: 1, Gtrid: "p3"}]
	if p3 == nil || !p3.wroteTo("a") || p3.wroteTo("other") || p3.wroteTo("b") || len(p3.tables) != 2 {
		t.Errorf("p3: %+v", p3)
	}
	if l.wrote[ID{Format: 1, Gtrid: "p4"}] != nil {
		t.Error("p4 (cut short) taken for prepared")
	}
	x2 := l.wrote[ID{Format: 5, Gtrid: "x2", Bqual: "bq"}]
	if x2 == nil || !x2.wroteTo("c") {
		t.Errorf("x2: %+v", x2)
	}
	if len(l.wrote) != 2 {
		t.Errorf("%d transactions prepared, want 2", len(l.wrote))
	}
	for _, bad := range []string{"X'7g',X'',1", "X'78',1", "'x',X'',1", "X'78',X''", "X'78',X'',"} {
		if id, ok := parseID(bad); ok {
			t.Errorf("parseID(%q) = %+v", bad, id)
		}
	}
}
