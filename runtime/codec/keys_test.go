package codec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
)

func TestKeysAdmitNamesMatchingAPattern(t *testing.T) {
	k := codec.Keys{Patterns: []*codec.Pattern{codec.Regexp(`^x-`), codec.Regexp(`\.json$`)}}
	for name, ok := range map[string]bool{"x-a": true, "a.json": true, "ax-": false, "": false, "json": false} {
		if err := k.Check(name); (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want ok=%v", name, err, ok)
		}
	}
	m, err := codec.PatternMap(jx.DecodeStr(`{"x-a": 1, "b.json": 2}`), &k, codec.Int64)
	if err != nil || len(m) != 2 || m["x-a"] != 1 {
		t.Fatalf("PatternMap = %v, %v", m, err)
	}
	_, err = codec.PatternMap(jx.DecodeStr(`{"x-a": 1, "b": 2}`), &k, codec.Int64)
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Pointer != "/b" || !strings.Contains(ce.Expected, `"^x-" or "\\.json$"`) {
		t.Errorf("an unmatched name: %v", err)
	}
	if err := codec.CheckKeys(&k, map[string]int{"x-b": 1, "c": 2}); err == nil || !strings.HasPrefix(err.Error(), "/c: ") {
		t.Errorf("CheckKeys: %v", err)
	}
	var extra map[string]int64
	if err := codec.PatternExtra(jx.DecodeStr(`3`), []byte("x-c"), &k, &extra, codec.Int64); err != nil || extra["x-c"] != 3 {
		t.Errorf("PatternExtra = %v, %v", extra, err)
	}
}
