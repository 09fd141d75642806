package codec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime/codec"
)

// Ordinary patterns keep Go's regexp (RE2, linear time); a pattern with
// lookaround runs on regexp2.
func TestPatternChoosesItsEngine(t *testing.T) {
	for expr, want := range map[string]string{
		`^[a-z]+$`:                   "RE2",
		`^ORD-\d{6}$`:                "RE2",
		`^\S+@\S+$`:                  "RE2",
		`^(?!x)`:                     "ECMAScript",
		`^(?!lucene\.).*`:            "ECMAScript",
		`^(?<major>\d+)\.\k<major>$`: "ECMAScript",
	} {
		got, err := codec.PatternEngine(codec.Regexp(expr))
		if err != nil || got != want {
			t.Errorf("%q runs on %q (%v), want %q", expr, got, err, want)
		}
	}
}

func TestPatternCheckAndMatch(t *testing.T) {
	p := codec.Regexp(`^(?!lucene\.)[a-z.]+$`)
	if err := p.Check("solr.core"); err != nil {
		t.Errorf("Check(solr.core) = %v", err)
	}
	err := p.Check("lucene.core")
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Expected != `a string matching "^(?!lucene\\.)[a-z.]+$"` {
		t.Errorf("Check(lucene.core) = %v", err)
	}
	if ok, err := p.Match("lucene.core"); ok || err != nil {
		t.Errorf("Match(lucene.core) = %v, %v", ok, err)
	}
	if ok, err := codec.Regexp(`^\s$`).Match("\u00a0"); !ok || err != nil {
		t.Errorf(`^\s$ on a no-break space = %v, %v; ECMA-262's \s takes in Unicode spaces`, ok, err)
	}
	if err := codec.Regexp(`^(abc`).Check("abc"); err == nil || !strings.Contains(err.Error(), "compiles") {
		t.Errorf("a pattern that does not compile: %v", err)
	}
}

// A match that backtracks catastrophically is stopped, and the value is
// refused with an error that says so.
func TestPatternTimeoutFailsTheCheck(t *testing.T) {
	p := codec.Regexp(`^(?!x)(a+)+$`)
	err := codec.AtField(p.Check(strings.Repeat("a", 40)+"!"), "name")
	var ce *codec.Error
	if !errors.Is(err, codec.ErrPatternTimeout) || !errors.As(err, &ce) || ce.Pointer != "/name" {
		t.Fatalf("Check = %v, want an *Error at /name wrapping ErrPatternTimeout", err)
	}
	if !strings.Contains(err.Error(), "stopped") {
		t.Errorf("the message does not say the match was stopped: %v", err)
	}
}

// BenchmarkPattern runs one ordinary pattern on each engine. RE2 is kept
// for its linear time (no pattern can make it backtrack, so it needs no
// timeout), not for speed: on short strings regexp2 is as fast.
func BenchmarkPattern(b *testing.B) {
	for _, expr := range []string{`^[a-z]+(-[a-z]+)*$`, `^(?!x-)[a-z]+(-[a-z]+)*$`} {
		p := codec.Regexp(expr)
		engine, _ := codec.PatternEngine(p)
		b.Run(engine, func(b *testing.B) {
			for b.Loop() {
				if err := p.Check("search-indexer-primary"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
