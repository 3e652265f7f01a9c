package server

import (
	"errors"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// restJSON is the REST API's JSON: protojson with the proto field names
// and every field, set or not (runtime.JSONPb with UseProtoNames and
// EmitUnpopulated), written for the API's own messages without protojson's
// per-call reflection. protojson sorts every message's fields on every
// call; here the fields of each message type are listed once, in the order
// protojson writes them (as declared), and the values read through
// protoreflect. That is most of an
// acquire's or a reset's cost at the REST edge.
//
// A message is written here only when every message it can hold is made
// of the kinds handled below: strings, booleans, 32- and 64-bit integers
// (the 64-bit ones quoted), floating-point numbers, enums (by name),
// nested messages, google.protobuf.Timestamp, and repeated fields of
// those. Anything else (maps, oneofs, proto3 optional fields, bytes, other
// well-known types, extensions; errors' google.rpc.Status holds Any) and
// any value protojson refuses (invalid UTF-8, a timestamp out of its
// range) goes to protojson, so the output is protojson's, up to
// whitespace.
type restJSON struct {
	runtime.JSONPb
}

func newRESTJSON() *restJSON {
	m := &restJSON{}
	m.MarshalOptions.UseProtoNames = true
	m.MarshalOptions.EmitUnpopulated = true
	return m
}

// Marshal writes v, a proto message, as protojson would.
func (j *restJSON) Marshal(v any) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		if p := planOf(m.ProtoReflect().Descriptor()); p != nil {
			if out, err := p.append(make([]byte, 0, 512), m.ProtoReflect()); err == nil {
				return out, nil
			}
		}
	}
	return j.JSONPb.Marshal(v)
}

// errProtojson: a value only protojson should write (or refuse).
var errProtojson = errors.New("left to protojson")

// messagePlan is how one message type is written: its fields in the order
// they are declared (protojson's), each with its JSON name already quoted.
type messagePlan struct {
	fields []fieldPlan
}

type fieldPlan struct {
	key []byte // `"name":`
	fd  protoreflect.FieldDescriptor
	sub *messagePlan // message fields (and lists of them); nil for a Timestamp
}

var plans sync.Map // protoreflect.MessageDescriptor → *messagePlan, or nil when unsupported

const timestampName = "google.protobuf.Timestamp"

// planOf returns the plan of md, nil when the type is left to protojson.
func planOf(md protoreflect.MessageDescriptor) *messagePlan {
	if p, ok := plans.Load(md); ok {
		return p.(*messagePlan)
	}
	p := buildPlan(md, map[protoreflect.MessageDescriptor]*messagePlan{})
	plans.Store(md, p)
	return p
}

// buildPlan plans md and the message types it holds; building holds the
// plans under construction, so that a type that holds itself gets the same
// plan.
func buildPlan(md protoreflect.MessageDescriptor, building map[protoreflect.MessageDescriptor]*messagePlan) *messagePlan {
	if p, ok := building[md]; ok {
		return p
	}
	// The well-known types have JSON forms of their own (a Timestamp
	// inside a message is handled below).
	if md.ParentFile().Package() == "google.protobuf" || md.Oneofs().Len() > 0 || md.ExtensionRanges().Len() > 0 || md.IsMapEntry() {
		return nil
	}
	p := &messagePlan{}
	building[md] = p
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		if fd.IsMap() || fd.HasPresence() && fd.Kind() != protoreflect.MessageKind || fd.IsExtension() {
			return nil
		}
		f := fieldPlan{key: strconv.AppendQuote(nil, string(fd.Name())), fd: fd}
		f.key = append(f.key, ':')
		switch fd.Kind() {
		case protoreflect.EnumKind:
			if fd.Enum().ParentFile().Package() == "google.protobuf" { // NullValue is written as null
				return nil
			}
		case protoreflect.StringKind, protoreflect.BoolKind,
			protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
			protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
			protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
			protoreflect.Uint64Kind, protoreflect.Fixed64Kind,
			protoreflect.DoubleKind, protoreflect.FloatKind:
		case protoreflect.MessageKind:
			if sub := fd.Message(); sub.FullName() != timestampName {
				if f.sub = buildPlan(sub, building); f.sub == nil {
					return nil
				}
			}
		default:
			return nil
		}
		p.fields = append(p.fields, f)
	}
	return p
}

// append writes m, of p's type, after out.
func (p *messagePlan) append(out []byte, m protoreflect.Message) ([]byte, error) {
	out = append(out, '{')
	for i, f := range p.fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, f.key...)
		var err error
		v := m.Get(f.fd)
		switch {
		case f.fd.IsList():
			l := v.List()
			out = append(out, '[')
			for k := 0; k < l.Len(); k++ {
				if k > 0 {
					out = append(out, ',')
				}
				if out, err = f.appendSingular(out, l.Get(k)); err != nil {
					return nil, err
				}
			}
			out = append(out, ']')
		case f.fd.Kind() == protoreflect.MessageKind && !m.Has(f.fd):
			out = append(out, "null"...)
		default:
			if out, err = f.appendSingular(out, v); err != nil {
				return nil, err
			}
		}
	}
	return append(out, '}'), nil
}

// appendSingular writes one value of f's kind.
func (f *fieldPlan) appendSingular(out []byte, v protoreflect.Value) ([]byte, error) {
	switch f.fd.Kind() {
	case protoreflect.StringKind:
		return appendString(out, v.String())
	case protoreflect.BoolKind:
		return strconv.AppendBool(out, v.Bool()), nil
	case protoreflect.EnumKind:
		if ev := f.fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return appendString(out, string(ev.Name()))
		}
		return strconv.AppendInt(out, int64(v.Enum()), 10), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(out, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(out, v.Uint(), 10), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		out = append(out, '"')
		return append(strconv.AppendInt(out, v.Int(), 10), '"'), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		out = append(out, '"')
		return append(strconv.AppendUint(out, v.Uint(), 10), '"'), nil
	case protoreflect.DoubleKind:
		return appendFloat(out, v.Float(), 64), nil
	case protoreflect.FloatKind:
		return appendFloat(out, v.Float(), 32), nil
	case protoreflect.MessageKind:
		if f.sub == nil {
			return appendTimestamp(out, v.Message())
		}
		return f.sub.append(out, v.Message())
	}
	return nil, errProtojson
}

// appendString writes s as a JSON string; invalid UTF-8 is protojson's to
// refuse.
func appendString(out []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errProtojson
	}
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"'), nil
}

// appendFloat writes n as protojson does: NaN and the infinities as
// strings, the shortest representation otherwise, in exponent form below
// 1e-6 and from 1e21.
func appendFloat(out []byte, n float64, bits int) []byte {
	switch {
	case math.IsNaN(n):
		return append(out, `"NaN"`...)
	case math.IsInf(n, 1):
		return append(out, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(out, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(n); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	out = strconv.AppendFloat(out, n, format, -1, bits)
	if format == 'e' {
		// 1e-07, as JSON has it: 1e-7.
		if k := len(out); k >= 4 && out[k-4] == 'e' && out[k-3] == '-' && out[k-2] == '0' {
			out[k-2] = out[k-1]
			out = out[:k-1]
		}
	}
	return out
}

// The range of google.protobuf.Timestamp: 0001-01-01 to 9999-12-31.
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
)

// appendTimestamp writes a google.protobuf.Timestamp as protojson does:
// RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits.
func appendTimestamp(out []byte, m protoreflect.Message) ([]byte, error) {
	fds := m.Descriptor().Fields()
	secs, nanos := m.Get(fds.ByNumber(1)).Int(), m.Get(fds.ByNumber(2)).Int()
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos >= 1e9 {
		return nil, errProtojson
	}
	s := time.Unix(secs, nanos).UTC().Format("2006-01-02T15:04:05.000000000")
	for _, zeros := range []string{"000", "000", ".000"} {
		if len(s) >= len(zeros) && s[len(s)-len(zeros):] == zeros {
			s = s[:len(s)-len(zeros)]
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, 'Z', '"'), nil
}
