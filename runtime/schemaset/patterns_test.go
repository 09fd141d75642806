package schemaset

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

var patternFiles = map[string]string{
	"index.json": `{"type": "object",
		"properties": {"name": {"type": "string", "pattern": "^(?!lucene\\.)[a-z.]+$"}},
		"patternProperties": {"^(?!x-).+_n$": {"type": "integer"}}}`,
	"slow.json": `{"type": "object",
		"properties": {"name": {"type": "string", "pattern": "^(?!x)(a+)+$"}},
		"patternProperties": {"^(?!x)(b+)+$": {"type": "integer"}}}`,
	"regex.json": `{"type": "string", "format": "regex"}`,
}

// The reference validator reads patterns as generated code does: ECMA-262,
// lookaround included, for "pattern" and "patternProperties" alike.
func TestReferenceReadsECMAScriptPatterns(t *testing.T) {
	s := New(patternFiles)
	for doc, valid := range map[string]bool{
		`{"name": "solr.core"}`:   true,
		`{"name": "lucene.core"}`: false,
		`{"size_n": 3}`:           true,
		`{"size_n": "3"}`:         false, // the key matches: its value must be an integer
		`{"x-size_n": "3"}`:       true,  // the lookahead keeps it out
	} {
		err := s.Validate("index.json", []byte(doc))
		if (err == nil) != valid {
			t.Errorf("%s: %v, want valid=%v", doc, err, valid)
		}
	}
}

// A stopped match is a failure: of "pattern" (whose match answers false
// anyway), and of a patternProperties key, which "not matched" would
// otherwise let through unchecked.
func TestStoppedMatchFailsValidation(t *testing.T) {
	s := New(patternFiles)
	slow := strings.Repeat("a", 40) + "!"
	slowKey := strings.Repeat("b", 40) + "!"
	for doc, at := range map[string]string{
		`{"name": "` + slow + `"}`:          "/name",
		`{"` + slowKey + `": "not an int"}`: "/" + slowKey,
	} {
		err := s.Validate("slow.json", []byte(doc))
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) == 0 {
			t.Fatalf("%.20s...: %v, want a *ValidationError", doc, err)
		}
		p := ve.Problems[0]
		if p.Pointer != at || !strings.Contains(p.Message, "was stopped") || !strings.Contains(p.Message, "(?!x)") {
			t.Errorf("%.20s...: first problem %+v, want one at %s naming the pattern", doc, p, at)
		}
	}
	// Another document, validated while a match is stopped, is judged on
	// its own strings.
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.Validate("slow.json", []byte(`{"name": "`+slow+`"}`)) })
	for range 20 {
		if err := s.Validate("slow.json", []byte(`{"name": "aaa", "bbb": 1}`)); err != nil {
			t.Errorf("a valid document beside a stopped match: %v", err)
		}
	}
	wg.Wait()
}

func TestFormatRegexIsECMAScript(t *testing.T) {
	s := New(patternFiles)
	check := FormatChecker("regex")
	for expr, valid := range map[string]bool{`^(?!x)`: true, `(?<=a)b`: true, `^[a-z]+$`: true, `^(abc]`: false} {
		if err := check(expr); (err == nil) != valid {
			t.Errorf("FormatChecker(regex)(%q) = %v, want valid=%v", expr, err, valid)
		}
		doc := `"` + strings.ReplaceAll(expr, `\`, `\\`) + `"`
		if err := s.Validate("regex.json", []byte(doc)); (err == nil) != valid {
			t.Errorf("format regex on %s: %v, want valid=%v", doc, err, valid)
		}
	}
}
