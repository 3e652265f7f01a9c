// Package filename decodes the names InnoDB and the data dictionary keep in
// the servers' "filename" encoding (information_schema.INNODB_TABLESTATS,
// INNODB_SYS_TABLESTATS, mysql.innodb_table_stats): a table "my-table"
// appears there as "my@002dtable", "tä b" as "t@0k@0020b".
//
// MariaDB decodes such names in SQL (CONVERT(... USING filename)); MySQL
// has no such character set, so testdbd decodes them itself, on both
// engines alike.
//
// The encoding keeps [0-9A-Za-z_] as they are and writes every other
// character as '@' followed either by two characters from a fixed table
// (Latin, Greek and Cyrillic letters, among others) or by four lowercase
// hexadecimal digits, the character's code point. A partition's name
// carries its separator "#P#" or "#p#" unencoded.
package filename

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Decode returns the name an encoded name stands for. A sequence after '@'
// that is neither form is an error (the servers would show '?').
func Decode(s string) (string, error) {
	i := strings.IndexByte(s, '@')
	if i < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		s = s[i+1:]
		if len(s) >= 2 {
			if r, ok := pairs[s[:2]]; ok {
				b.WriteRune(r)
				s = s[2:]
				i = strings.IndexByte(s, '@')
				continue
			}
		}
		r, ok := hex4(s)
		if !ok {
			return "", fmt.Errorf("filename-encoded name: no character at @%s", s[:min(len(s), 4)])
		}
		b.WriteRune(r)
		s = s[4:]
		i = strings.IndexByte(s, '@')
	}
	b.WriteString(s)
	return b.String(), nil
}

// hex4 reads four lowercase hexadecimal digits.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			return 0, false
		}
	}
	return r, r != 0 && utf8.ValidRune(r)
}

// Encode returns the encoded form of a name, as the servers write it.
func Encode(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r < 128 && (r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r == '_'):
			b.WriteRune(r)
		default:
			if p, ok := short[r]; ok {
				b.WriteString("@" + p)
			} else {
				fmt.Fprintf(&b, "@%04x", r)
			}
		}
	}
	return b.String()
}

// short is pairs inverted.
var short = func() map[rune]string {
	m := make(map[rune]string, len(pairs))
	for p, r := range pairs {
		m[r] = p
	}
	return m
}()
