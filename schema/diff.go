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
	want, got := definitions(tpl), definitions(worker)
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

// definitions maps every object of s ("table t", "view v", …, and the
// triggers' order) to what Diff compares of it.
func definitions(s *Schema) map[string]string {
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

// TableChanges splits what Diff finds when only base tables differ: the
// template's tables the worker altered or dropped (to re-create) and the
// worker's tables the template lacks (to drop). ok is false when anything
// else differs (the database's defaults, a view, trigger, routine or
// event, the triggers' order).
func TableChanges(tpl, worker *Schema) (changed []*Table, extra []string, ok bool) {
	if tpl.Charset != worker.Charset || tpl.Collation != worker.Collation {
		return nil, nil, false
	}
	want, got := definitions(tpl), definitions(worker)
	for k, v := range want {
		if !strings.HasPrefix(k, "table ") && got[k] != v {
			return nil, nil, false
		}
	}
	for k := range got {
		if _, in := want[k]; !in && !strings.HasPrefix(k, "table ") {
			return nil, nil, false
		}
	}
	for _, t := range tpl.Tables {
		if g, in := got["table "+t.Name]; !in || g != want["table "+t.Name] {
			changed = append(changed, t)
		}
	}
	for _, t := range worker.Tables {
		if _, in := want["table "+t.Name]; !in {
			extra = append(extra, t.Name)
		}
	}
	return changed, extra, true
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
