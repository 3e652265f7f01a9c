package client

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestFuncPackage(t *testing.T) {
	for fn, want := range map[string]string{
		"example.com/app/store.TestSignup":         "example.com/app/store",
		"example.com/app/store_test.TestX.func1":   "example.com/app/store_test",
		"main.main":                                "main",
		"gopkg.in/yaml.v3.Unmarshal":               "gopkg.in/yaml",
		"github.com/a/b/c.(*T).Method":             "github.com/a/b/c",
		"noDotAtAll":                               "",
		"github.com/testdbd/testdbd/client.herePC": thisPackage,
	} {
		if got := funcPackage(fn); got != want {
			t.Errorf("funcPackage(%q) = %q, want %q", fn, got, want)
		}
	}
}

func TestWorkerKey(t *testing.T) {
	short := "go:example.com/app"
	if workerKey(short) != short {
		t.Error("a short key changed")
	}
	long := "go:" + strings.Repeat("segment/", 40) + "end"
	k := workerKey(long)
	if len(k) > 128 || !strings.HasSuffix(k, "segment/end") || !strings.HasPrefix(k, "go:") {
		t.Errorf("workerKey(long) = %q (%d bytes)", k, len(k))
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int32{0: 0, -time.Second: 0, time.Millisecond: 1, time.Second: 1, 1500 * time.Millisecond: 2, 10 * time.Minute: 600} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestDecodeError(t *testing.T) {
	err := decodeError(429, []byte(`{"code":8,"message":"no database of template app became free","details":[]}`))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeResourceExhausted || e.Status != 429 || e.Error() != "no database of template app became free" {
		t.Errorf("status body: %#v", err)
	}
	err = decodeError(504, nil)
	if ErrorCode(err) != CodeDeadlineExceeded || !strings.Contains(err.Error(), "Gateway Timeout") {
		t.Errorf("empty body: %v", err)
	}
	err = decodeError(500, []byte(strings.Repeat("x", 1000)))
	if len(err.Error()) > 400 {
		t.Errorf("a long body is not cut: %d bytes", len(err.Error()))
	}
	if ErrorCode(nil) != CodeOK || ErrorCode(errors.New("x")) != CodeUnknown {
		t.Error("ErrorCode of nil or a plain error")
	}
	if CodeNotFound.String() != "NotFound" || Code(99).String() != "Code(99)" {
		t.Error("Code.String")
	}
}
