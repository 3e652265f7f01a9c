package schema

import (
	"sort"
	"strings"
)

// Diff lists the objects of worker that differ from the template, e.g.
// "table posts was altered", sorted. Table definitions are compared without
// their AUTO_INCREMENT clause: the counter is content, not definition.
func Diff(tpl, worker *Schema) []string {
	var out []string
	if tpl.Charset != worker.Charset || tpl.Collation != worker.Collation {
		out = append(out, "database default character set or collation")
	}
	defs := func(s *Schema) map[string]string {
		m := map[string]string{}
		for _, t := range s.Tables {
			m["table "+t.Name] = stripAutoInc(t.Create)
		}
		for _, o := range s.Objects() {
			m[strings.ToLower(o.Kind)+" "+o.Name] = o.Create + "\x00" + o.SQLMode
		}
		order := make([]string, len(s.Triggers))
		for i, tr := range s.Triggers {
			order[i] = tr.Name
		}
		m["trigger order"] = strings.Join(order, ",")
		return m
	}
	want, got := defs(tpl), defs(worker)
	for k, v := range want {
		if g, ok := got[k]; !ok {
			out = append(out, k+" was dropped")
		} else if g != v {
			out = append(out, k+" was altered")
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, k+" was created")
		}
	}
	sort.Strings(out)
	return out
}

func stripAutoInc(create string) string {
	i := strings.Index(create, " AUTO_INCREMENT=")
	if i < 0 {
		return create
	}
	j := i + len(" AUTO_INCREMENT=")
	for j < len(create) && create[j] >= '0' && create[j] <= '9' {
		j++
	}
	return create[:i] + create[j:]
}
