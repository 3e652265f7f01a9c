package filename_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/filename"
	"github.com/testdbd/testdbd/internal/testenv"
)

func TestDecode(t *testing.T) {
	for enc, want := range map[string]string{
		"plain_Name9":          "plain_Name9",
		"my@002dtable":         "my-table",
		"t@0k@0020b":           "tä b",
		"@7Pmega":              "Ωmega",
		"@M0@z0@q0":            "Жук",
		"@1r":                  "ÿ",
		"@1S@1T":               "ĀĂ",
		"x@20acy":              "x€y",
		"t#P#p0":               "t#P#p0",
		"a@0040b@002e":         "a@b.",
		"@0023p@0023":          "#p#",
		"@4e2d@6587":           "中文",
		"":                     "",
		"@0060q@0060@0060":     "`q``",
		"sp@0020@0020ace@0021": "sp  ace!",
	} {
		got, err := filename.Decode(enc)
		if err != nil || got != want {
			t.Errorf("Decode(%q) = %q, %v; want %q", enc, got, err, want)
		}
		if strings.Contains(want, "#P#") {
			continue
		}
		if back := filename.Encode(want); back != enc {
			t.Errorf("Encode(%q) = %q, want %q", want, back, enc)
		}
	}
	for _, bad := range []string{"@", "a@", "@002", "@002D", "@zz", "@0000", "x@00g1"} {
		if got, err := filename.Decode(bad); err == nil {
			t.Errorf("Decode(%q) = %q, want an error", bad, got)
		}
	}
}

// TestPairsMatchServer compares the whole short-form table with MariaDB's
// own decoding of every two-character sequence.
func TestPairsMatchServer(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			srv := testenv.ServerOf(t, p)
			if srv.Engine().Flavor != testdbd.MariaDB {
				t.Skip("only MariaDB decodes the filename character set in SQL")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rows, err := srv.DB.QueryContext(ctx, `WITH RECURSIVE c (n) AS (SELECT 48 UNION ALL SELECT n + 1 FROM c WHERE n < 127)
SELECT CONCAT(CHAR(a.n), CHAR(b.n)), CONVERT(CAST(CONCAT('@', CHAR(a.n), CHAR(b.n)) AS BINARY) USING filename) FROM c a, c b`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			n, short := 0, 0
			for rows.Next() {
				var pair, decoded string
				if err := rows.Scan(&pair, &decoded); err != nil {
					t.Fatal(err)
				}
				n++
				got, err := filename.Decode("@" + pair)
				serverDecodes := len([]rune(decoded)) == 1
				if serverDecodes {
					short++
				}
				switch {
				case serverDecodes && (err != nil || got != decoded):
					t.Errorf("@%s: server %q, Decode %q, %v", pair, decoded, got, err)
				case !serverDecodes && err == nil && !isHexPrefix(pair):
					t.Errorf("@%s: server cannot decode it (%q), Decode gives %q", pair, decoded, got)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if n != 80*80 || short < 1000 {
				t.Fatalf("read %d sequences, %d of the short form", n, short)
			}
		})
	}
}

// isHexPrefix reports whether a pair could start a four-digit form (Decode
// then fails for want of the other two digits, which is also an error).
func isHexPrefix(pair string) bool {
	return strings.Trim(pair, "0123456789abcdef") == ""
}

// TestServerNames creates tables with random names on every engine and
// checks that the names InnoDB reports decode to them and that Encode
// writes them the same way.
func TestServerNames(t *testing.T) {
	alphabet := []rune("aZ_09 -.#@$`'\"!%&()+,;=[]{}~äöüßéñçÅÆØΩπЖжук€中文字한")
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			srv := testenv.ServerOf(t, p)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			db := "fn_" + strings.ReplaceAll(fmt.Sprint(rand.Uint32()), "-", "")
			if _, err := srv.DB.ExecContext(ctx, "CREATE DATABASE "+db); err != nil {
				t.Fatal(err)
			}
			defer srv.DB.ExecContext(context.Background(), "DROP DATABASE "+db) //nolint:errcheck
			r := rand.New(rand.NewPCG(rand.Uint64(), 1))
			names := map[string]bool{}
			for len(names) < 60 {
				n := 1 + r.IntN(20)
				var b strings.Builder
				for range n {
					b.WriteRune(alphabet[r.IntN(len(alphabet))])
				}
				name := strings.TrimRight(b.String(), " ")
				if name == "" || names[name] {
					continue
				}
				q := "CREATE TABLE " + db + ".`" + strings.ReplaceAll(name, "`", "``") + "` (id INT PRIMARY KEY) ENGINE=InnoDB"
				if _, err := srv.DB.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				names[name] = true
			}
			view := "INNODB_SYS_TABLES"
			if srv.Engine().Flavor == testdbd.MySQL {
				view = "INNODB_TABLES"
			}
			rows, err := srv.DB.QueryContext(ctx, "SELECT SUBSTRING(NAME, LOCATE('/', NAME) + 1) FROM information_schema."+view+" WHERE NAME LIKE '"+db+"/%'")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			seen := 0
			for rows.Next() {
				var raw string
				if err := rows.Scan(&raw); err != nil {
					t.Fatal(err)
				}
				got, err := filename.Decode(raw)
				if err != nil || !names[got] {
					t.Errorf("InnoDB name %q decodes to %q (%v), no table of that name", raw, got, err)
					continue
				}
				if enc := filename.Encode(got); enc != raw {
					t.Errorf("Encode(%q) = %q, InnoDB has %q", got, enc, raw)
				}
				seen++
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if seen != len(names) {
				t.Errorf("InnoDB lists %d of the %d tables", seen, len(names))
			}
		})
	}
}
