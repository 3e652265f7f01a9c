package templates_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/dbcompare"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
	"github.com/testdbd/testdbd/templates"
)

// typesSQL makes a database whose rows use every kind of value an image
// encodes differently: integers at their limits, exact decimals, FLOAT and
// DOUBLE values whose text form would round, BIT, bytes with zeros and
// quotes, text in several character sets, JSON, times with fractions and a
// TIMESTAMP (read in UTC whatever the session's zone), ENUM, SET, YEAR,
// geometry, NULLs, generated columns (left out of copies), plus a view, a
// trigger and a procedure.
const typesSQL = `CREATE TABLE kinds (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  i8 TINYINT, u64 BIGINT UNSIGNED, dec30 DECIMAL(30,10), f FLOAT, d DOUBLE, b BIT(12),
  bin VARBINARY(16), blb BLOB, txt TEXT CHARACTER SET utf8mb4, lat VARCHAR(20) CHARACTER SET latin1,
  j JSON, dt DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2), dy DATE, yr YEAR,
  en ENUM('a','b','c'), st SET('x','y','z'), g POINT,
  total DOUBLE AS (d * 2) VIRTUAL
) AUTO_INCREMENT = 1000;
INSERT INTO kinds (i8, u64, dec30, f, d, b, bin, blb, txt, lat, j, dt, ts, tm, dy, yr, en, st, g) VALUES
 (-128, 18446744073709551615, 12345678901234567890.0123456789, 0.1, 0.1, b'101010101010', X'00ff27225c00', X'', 'emoji 😀 and ''quotes'' \\ back', 'caf\xe9',
  '{"k": [1, 2.5, "x"], "n": null}', '2024-02-29 23:59:59.999999', '2024-01-01 00:00:00.123', '-838:59:58.99', '1000-01-01', 2155, 'c', 'x,z', ST_GeomFromText('POINT(1.5 -2.25)')),
 (127, 0, -0.0000000001, 3.4e38, 1.7976931348623157e300, b'0', NULL, REPEAT(X'5a', 3000), '', '', 'null', NULL, NULL, '00:00:00', NULL, 1901, NULL, '', NULL),
 (NULL, NULL, NULL, -1.17549435e-38, 4.9e-324, NULL, X'61', NULL, NULL, NULL, NULL, '1970-01-01 00:00:00', '2038-01-19 03:14:07.999', NULL, '9999-12-31', NULL, 'a', 'y', ST_GeomFromText('POINT(0 0)'));
CREATE TABLE empty_one (id INT AUTO_INCREMENT PRIMARY KEY, v INT);
CREATE TABLE child (id INT PRIMARY KEY, k BIGINT, FOREIGN KEY (k) REFERENCES kinds (id) ON DELETE CASCADE);
INSERT INTO child VALUES (1, 1000), (2, 1001);
CREATE VIEW kinds_v AS SELECT id, txt FROM kinds;
CREATE TRIGGER kinds_bi BEFORE INSERT ON kinds FOR EACH ROW SET NEW.i8 = COALESCE(NEW.i8, 0);
CREATE PROCEDURE count_kinds() SELECT COUNT(*) FROM kinds;
ANALYZE TABLE kinds, child`

// TestImageRoundTrip writes the image of a database of every kind of value
// and loads it into another on every engine: the load checks that every
// table's checksum equals the original's and that the definitions are the
// same, and the copy is compared with the original in full, statistics
// included.
func TestImageRoundTrip(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			srv := testenv.ServerOf(t, p)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			conn, err := srv.DB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// The writer's and the reader's session time zones differ from
			// UTC: TIMESTAMP values must come back as they were.
			if _, err := conn.ExecContext(ctx, "SET time_zone = '+05:30'; CREATE DATABASE img_src; USE img_src; "+typesSQL); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			t.Cleanup(func() {
				srv.DB.Exec("DROP DATABASE IF EXISTS img_src")
				srv.DB.Exec("DROP DATABASE IF EXISTS img_dst")
			})
			s, err := schema.Capture(ctx, srv.DB, "img_src", "")
			if err != nil {
				t.Fatal(err)
			}
			hdr := templates.ImageHeader{Engine: srv.Engine().String(), Hash: strings.Repeat("ab", 32), Name: "kinds", Schema: s}
			var buf bytes.Buffer
			if err := templates.WriteImage(ctx, srv.DB, hdr, &buf); err != nil {
				t.Fatal(err)
			}
			t.Logf("image: %d bytes", buf.Len())
			got, rows, closer, err := templates.ReadImageHeader(&buf)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			if why := got.Compatible(srv.Engine(), hdr.Hash); why != "" {
				t.Fatalf("the image is not compatible with the server it came from: %s", why)
			}
			other := testdbd.Engine{Flavor: srv.Engine().Flavor, Version: "0.0.1"}
			if why := got.Compatible(other, hdr.Hash); !strings.Contains(why, "built on") {
				t.Errorf("an image of another engine version is compatible: %q", why)
			}
			built, err := templates.LoadImage(ctx, srv, &strategies.DDLCounter{}, "img_dst", got, rows, templates.BuildOptions{})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			want, err := dbcompare.Take(ctx, srv.DB, "img_src")
			if err != nil {
				t.Fatal(err)
			}
			have, err := dbcompare.Take(ctx, srv.DB, "img_dst")
			if err != nil {
				t.Fatal(err)
			}
			if diffs := dbcompare.Diff(want, have); len(diffs) > 0 {
				t.Errorf("the loaded copy differs: %q", diffs)
			}
			if built.Owner == "" || built.Schema == nil || len(built.Schema.Tables) != 3 {
				t.Errorf("built: %+v", built)
			}

			// A damaged image is refused and leaves nothing behind.
			var good bytes.Buffer
			if err := templates.WriteImage(ctx, srv.DB, hdr, &good); err != nil {
				t.Fatal(err)
			}
			damaged := tamper(t, good.Bytes())
			got, rows, closer2, err := templates.ReadImageHeader(bytes.NewReader(damaged))
			if err != nil {
				t.Fatal(err)
			}
			defer closer2.Close()
			if _, err := templates.LoadImage(ctx, srv, &strategies.DDLCounter{}, "img_bad", got, rows, templates.BuildOptions{}); err == nil ||
				!strings.Contains(err.Error(), "checksum") {
				t.Errorf("a damaged image loaded: %v", err)
			}
			var n int
			srv.DB.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'img_bad'").Scan(&n)
			if n != 0 {
				t.Error("the damaged image's database was left behind")
			}
		})
	}
}

// tamper changes one value in an image's rows.
func tamper(t *testing.T, image []byte) []byte {
	t.Helper()
	hdr, rows, closer, err := templates.ReadImageHeader(bytes.NewReader(image))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	body, err := io.ReadAll(rows)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(body), ",-128,", ",-127,", 1)
	if changed == string(body) {
		t.Fatal("nothing to tamper with")
	}
	var out bytes.Buffer
	if err := templates.WriteRawImage(&out, hdr, []byte(changed)); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestCache: Save makes an image visible only once whole, Open marks it
// used, and past MaxBytes the least recently used go.
func TestCache(t *testing.T) {
	dir := t.TempDir()
	c := &templates.Cache{Dir: dir, MaxBytes: 2500}
	hash := func(i int) string { return strings.Repeat(string(rune('a'+i)), 64) }
	for i := 0; i < 3; i++ {
		if _, err := c.Save(hash(i), func(w io.Writer) error { _, err := w.Write(make([]byte, 1000)); return err }); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			f, err := c.Open(hash(0)) // 0 is now more recent than 1
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !c.Has(hash(0)) || c.Has(hash(1)) || !c.Has(hash(2)) {
		t.Errorf("after 3 images of 1000 bytes in 2500: has %v %v %v, want the least recently used (1) gone", c.Has(hash(0)), c.Has(hash(1)), c.Has(hash(2)))
	}
	failing := errors.New("disk full")
	if _, err := c.Save(hash(3), func(w io.Writer) error { w.Write([]byte("half")); return failing }); !errors.Is(err, failing) || c.Has(hash(3)) {
		t.Errorf("a failed save: %v, has %v", err, c.Has(hash(3)))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if _, err := c.Open("../../etc/passwd"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a path: %v", err)
	}
}
