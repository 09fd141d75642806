package pattern

import (
	"regexp"
	"testing"

	"github.com/dlclark/regexp2/v2"
)

// FuzzTranslationAgrees checks that a pattern translated for Go's regexp
// matches the same strings as the pattern does on regexp2 in ECMAScript
// mode. The seeds run with every go test; go test ./internal/pattern
// -fuzz FuzzTranslationAgrees searches further.
func FuzzTranslationAgrees(f *testing.F) {
	for _, seed := range []struct{ expr, s string }{
		{`^[a-z]+$`, "abc"},
		{`^\d{4}-\d{2}$`, "2024-01"},
		{`^(?<y>\d+)\.(\d+)?$`, "1."},
		{`a.c`, "a\rc"},
		{`^\s*$`, "\u00a0\u2003"},
		{`[^\S\d]`, "\t"},
		{`^[\s\S]{2,3}?$`, "a\n"},
		{`x|y*|(?:z)+`, "zz"},
		{`^\x41\u0042\u{43}\0$`, "ABC\x00"},
		{`^[\u00e0-\u00ff]$`, "\u00e9"},
		{`\bfoo\B`, "foob"},
		{`^[\]\-\\]+$`, `]-\`},
		{`^\cJ$`, "\n"},
		{`^\/\.\*\+\?\(\)\[\]\{\}\|\^\$$`, `/.*+?()[]{}|^$`},
		{`^[-a]$`, "-"},
		{`^[a-]$`, "-"},
		{`^\ud83d\udc32$`, "\U0001F432"},
		{`$^`, ""},
	} {
		f.Add(seed.expr, seed.s)
	}
	f.Fuzz(func(t *testing.T, expr, s string) {
		translated, ok := toRE2(expr)
		if !ok {
			return
		}
		ecma, err := regexp2.Compile(expr, regexp2.ECMAScript|regexp2.Unicode)
		if err != nil {
			return // not ECMA-262: Compile never uses the translation
		}
		re, err := regexp.Compile(translated)
		if err != nil {
			return // Compile falls back to regexp2
		}
		ecma.MatchTimeout = MatchTimeout
		want, err := ecma.MatchString(s)
		if err != nil {
			return
		}
		if got := re.MatchString(s); got != want {
			t.Errorf("%q (as %q) on %q: Go's regexp says %v, regexp2 %v", expr, translated, s, got, want)
		}
	})
}
