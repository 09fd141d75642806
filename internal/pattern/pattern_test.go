package pattern

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// Ordinary patterns keep Go's regexp; only those that need it run on the
// backtracking engine.
func TestEngineChoice(t *testing.T) {
	for _, c := range []struct {
		expr string
		want Engine
	}{
		{`^[a-z]+$`, RE2},
		{`^\d{4}-\d{2}-\d{2}$`, RE2},
		{`^(?<major>\d+)\.(?<minor>\d+)$`, RE2},
		{`^.+@.+\..+$`, RE2},
		{`^\S+$`, RE2},
		{`^[^\s]+$`, RE2},
		{`^[A-Z]{2}\u00c9?$`, RE2},
		{`^\ud83d\udc32*$`, RE2},
		{`^(a+)+$`, RE2}, // a ReDoS pattern for a backtracking engine, linear in RE2
		{`^(?!x)`, ECMAScript},
		{`^(?!lucene\.).*`, ECMAScript},
		{`(?<=@)example\.com$`, ECMAScript},
		{`^(a)\1$`, ECMAScript},
		{`\p{Letter}cole`, ECMAScript},
		{`^\cC$`, RE2},
		{`[^]`, ECMAScript},
		{`a{1001}`, ECMAScript}, // Go's regexp allows at most 1000
		{`\pL`, GoSyntax},
		{`[\d-z]`, GoSyntax},
	} {
		re, err := Compile(c.expr)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.expr, err)
			continue
		}
		if re.Engine() != c.want {
			t.Errorf("Compile(%q) runs on %v, want %v", c.expr, re.Engine(), c.want)
		}
		if re.String() != c.expr {
			t.Errorf("String() = %q, want %q", re.String(), c.expr)
		}
	}
}

func TestInvalidPatternsAreRefused(t *testing.T) {
	for _, expr := range []string{`^(abc`, `^(abc]`, `(?<=`, `a**`, `[b-a]`} {
		if re, err := Compile(expr); err == nil {
			t.Errorf("Compile(%q) = %v engine, want an error", expr, re.Engine())
		}
	}
}

// The cases of the JSON Schema Test Suite's optional/ecmascript-regex.json
// and non-bmp-regex.json, on whichever engine each pattern gets.
func TestECMAScriptSemantics(t *testing.T) {
	for _, c := range []struct {
		expr  string
		match []string
		not   []string
	}{
		{`^abc$`, []string{"abc"}, []string{"abc\n"}},
		{`^\t$`, []string{"\t"}, []string{`\t`}},
		{`^\cC$`, []string{"\x03"}, []string{`\cC`}},
		{`^\cc$`, []string{"\x03"}, []string{`\cc`}},
		{`^\d$`, []string{"0"}, []string{"\u07c0"}},
		{`^\D$`, []string{"\u07c0"}, []string{"0"}},
		{`^\w$`, []string{"a"}, []string{"\u00e9"}},
		{`^\W$`, []string{"\u00e9"}, []string{"a"}},
		{`^\s$`, []string{" ", "\t", "\v", "\f", "\u00a0", "\ufeff", "\n", "\u2029", "\u2003"}, []string{"\x01", "\u2013"}},
		{`^\S$`, []string{"\x01", "\u2013"}, []string{" ", "\t", "\v", "\f", "\u00a0", "\ufeff", "\n", "\u2029", "\u2003"}},
		{`\p{Letter}cole`, []string{"l'ecole", "l'\u00e9cole"}, []string{"L'\u00c9COLE"}},
		{`\wcole`, []string{"l'ecole"}, []string{"l'\u00e9cole", "L'\u00c9COLE"}},
		{`[a-z]cole`, []string{"l'ecole"}, []string{"l'\u00e9cole"}},
		{`^\d+$`, []string{"42"}, []string{"-%#", "\u09ea\u09e8"}},
		{`^\p{digit}+$`, []string{"42", "\u09ea\u09e8"}, []string{"-%#"}},
		{`^\ud83d\udc32*$`, []string{"", "\U0001F432", "\U0001F432\U0001F432"}, []string{"\U0001F409", "D", "DD"}},
		{"^\U0001F432*$", []string{"", "\U0001F432\U0001F432"}, []string{"\U0001F409"}},
		{`^.$`, []string{"a", "\U0001F432"}, []string{"\n", "\r", "\u2028", "\u2029"}},
		{`^(?!lucene\.).*`, []string{"solr.x", "lucene"}, []string{"lucene.x"}},
		{`^(?<major>\d+)\.(?<minor>\d+)$`, []string{"1.22"}, []string{"1.x"}},
	} {
		re, err := Compile(c.expr)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.expr, err)
			continue
		}
		for _, s := range c.match {
			if ok, err := re.Match(s); !ok || err != nil {
				t.Errorf("%q (%v) on %q = %v, %v; want a match", c.expr, re.Engine(), s, ok, err)
			}
		}
		for _, s := range c.not {
			if ok, err := re.Match(s); ok || err != nil {
				t.Errorf("%q (%v) on %q = %v, %v; want no match", c.expr, re.Engine(), s, ok, err)
			}
		}
	}
}

func TestCatastrophicBacktrackingIsStopped(t *testing.T) {
	re, err := Compile(`^(?!x)(a+)+$`)
	if err != nil || re.Engine() != ECMAScript {
		t.Fatalf("Compile: %v, %v", re, err)
	}
	input := strings.Repeat("a", 40) + "!"
	start := time.Now()
	ok, err := re.Match(input)
	if ok || !errors.Is(err, ErrTimeout) {
		t.Fatalf("Match = %v, %v; want ErrTimeout", ok, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the match was stopped after %v", took)
	}
	if strings.Contains(err.Error(), input) {
		t.Errorf("the error quotes the input: %v", err)
	}
}

// Each construct that toRE2 rewrites means the same, on every character,
// as it does to regexp2.
func TestTranslationAgreesOnEveryCharacter(t *testing.T) {
	exprs := []string{`^.$`, `^\s$`, `^\S$`, `^[\s]$`, `^[^\s]$`, `^[\S]$`, `^[^\S]$`, `^[\sa]$`, `^\w$`, `^\W$`, `^\d$`, `^\D$`, `^[^a-z\d]$`, `^[\b]$`, `\b`, `\B`}
	if testing.Short() {
		exprs = exprs[:3]
	}
	for _, expr := range exprs {
		re, err := Compile(expr)
		if err != nil || re.Engine() != RE2 {
			t.Fatalf("Compile(%q): %v, %v", expr, re, err)
		}
		ecma := regexp2.MustCompile(expr, regexp2.ECMAScript|regexp2.Unicode)
		for r := rune(0); r <= utf8.MaxRune; r++ {
			if r >= 0xd800 && r <= 0xdfff || r > 0xffff && r%61 != 0 {
				continue // surrogates are no characters; above the BMP, a sample
			}
			s := string(r)
			got, _ := re.Match(s)
			want, _ := ecma.MatchString(s)
			if got != want {
				t.Errorf("%q on U+%04X: RE2 translation says %v, regexp2 %v", expr, r, got, want)
			}
		}
	}
}
