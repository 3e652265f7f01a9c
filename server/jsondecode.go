package server

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// NewDecoder reads a REST request body into its message. The bodies
// clients send are small flat objects (`{"template":"app","strategy":
// "STRATEGY_SNAPSHOT"}`); such a body is read here, straight into the
// message's fields, without protojson's reflection and without decoding
// the text twice (the gateway's decoder reads it into a json.RawMessage
// first). A body in any other form goes to protojson exactly as before,
// so what is accepted, and every error, stays protojson's: the fast path
// takes only strings without escapes (valid UTF-8), integers written as
// plain numbers within their field's range, booleans and enum names, each
// field once under its JSON or proto name.
func (j *restJSON) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		m, ok := v.(proto.Message)
		if !ok {
			return j.JSONPb.NewDecoder(r).Decode(v)
		}
		var data []byte
		if mb, ok := r.(*memBody); ok {
			data = mb.take() // the body read by bodyReader, without a copy
		} else {
			var err error
			if data, err = io.ReadAll(r); err != nil {
				return err
			}
		}
		if readPlanOf(m.ProtoReflect().Descriptor()).read(data, m.ProtoReflect()) {
			return nil
		}
		if len(data) > LargeBodyBytes {
			// An upload: straight to protojson, without the copies the
			// gateway's decoder makes (a buffer, then a json.RawMessage).
			return j.JSONPb.UnmarshalOptions.Unmarshal(data, m)
		}
		return j.JSONPb.NewDecoder(bytes.NewReader(data)).Decode(v)
	})
}

// readPlan maps a message type's JSON and proto field names to the fields
// the fast path can read; nil for a type it leaves to protojson.
type readPlan struct {
	fields map[string]protoreflect.FieldDescriptor
}

var readPlans sync.Map // protoreflect.MessageDescriptor → *readPlan

func readPlanOf(md protoreflect.MessageDescriptor) *readPlan {
	if p, ok := readPlans.Load(md); ok {
		return p.(*readPlan)
	}
	var p *readPlan
	if md.ParentFile().Package() != "google.protobuf" && md.Oneofs().Len() == 0 && md.ExtensionRanges().Len() == 0 {
		p = &readPlan{fields: map[string]protoreflect.FieldDescriptor{}}
		fds := md.Fields()
		for i := 0; i < fds.Len(); i++ {
			fd := fds.Get(i)
			if fd.IsList() || fd.IsMap() || fd.HasPresence() || !fastKind(fd) {
				continue // such a key sends the body to protojson
			}
			p.fields[fd.JSONName()] = fd
			p.fields[fd.TextName()] = fd
		}
	}
	readPlans.Store(md, p)
	return p
}

// fastKind: the kinds the fast path reads.
func fastKind(fd protoreflect.FieldDescriptor) bool {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BoolKind,
		protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return true
	case protoreflect.EnumKind:
		return fd.Enum().ParentFile().Package() != "google.protobuf" // NullValue reads null
	}
	return false
}

// read sets m's fields from data when data is a body of the simple form
// and reports whether it was; m is untouched when it was not.
func (p *readPlan) read(data []byte, m protoreflect.Message) bool {
	if p == nil {
		return false
	}
	type set struct {
		fd protoreflect.FieldDescriptor
		v  protoreflect.Value
	}
	var sets [8]set
	got := sets[:0]
	s := scanner{b: data}
	if !s.byte('{') {
		return false
	}
	if !s.byte('}') {
		for {
			key, ok := s.plainString()
			if !ok || !s.byte(':') {
				return false
			}
			fd := p.fields[string(key)]
			if fd == nil {
				return false
			}
			for _, g := range got {
				if g.fd == fd {
					return false // protojson refuses a field given twice
				}
			}
			v, ok := s.value(fd)
			if !ok {
				return false
			}
			got = append(got, set{fd, v})
			if s.byte('}') {
				break
			}
			if !s.byte(',') {
				return false
			}
		}
	}
	// Text after the object is ignored, as the gateway's decoder does.
	for _, g := range got {
		m.Set(g.fd, g.v)
	}
	return true
}

// scanner reads the simple form's tokens, skipping whitespace before each.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c if it comes next.
func (s *scanner) byte(c byte) bool {
	if s.space(); s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters, in
// valid UTF-8, and returns its contents.
func (s *scanner) plainString() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			out := s.b[start:s.i]
			s.i++
			return out, utf8.Valid(out)
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// value reads a value for fd.
func (s *scanner) value(fd protoreflect.FieldDescriptor) (protoreflect.Value, bool) {
	s.space()
	if s.i >= len(s.b) {
		return protoreflect.Value{}, false
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		str, ok := s.plainString()
		return protoreflect.ValueOfString(string(str)), ok
	case protoreflect.EnumKind:
		name, ok := s.plainString()
		if !ok {
			return protoreflect.Value{}, false
		}
		ev := fd.Enum().Values().ByName(protoreflect.Name(name))
		if ev == nil {
			return protoreflect.Value{}, false
		}
		return protoreflect.ValueOfEnum(ev.Number()), true
	case protoreflect.BoolKind:
		for _, lit := range []string{"true", "false"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				return protoreflect.ValueOfBool(lit == "true"), true
			}
		}
		return protoreflect.Value{}, false
	}
	tok, ok := s.integer()
	if !ok {
		return protoreflect.Value{}, false
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := strconv.ParseInt(tok, 10, 32)
		return protoreflect.ValueOfInt32(int32(n)), err == nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := strconv.ParseUint(tok, 10, 32)
		return protoreflect.ValueOfUint32(uint32(n)), err == nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := strconv.ParseInt(tok, 10, 64)
		return protoreflect.ValueOfInt64(n), err == nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := strconv.ParseUint(tok, 10, 64)
		return protoreflect.ValueOfUint64(n), err == nil
	}
	return protoreflect.Value{}, false
}

// integer reads a JSON number that is an integer written plainly: an
// optional minus, then 0 or digits not starting with 0. (What follows a
// value must be a comma or the closing brace, so `1.5`, `1e2` or `truex`
// go to protojson.)
func (s *scanner) integer() (string, bool) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if n := s.i - digits; n == 0 || n > 1 && s.b[digits] == '0' {
		return "", false
	}
	return string(s.b[start:s.i]), true
}
