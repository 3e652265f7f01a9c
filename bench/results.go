package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// formatVersion is the version of the results file's layout.
const formatVersion = 3

// Results is everything one run measured: the machine, and each phase's
// plan and raw samples. The report is computed from it alone, so
// `bench report` recomputes every table without rerunning anything.
type Results struct {
	Format  int     `json:"format"`
	Command string  `json:"command"` // how the run was started
	Started string  `json:"started"` // RFC 3339, UTC
	Seconds float64 `json:"seconds"` // wall time of the whole run
	Quick   bool    `json:"quick"`
	Machine Machine `json:"machine"`
	// Phases are the phases that ran, in the order they ran.
	Phases []PhaseRecord `json:"phases"`
}

// PhaseRecord is one phase of a run: its plan and its results, in the
// phase's own types (see Phase), and its error if it failed (the results
// then hold what it measured before).
type PhaseRecord struct {
	Name    string          `json:"name"`
	Seconds float64         `json:"seconds"`
	Error   string          `json:"error,omitempty"`
	Plan    json.RawMessage `json:"plan"`
	Results json.RawMessage `json:"results"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU          string  `json:"cpu"`   // model name from /proc/cpuinfo
	Cores        int     `json:"cores"` // logical CPUs the benchmark could use
	MemoryBytes  int64   `json:"memory_bytes"`
	Kernel       string  `json:"kernel"`
	OS           string  `json:"os"`
	Server       string  `json:"server"` // the native MariaDB/MySQL binary's version
	Go           string  `json:"go"`
	Testdbd      string  `json:"testdbd"` // `testdbd version` of the daemon measured
	LoadStart    string  `json:"load_start"`
	LoadEnd      string  `json:"load_end"`
	OtherServers int     `json:"other_servers"`  // mariadbd/mysqld processes running that this run did not start
	DiskPath     string  `json:"disk_path"`      // where the disk-backed datadir lived
	DiskFsyncMs  float64 `json:"disk_fsync_ms"`  // median of 64 16 KiB writes + fsync on DiskPath
	TmpfsFsyncMs float64 `json:"tmpfs_fsync_ms"` // the same on /dev/shm
}

// writeResults writes r as indented JSON in which every container that
// holds no nested container of containers (a sample series, a plan, the
// machine) takes one line: small enough to commit, easy to diff.
func writeResults(path string, r *Results) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, raw, ""); err != nil {
		return err
	}
	buf.WriteString("\n")
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeJSON writes the JSON value raw at the indentation indent: on one
// line when it is flat (see isFlat), otherwise one member or element a
// line, each written the same way.
func writeJSON(buf *bytes.Buffer, raw json.RawMessage, indent string) error {
	raw = bytes.TrimSpace(raw)
	if isFlat(raw) {
		return json.Compact(buf, raw)
	}
	keys, vals, err := members(raw)
	if err != nil {
		return err
	}
	open, end := byte('['), byte(']')
	if raw[0] == '{' {
		open, end = '{', '}'
	}
	buf.WriteByte(open)
	for i, v := range vals {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n" + indent + "  ")
		if keys != nil {
			k, _ := json.Marshal(keys[i])
			buf.Write(k)
			buf.WriteString(": ")
		}
		if err := writeJSON(buf, v, indent+"  "); err != nil {
			return err
		}
	}
	buf.WriteString("\n" + indent)
	buf.WriteByte(end)
	return nil
}

// isFlat: raw is a scalar, or a container none of whose members holds a
// container other than a flat list of scalars.
func isFlat(raw json.RawMessage) bool {
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return true
	}
	_, vals, err := members(raw)
	if err != nil || len(vals) == 0 {
		return true
	}
	for _, v := range vals {
		if len(v) == 0 || (v[0] != '{' && v[0] != '[') {
			continue
		}
		_, inner, err := members(v)
		if err != nil {
			return true
		}
		for _, x := range inner {
			if len(x) > 0 && (x[0] == '{' || x[0] == '[') {
				return false
			}
		}
	}
	return true
}

// members splits a JSON object into its keys and values, or an array into
// its elements (keys nil), keeping their order.
func members(raw json.RawMessage) (keys []string, vals []json.RawMessage, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	object := raw[0] == '{'
	for dec.More() {
		if object {
			t, err := dec.Token()
			if err != nil {
				return nil, nil, err
			}
			keys = append(keys, fmt.Sprint(t))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		vals = append(vals, bytes.TrimSpace(v))
	}
	if object && keys == nil {
		keys = []string{}
	}
	return keys, vals, nil
}

func readResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Format != formatVersion {
		return nil, fmt.Errorf("%s: results format %d, this report reads %d", path, r.Format, formatVersion)
	}
	return &r, nil
}
