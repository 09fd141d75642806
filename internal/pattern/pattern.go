// Package pattern compiles and matches the regular expressions of JSON
// Schema ("pattern", "patternProperties", format "regex"), which are
// ECMA-262 regular expressions, with one engine chosen per pattern:
//
//   - Go's regexp (RE2: linear time, no backtracking) when the pattern
//     uses only constructs that it can express with the same meaning. Such
//     a pattern is first translated, because some ECMA-262 constructs mean
//     something else in Go's syntax: ECMA-262's "." does not match "\r",
//     U+2028 or U+2029, and its "\s" takes in Unicode spaces.
//   - github.com/dlclark/regexp2 in ECMAScript|Unicode mode (the "u" flag,
//     as JSON Schema asks) for everything else: lookahead and lookbehind,
//     backreferences, "\u" and "\c" escapes, "[^]", "\S" inside a class.
//     It backtracks, so every match is bounded by [MatchTimeout].
//   - Go's regexp, untranslated, for a pattern that regexp2 refuses and
//     Go's syntax accepts ("\pL", an octal escape "\012", "[\d-z]"): warren
//     read patterns with Go's regexp before regexp2 came in, and a schema
//     that worked then keeps its meaning.
//
// The choice depends on the pattern text alone, so the generator (which
// checks every pattern when it loads a schema), the code it generates and
// the reference validator all make the same one.
//
// It lives outside runtime/codec and runtime/schemaset because both use
// it, and codec already imports schemaset.
package pattern

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// MatchTimeout bounds one match of a pattern run by regexp2. A match that
// takes longer (catastrophic backtracking, as in "^(a+)+$" on a long run of
// "a"s followed by "b") is stopped and reported as [ErrTimeout]; callers
// count it as a failed validation. regexp2 checks its deadline with a clock
// that ticks every 100ms, so a stopped match takes between 100ms and about
// 200ms. Patterns run by Go's regexp need no bound: RE2 matches in time
// linear in the input.
const MatchTimeout = 100 * time.Millisecond

// ErrTimeout is the cause of a match that regexp2 gave up on: it took
// longer than [MatchTimeout], or needed more backtracking stack than
// regexp2 allows (its default, 100,000 entries).
var ErrTimeout = errors.New("the match was stopped: it ran past the " + MatchTimeout.String() + " limit or backtracked too deeply (a guard against catastrophic backtracking)")

// Engine says which engine runs a compiled pattern.
type Engine int

const (
	// RE2 is Go's regexp, on the pattern translated to Go's syntax.
	RE2 Engine = iota
	// ECMAScript is regexp2 in ECMAScript|Unicode mode.
	ECMAScript
	// GoSyntax is Go's regexp on a pattern that regexp2 refuses.
	GoSyntax
)

func (e Engine) String() string {
	switch e {
	case RE2:
		return "RE2"
	case ECMAScript:
		return "ECMAScript"
	case GoSyntax:
		return "Go syntax"
	}
	return "Engine(" + strconv.Itoa(int(e)) + ")"
}

// Regexp is a compiled pattern. It is safe for concurrent use.
type Regexp struct {
	expr   string
	engine Engine
	re2    *regexp.Regexp  // RE2 and GoSyntax
	ecma   *regexp2.Regexp // ECMAScript
}

// Compile compiles expr, choosing its engine. The error of a pattern that
// neither engine accepts is regexp2's, which speaks of ECMA-262 syntax.
func Compile(expr string) (*Regexp, error) {
	ecma, ecmaErr := regexp2.Compile(expr, regexp2.ECMAScript|regexp2.Unicode)
	if ecmaErr == nil {
		if translated, ok := toRE2(expr); ok {
			if re, err := regexp.Compile(translated); err == nil {
				return &Regexp{expr: expr, engine: RE2, re2: re}, nil
			}
			// Go refuses what translates (a repeat count over 1000):
			// regexp2 takes it.
		}
		ecma.MatchTimeout = MatchTimeout
		return &Regexp{expr: expr, engine: ECMAScript, ecma: ecma}, nil
	}
	if re, err := regexp.Compile(expr); err == nil {
		return &Regexp{expr: expr, engine: GoSyntax, re2: re}, nil
	}
	return nil, ecmaErr
}

// String returns the pattern as written.
func (r *Regexp) String() string { return r.expr }

// Engine returns the engine that runs r.
func (r *Regexp) Engine() Engine { return r.engine }

// Match reports whether s contains a match of r (patterns are not
// anchored). Its error wraps [ErrTimeout]: the match was given up, and
// the value is neither known to match nor known not to.
func (r *Regexp) Match(s string) (bool, error) {
	if r.ecma == nil {
		return r.re2.MatchString(s), nil
	}
	ok, err := r.ecma.MatchString(s)
	if err != nil {
		// regexp2's own message quotes the whole input, which can be
		// large and is the sender's: say what happened, not what it was.
		return false, fmt.Errorf("pattern %s: %w", strconv.Quote(r.expr), ErrTimeout)
	}
	return ok, nil
}
