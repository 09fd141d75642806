package codec

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/warrenbus/warren/runtime/schemaset"
)

// The patterns the fast matcher takes, and some it must leave to the
// engine.
var simplePatterns = []string{
	`^C-[0-9]{6}$`, `^[0-9]{5}$`, `^[A-Z0-9]{3,12}(-[A-Z0-9]{2,6})?$`, `^[a-z][a-z0-9_]*$`,
	`^\d{4}-\d{2}-\d{2}$`, `^[A-Z]{2}\d{2}[A-Z0-9]{1,30}$`, `^a*a*b$`, `^(ab)?(a)?b+$`,
	`^[a-zA-Z0-9._%+-]+@[a-z]+$`, `^\w+\.\w{2,3}$`, `^x?$`, `^[-a]{2,}$`,
}

var notSimple = []string{
	`C-[0-9]{6}$`, `^C-[0-9]{6}`, `^a|b$`, `^.{3}$`, `^[^a]$`, `^(a(b)?)?$`, `^a{2,1}$`, `^\s$`, `^(ab)*$`, `^a+?$`, `^é$`, `^a\$`, `^[A-F0-9]{2}(:[A-F0-9]{2}){0}$`,
}

func TestSimplePatternsAgreeWithRegexp(t *testing.T) {
	alphabet := []byte("aAbBcCzZ09-_.:@%+xé\n")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, expr := range simplePatterns {
		m := compileSimple(expr)
		if m == nil {
			t.Errorf("%s: not taken", expr)
			continue
		}
		re := regexp.MustCompile(expr)
		for range 20000 {
			b := make([]byte, rng.IntN(16))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			s := string(b)
			ok, sure := m.match(s)
			if !sure {
				continue
			}
			if want := re.MatchString(s); ok != want {
				t.Fatalf("%s on %q: %v, regexp says %v", expr, s, ok, want)
			}
		}
	}
	for _, s := range []string{"C-123456", "ABC-12", "ABC12345", "AB-12"} {
		for _, expr := range simplePatterns[:3] {
			ok, _ := compileSimple(expr).match(s)
			if ok != regexp.MustCompile(expr).MatchString(s) {
				t.Errorf("%s on %q: %v", expr, s, ok)
			}
		}
	}
}

func TestSimplePatternsLeaveTheRestToTheEngine(t *testing.T) {
	for _, expr := range notSimple {
		if compileSimple(expr) != nil {
			t.Errorf("%s: taken", expr)
		}
	}
}

// A match that backtracks too much is left to the engine, not guessed.
func TestSimplePatternBudget(t *testing.T) {
	m := compileSimple(`^a*a*a*a*a*b$`)
	s := ""
	for range 200 {
		s += "a"
	}
	if _, sure := m.match(s); sure {
		t.Error("a match past the budget claimed to be sure")
	}
}

// BenchmarkSimplePattern compares a pattern of identifiers on the fast
// matcher with the same pattern on the regular-expression engine.
func BenchmarkSimplePattern(b *testing.B) {
	const expr, s = `^[A-Z0-9]{3,12}(-[A-Z0-9]{2,6})?$`, "BOOK-0042"
	fast := Regexp(expr)
	engine := Regexp(expr)
	engine.compiled()
	engine.fast = nil
	for name, p := range map[string]*Pattern{"fast": fast, "engine": engine} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := p.Check(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// isUUID accepts only what the reference's uuid check accepts.
func TestUUIDAgreesWithTheReference(t *testing.T) {
	ref := schemaset.FormatChecker("uuid")
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("0123456789abcdefABCDEFgG-é")
	cases := []string{"", "123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567e89b-12d3-a456-426614174000-", "123e4567-e89b-12d3-a456-42661417400g"}
	for range 50000 {
		b := []byte("123e4567-e89b-12d3-a456-426614174000")
		for range rng.IntN(3) {
			b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := isUUID(s), ref(s) == nil; got != want {
			t.Fatalf("%q: isUUID %v, reference %v", s, got, want)
		}
	}
}
