package server

import (
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
)

// TestRESTDecodeIsProtojson: random request bodies for every message of
// the API, well-formed and not (escapes, invalid UTF-8, numbers out of
// range or with fractions, enum numbers and unknown names, unknown and
// repeated keys, null, trailing text), are read by restJSON into the same
// message as by protojson with the same options, or refused with the same
// error; and the bodies clients send take the fast path.
func TestRESTDecodeIsProtojson(t *testing.T) {
	fast := newRESTJSON()
	slow := newRESTJSON().JSONPb
	rng := rand.New(rand.NewPCG(3, 4))
	msgs := testdbv1.File_testdb_v1_testdb_proto.Messages()
	bodies, read, accepted := 0, 0, 0
	for i := 0; i < msgs.Len(); i++ {
		md := msgs.Get(i)
		for n := 0; n < 500; n++ {
			body := randomBody(rng, md)
			a, b := dynamicpb.NewMessage(md), dynamicpb.NewMessage(md)
			errA := fast.NewDecoder(strings.NewReader(body)).Decode(a)
			errB := slow.NewDecoder(strings.NewReader(body)).Decode(b)
			bodies++
			if errB == nil {
				accepted++
			}
			if readPlanOf(md).read([]byte(body), dynamicpb.NewMessage(md)) {
				read++
			}
			switch {
			case (errA == nil) != (errB == nil) || errA != nil && errA.Error() != errB.Error():
				t.Errorf("%s, body %q: restJSON: %v, protojson: %v", md.FullName(), body, errA, errB)
			case errA == nil && !proto.Equal(a, b):
				t.Errorf("%s, body %q: restJSON read %v, protojson %v", md.FullName(), body, a, b)
			}
		}
	}
	t.Logf("%d bodies, %d accepted by protojson, %d read by the fast path", bodies, accepted, read)
	if read < bodies/10 || read >= accepted {
		t.Errorf("the fast path read %d of %d bodies (%d accepted): the comparison tests too little of one path", read, bodies, accepted)
	}
	// What clients send is read without protojson.
	for _, c := range []struct {
		m    proto.Message
		body string
	}{
		{&testdbv1.AcquireLeaseRequest{}, `{"template":"app","strategy":"STRATEGY_SNAPSHOT","ttl_seconds":3600,"waitTimeoutMs":30000,"keep_auto_increment":false}`},
		{&testdbv1.ResetLeaseRequest{}, `{}`},
		{&testdbv1.ReleaseLeaseRequest{}, " {\n} "},
	} {
		if !readPlanOf(c.m.ProtoReflect().Descriptor()).read([]byte(c.body), c.m.ProtoReflect()) {
			t.Errorf("%s %s went to protojson", c.m.ProtoReflect().Descriptor().FullName(), c.body)
		}
	}
}

// randomBody writes a request body for md: mostly an object of md's
// fields, with the forms protojson accepts and refuses mixed in.
func randomBody(rng *rand.Rand, md protoreflect.MessageDescriptor) string {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	ws := func() string { return pick("", "", "", " ", "\n\t", "\r\n ") }
	switch rng.IntN(50) {
	case 0:
		return ""
	case 1:
		return pick("[]", `"x"`, "null", "1", "{", `{"`, `{"template"`, `{"template":`, "{,}", `{"a":1,}`)
	}
	fds := md.Fields()
	var keys []string
	var b strings.Builder
	b.WriteString(ws() + "{")
	for n := rng.IntN(5); n > 0 && fds.Len() > 0; n-- {
		fd := fds.Get(rng.IntN(fds.Len()))
		key := pick(fd.JSONName(), fd.TextName())
		switch rng.IntN(25) {
		case 0:
			key = pick("unknown", "Template", "tem\\u0070late", "")
		case 1:
			if len(keys) > 0 {
				key = keys[rng.IntN(len(keys))]
			}
		}
		if len(keys) > 0 {
			b.WriteString(ws() + ",")
		}
		keys = append(keys, key)
		b.WriteString(ws() + `"` + key + `"` + ws() + ":" + ws() + randomValue(rng, fd, pick))
	}
	b.WriteString(ws() + "}" + ws())
	if rng.IntN(15) == 0 {
		b.WriteString(pick("x", "{}", ",", "null", "\x00"))
	}
	return b.String()
}

// randomValue is a JSON value for fd, often one protojson refuses.
func randomValue(rng *rand.Rand, fd protoreflect.FieldDescriptor, pick func(...string) string) string {
	if rng.IntN(12) == 0 {
		return pick("null", "true", `"x"`, "1", "[]", "{}", "1.5", `"AQ=="`)
	}
	if fd.IsList() || fd.IsMap() {
		return pick("[]", "{}", `["a"]`, "[1]")
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return pick(`""`, `"app"`, `"tdb_1748795c1f2a_w1"`, `"ünïcödé ✓"`, `"a\"b"`, `"\u0041"`, "\"\xff\"", "\"tab\there\"", `"\/"`, `"a b"`)
	case protoreflect.BoolKind:
		return pick("true", "false", `"true"`, "1", "truex", "tru", "false ")
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		name := string(vals.Get(rng.IntN(vals.Len())).Name())
		return pick(`"`+name+`"`, `"`+name+`"`, `"`+strings.ToLower(name)+`"`, `"STRATEGY_BOGUS"`, "2", "999", "-1", `"`+name+`x"`)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return pick("0", "-0", "-1", "7", "3600", "01", "1.0", "1e2", "2147483647", "2147483648", "-2147483648", "-2147483649",
			"4294967295", "4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
			"18446744073709551615", "18446744073709551616", `"5"`, "1x", "--1", "-", "+1", "1 ")
	case protoreflect.MessageKind:
		return pick("{}", "null", `{"seconds":1}`, `"2026-12-04T00:00:00Z"`)
	}
	return pick("1.5", "0", `"AQ=="`, `"NaN"`, "-0.0")
}
