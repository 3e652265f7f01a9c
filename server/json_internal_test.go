package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
)

// TestRESTJSONIsProtojson: every message of the API, with random values in
// random fields (unset ones too), comes out of restJSON as the same JSON
// value as out of protojson with the same options, and what protojson
// refuses restJSON refuses too.
func TestRESTJSONIsProtojson(t *testing.T) {
	if n := keys([]byte(`{"a":"x","b":[1,{"c":"y"}],"d":{},"a":null}`)); n != 5 {
		t.Fatalf("keys counted %d of 5", n)
	}
	fast := newRESTJSON()
	slow := newRESTJSON().JSONPb
	rng := rand.New(rand.NewPCG(1, 2))
	msgs := testdbv1.File_testdb_v1_testdb_proto.Messages()
	planned := 0
	for i := 0; i < msgs.Len(); i++ {
		md := msgs.Get(i)
		if planOf(md) != nil {
			planned++
		}
		for n := 0; n < 300; n++ {
			m := dynamicpb.NewMessage(md)
			fill(rng, m, 0)
			compare(t, fast, &slow, m)
		}
	}
	// The hot replies are planned, not left to protojson.
	for _, m := range []protoreflect.ProtoMessage{&testdbv1.AcquireLeaseResponse{}, &testdbv1.ResetLeaseResponse{}, &testdbv1.Lease{}} {
		if planOf(m.ProtoReflect().Descriptor()) == nil {
			t.Errorf("%s is left to protojson", m.ProtoReflect().Descriptor().FullName())
		}
	}
	t.Logf("%d of %d message types planned", planned, msgs.Len())

	// What protojson refuses, or writes by rules of its own.
	lease := &testdbv1.Lease{Id: "l-1", Worker: "bad \xff utf-8"}
	if _, err := fast.Marshal(lease); err == nil {
		t.Error("invalid UTF-8 was written")
	}
	far := &testdbv1.Lease{Id: "l-1", ExpiresAt: &timestamppb.Timestamp{Seconds: maxTimestampSeconds + 1}}
	if _, err := fast.Marshal(far); err == nil {
		t.Error("a timestamp past 9999 was written")
	}
	// An error's status holds Any: protojson writes it.
	st, _ := status.New(codes.NotFound, "no lease l-1").WithDetails(&errdetails.ErrorInfo{Reason: "NOT_FOUND"})
	if planOf(st.Proto().ProtoReflect().Descriptor()) != nil {
		t.Error("google.rpc.Status is planned")
	}
	compare(t, fast, &slow, st.Proto())
	for _, ts := range []*timestamppb.Timestamp{{}, {Seconds: 1, Nanos: 1}, {Seconds: 1, Nanos: 1000}, {Seconds: 1, Nanos: 1000000},
		{Seconds: 1, Nanos: 120000000}, {Seconds: minTimestampSeconds}, {Seconds: maxTimestampSeconds, Nanos: 999999999}} {
		compare(t, fast, &slow, &testdbv1.Lease{ExpiresAt: ts})
	}
	// Nested: invalid UTF-8 and out-of-range nanos deep in a reply.
	for _, m := range []protoreflect.ProtoMessage{
		&testdbv1.AcquireLeaseResponse{Lease: &testdbv1.Lease{Dsn: "\xc3"}},
		&testdbv1.AcquireLeaseResponse{Lease: &testdbv1.Lease{ExpiresAt: &timestamppb.Timestamp{Nanos: 1e9}}},
		&testdbv1.AcquireLeaseResponse{Lease: &testdbv1.Lease{ExpiresAt: &timestamppb.Timestamp{Nanos: -1}}},
	} {
		compare(t, fast, &slow, m)
	}
	// The well-known types as replies of their own have JSON forms of
	// their own: protojson's.
	for _, m := range []protoreflect.ProtoMessage{timestamppb.Now(), durationpb.New(1500 * time.Millisecond), wrapperspb.String("x"),
		&emptypb.Empty{}, &fieldmaskpb.FieldMask{Paths: []string{"a_b", "c"}}} {
		if planOf(m.ProtoReflect().Descriptor()) != nil {
			t.Errorf("%s is planned", m.ProtoReflect().Descriptor().FullName())
		}
		compare(t, fast, &slow, m)
	}
	for _, f := range []float64{math.Copysign(0, -1), 0, 1e-7, 1e-6, 123.456, 1e20, 1e21, -1e21, math.NaN(), math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, math.MaxFloat64} {
		compare(t, fast, &slow, &testdbv1.ResetPhases{SessionsMs: f})
	}
}

// compare checks that fast writes m as the same JSON value as slow.
func compare(t *testing.T, fast *restJSON, slow interface{ Marshal(any) ([]byte, error) }, m protoreflect.ProtoMessage) {
	t.Helper()
	want, werr := slow.Marshal(m)
	got, gerr := fast.Marshal(m)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s: protojson error %v, restJSON error %v", m.ProtoReflect().Descriptor().FullName(), werr, gerr)
	}
	if werr != nil {
		return
	}
	// Numbers compared as written (-0 is not 0), keys once each.
	decode := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		if d.More() {
			return nil, errors.New("more after the value")
		}
		return v, nil
	}
	a, err := decode(want)
	if err != nil {
		t.Fatalf("protojson wrote %s: %v", want, err)
	}
	b, err := decode(got)
	if err != nil {
		t.Fatalf("restJSON wrote invalid JSON %s: %v", got, err)
	}
	if keys(got) != keys(want) {
		t.Fatalf("%s: restJSON wrote %d keys, protojson %d: %s", m.ProtoReflect().Descriptor().FullName(), keys(got), keys(want), got)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s:\nprotojson %s\nrestJSON  %s", m.ProtoReflect().Descriptor().FullName(), want, got)
	}
}

// keys counts the object keys in a JSON text, so that a key written twice,
// which decoding hides, shows.
func keys(b []byte) int {
	type open struct{ object, wantKey bool }
	var stack []open
	done := func() { // a value ended: in an object, a key comes next
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}
	n := 0
	d := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err != nil {
			return n
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, open{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, open{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			if top := len(stack) - 1; top >= 0 && stack[top].object && stack[top].wantKey {
				n++
				stack[top].wantKey = false
			} else {
				done()
			}
		}
	}
}

// fill sets a random subset of m's fields to random values.
func fill(rng *rand.Rand, m protoreflect.Message, depth int) {
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		if rng.IntN(3) == 0 || fd.IsMap() {
			continue
		}
		if fd.IsList() {
			l := m.Mutable(fd).List()
			for n := rng.IntN(4); n > 0; n-- {
				if fd.Kind() == protoreflect.MessageKind {
					if depth > 2 {
						break
					}
					e := l.NewElement()
					fillValue(rng, e.Message(), depth+1)
					l.Append(e)
				} else {
					l.Append(scalar(rng, fd))
				}
			}
			continue
		}
		if fd.Kind() == protoreflect.MessageKind {
			if depth > 2 {
				continue
			}
			fillValue(rng, m.Mutable(fd).Message(), depth+1)
			continue
		}
		m.Set(fd, scalar(rng, fd))
	}
}

// fillValue fills a message value: a Timestamp within its range, any
// other message by fill.
func fillValue(rng *rand.Rand, m protoreflect.Message, depth int) {
	if m.Descriptor().FullName() == timestampName {
		fds := m.Descriptor().Fields()
		nanos := []int64{0, rng.Int64N(1e9), rng.Int64N(1e3) * 1e6, rng.Int64N(1e6) * 1e3}[rng.IntN(4)]
		m.Set(fds.ByNumber(1), protoreflect.ValueOfInt64(minTimestampSeconds+rng.Int64N(maxTimestampSeconds-minTimestampSeconds)))
		m.Set(fds.ByNumber(2), protoreflect.ValueOfInt32(int32(nanos)))
		return
	}
	fill(rng, m, depth)
}

// scalar is a random value of fd's kind, edge cases included.
func scalar(rng *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		parts := []string{"", "a", "tdb_1748795c1f2a_w1", `quote " back \ slash`, "tab\tnew\nline\r", "\x00\x01\x1f\x7f", "ünïcödé ✓ 🎉", "<html>&", "\u2028\u2029"}
		var b strings.Builder
		for n := rng.IntN(3); n >= 0; n-- {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		return protoreflect.ValueOfString(b.String())
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(rng.IntN(2) == 0)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if rng.IntN(10) == 0 {
			return protoreflect.ValueOfEnum(999) // a number with no name
		}
		return protoreflect.ValueOfEnum(vals.Get(rng.IntN(vals.Len())).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32([]int32{0, -1, math.MinInt32, math.MaxInt32, rng.Int32()}[rng.IntN(5)])
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32([]uint32{0, 1, math.MaxUint32, rng.Uint32()}[rng.IntN(4)])
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64([]int64{0, -1, math.MinInt64, math.MaxInt64, rng.Int64()}[rng.IntN(5)])
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64([]uint64{0, 1, math.MaxUint64, rng.Uint64()}[rng.IntN(4)])
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64([]float64{math.Copysign(0, -1), -0.5, 1e-7, 1e21, 3.25, rng.Float64() * 1e3, rng.NormFloat64() * 1e30, math.NaN(), math.Inf(-1)}[rng.IntN(9)])
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32([]float32{0, float32(math.Copysign(0, -1)), 1.5, 1e-7, 1e22, float32(math.NaN()),
			float32(math.Inf(1)), math.MaxFloat32, rng.Float32()}[rng.IntN(9)])
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{byte(rng.IntN(256))})
	}
	panic("kind " + fd.Kind().String())
}
