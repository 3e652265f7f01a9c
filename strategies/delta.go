package strategies

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/schema"
)

// The delta restore: with the server's binary log followed as a replica
// does (Target.Rows), a reset knows the key of every row a test changed,
// and puts back those rows only: it deletes them by key and copies the
// template's rows of the same keys, whatever the size of the table. A
// table whose changes the log cannot vouch for (binlog.Rows says which
// and why) is restored as without the log.

// DeltaWait is how long a reset waits for the binary log stream to catch
// up with the log's end before it restores without it.
var DeltaWait = 2 * time.Second

// takeDelta takes what the binary log shows changed in the database since
// the last reset, once the lease's sessions have ended. Every reset takes
// it, whatever it then does, so that the next one starts from there; the
// truncate strategy, which restores whole tables, only starts anew
// without waiting for the stream.
func (rs *resetter) takeDelta(ctx context.Context) {
	if rs.t.Rows == nil || rs.t.Strategy == testdbd.StrategyTruncate {
		if rs.t.Rows != nil {
			rs.t.Rows.Forget(rs.t.Database)
		}
		rs.delta = binlog.Changes{Why: "the truncate strategy restores whole tables"}
		return
	}
	rs.delta = rs.t.Rows.Take(ctx, rs.t.Database, DeltaWait)
}

// deltaKeys returns the keys of the rows to put back in each table the log
// can vouch for, and why it cannot for the others, by table. A table whose
// rows a foreign key's action may have changed (binlog.Rows does not see
// those everywhere) is not vouched for; nor one with a FULLTEXT index,
// whose relevance figures would move with rows deleted and inserted.
func deltaKeys(s *schema.Schema, c binlog.Changes) (keys map[string][]string, why map[string]string) {
	keys, why = map[string][]string{}, map[string]string{}
	cascaded := cascadedFrom(s, c)
	for _, tbl := range s.Tables {
		tc := c.Tables[tbl.Name]
		switch {
		case c.Why != "":
			why[tbl.Name] = c.Why
		case tc.Why != "":
			why[tbl.Name] = tc.Why
		case len(tbl.Key) == 0:
			why[tbl.Name] = "it has no primary key"
		case tbl.Fulltext:
			why[tbl.Name] = "it has a FULLTEXT index, whose relevance figures a row deleted and copied back would move"
		case cascaded[tbl.Name] != "":
			why[tbl.Name] = "a foreign key's action on a change to " + cascaded[tbl.Name] + " may have changed its rows unlogged"
		case brokenRowKeys && len(tc.Keys) > 0:
			keys[tbl.Name] = tc.Keys[1:]
		default:
			keys[tbl.Name] = tc.Keys
		}
	}
	return keys, why
}

// cascadedFrom returns the tables that a foreign key's action may have
// changed, each with the table whose change it may have followed:
// following Table.Cascades from every table rows were deleted from or
// updated in.
func cascadedFrom(s *schema.Schema, c binlog.Changes) map[string]string {
	out := map[string]string{}
	var queue []string
	for name, tc := range c.Tables {
		if tc.Removed {
			queue = append(queue, name)
		}
	}
	slices.Sort(queue)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		tbl, ok := s.Table(name)
		if !ok {
			continue
		}
		for _, child := range tbl.Cascades {
			if _, seen := out[child]; !seen {
				out[child] = name
				queue = append(queue, child)
			}
		}
	}
	return out
}

// splitDelta splits tables into those the log vouches for (rs.deltaOK),
// and the others.
func (rs *resetter) splitDelta(tables []*schema.Table) (vouched, others []*schema.Table) {
	for _, tbl := range tables {
		if _, ok := rs.deltaOK[tbl.Name]; ok {
			vouched = append(vouched, tbl)
		} else {
			others = append(others, tbl)
		}
	}
	return vouched, others
}

// byDelta sorts the tables the log vouches for, among those detection
// found changed or unsure: those with rows to put back are restored by
// key, those without (their rows are the template's) have at most their
// AUTO_INCREMENT set back. Nothing is checksummed.
func (rs *resetter) byDelta(vouched []*schema.Table, obs *observation) (restore, rewind []*schema.Table) {
	for _, tbl := range vouched {
		switch {
		case len(rs.deltaOK[tbl.Name]) > 0:
			restore = append(restore, tbl)
		case !rs.t.KeepAutoIncrement && autoIncDiffers(obs.tables[tbl.Name], tbl):
			rewind = append(rewind, tbl)
		}
	}
	return restore, rewind
}

// deltaFallback says, for the report, why tables restored were copied back
// whole although the log was followed: the first reason, with the tables
// it holds for.
func (rs *resetter) deltaFallback(restored []*schema.Table) string {
	if rs.t.Rows == nil || rs.t.Strategy == testdbd.StrategyTruncate {
		return ""
	}
	byWhy := map[string][]string{}
	var whys []string
	for _, tbl := range restored {
		if _, ok := rs.deltaOK[tbl.Name]; ok || rs.appended[tbl.Name] {
			continue
		}
		w := rs.deltaWhy[tbl.Name]
		if w == "" {
			w = "the binary log was not read for this reset"
		}
		if _, seen := byWhy[w]; !seen {
			whys = append(whys, w)
		}
		byWhy[w] = append(byWhy[w], tbl.Name)
	}
	if len(whys) == 0 {
		return ""
	}
	out := fmt.Sprintf("%s copied back whole: %s", strings.Join(byWhy[whys[0]], ", "), whys[0])
	if len(whys) > 1 {
		out += fmt.Sprintf(" (and %d more reasons)", len(whys)-1)
	}
	return out
}

// keyWhere renders the condition that selects tbl's rows of keys: an IN
// list for a key of one column; for several, one conjunction per key
// ORed together, which MariaDB's DELETE reads by the key's index where a
// row constructor list ((a, b) IN (…)) scans the table.
func keyWhere(tbl *schema.Table, keys []string) string {
	if len(tbl.Key) == 1 {
		return schema.Quote(tbl.Key[0].Name) + " IN (" + strings.Join(keys, ", ") + ")"
	}
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" OR ")
		}
		// A row constructor of literals without commas of their own
		// (binlog.KeyLiteral): numbers and hexadecimal strings.
		parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(k, "("), ")"), ",")
		b.WriteString("(")
		for j, col := range tbl.Key {
			if j > 0 {
				b.WriteString(" AND ")
			}
			b.WriteString(schema.Quote(col.Name) + " = " + parts[j])
		}
		b.WriteString(")")
	}
	return b.String()
}

// brokenRowKeys, set only by tests, drops a key of every table's from a
// delta restore, to show that the property test catches a row left out.
var brokenRowKeys bool
