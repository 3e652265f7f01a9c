package binlog

import (
	"strings"
	"testing"

	"github.com/testdbd/testdbd/schema"
)

// TestKeyLiteral: the key of a row image as SQL, for each kind of key
// column, and why not where it cannot be written back.
func TestKeyLiteral(t *testing.T) {
	col := func(name, typ, charset string, unsigned bool, ordinal int) schema.KeyColumn {
		return schema.KeyColumn{Name: name, Type: typ, Charset: charset, Unsigned: unsigned, Ordinal: ordinal}
	}
	cases := []struct {
		name    string
		key     []schema.KeyColumn
		row     []any
		skipped []int
		want    string
		why     string
	}{
		{"signed int", []schema.KeyColumn{col("id", "int", "", false, 0)}, []any{int32(-5)}, nil, "-5", ""},
		{"unsigned tinyint logged signed", []schema.KeyColumn{col("id", "tinyint", "", true, 1)}, []any{"x", int8(-1)}, nil, "255", ""},
		{"unsigned bigint logged signed", []schema.KeyColumn{col("id", "bigint", "", true, 0)}, []any{int64(-1)}, nil, "18446744073709551615", ""},
		{"unsigned mediumint logged signed", []schema.KeyColumn{col("id", "mediumint", "", true, 0)}, []any{int32(-1)}, nil, "16777215", ""},
		{"unsigned logged unsigned", []schema.KeyColumn{col("id", "int", "", true, 0)}, []any{uint32(7)}, nil, "7", ""},
		{"varchar", []schema.KeyColumn{col("k", "varchar", "utf8mb4", false, 0)}, []any{"ß "}, nil, "_utf8mb4 X'c39f20'", ""},
		{"empty char", []schema.KeyColumn{col("k", "char", "latin1", false, 0)}, []any{""}, nil, "_latin1''", ""},
		{"varbinary", []schema.KeyColumn{col("k", "varbinary", "", false, 0)}, []any{[]byte{0, 1}}, nil, "X'0001'", ""},
		{"two columns", []schema.KeyColumn{col("a", "varchar", "utf8mb4", false, 1), col("b", "int", "", true, 0)},
			[]any{int32(3), "a"}, nil, "(_utf8mb4 X'61',3)", ""},
		{"no key", nil, []any{int32(1)}, nil, "", "no primary key"},
		{"key not in the image", []schema.KeyColumn{col("id", "int", "", false, 0)}, []any{nil, int32(1)}, []int{0}, "", "lacks its key column id"},
		{"binary", []schema.KeyColumn{col("k", "binary", "", false, 0)}, []any{"ab"}, nil, "", "of type binary"},
		{"decimal", []schema.KeyColumn{col("k", "decimal", "", false, 0)}, []any{"1.50"}, nil, "", "of type decimal"},
	}
	for _, c := range cases {
		got, why := KeyLiteral(c.key, c.row, c.skipped)
		if got != c.want || (c.why == "") != (why == "") || (c.why != "" && !strings.Contains(why, c.why)) {
			t.Errorf("%s: %q, %q; want %q, %q", c.name, got, why, c.want, c.why)
		}
	}
}
