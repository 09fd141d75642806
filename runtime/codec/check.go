package codec

import (
	"math/big"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/internal/pattern"
	"github.com/warrenbus/warren/runtime/schemaset"
)

// The rules of one value beyond its Go type, as generated code declares
// them once per property: var checkOrderID = codec.String{MinLength: 1,
// MaxLength: 64, Pattern: codec.Regexp(`^ORD-`)}.

// String checks a string: that it is valid UTF-8 (see [CheckText]), its
// length in code points (as JSON Schema counts), a pattern and an
// asserted format.
type String struct {
	MinLength int      // 0: no minimum
	MaxLength int      // -1: no maximum
	Pattern   *Pattern // nil: none
	Format    *Format  // nil: none asserted
	Enum      *Enum    // nil: none
}

// Check checks s.
func (c *String) Check(s string) error {
	if err := CheckText(s); err != nil {
		return err
	}
	return c.rules(s)
}

// rules checks s, known to be valid UTF-8 (the runtime refuses a body
// that is not before decoding it), against the rules.
func (c *String) rules(s string) error {
	// A string has no more code points than bytes: one no longer in bytes
	// than MaxLength needs no count when MinLength is 0.
	if c.MinLength > 0 || c.MaxLength >= 0 && len(s) > c.MaxLength {
		n := utf8.RuneCountInString(s)
		if n < c.MinLength {
			return Expect("at least " + plural(c.MinLength, "character"))
		}
		if c.MaxLength >= 0 && n > c.MaxLength {
			return Expect("at most " + plural(c.MaxLength, "character"))
		}
	}
	if c.Pattern != nil {
		if err := c.Pattern.Check(s); err != nil {
			return err
		}
	}
	if c.Format != nil {
		if err := c.Format.Check(s); err != nil {
			return err
		}
	}
	if c.Enum != nil {
		return c.Enum.check(strconv.Quote(s))
	}
	return nil
}

// Str reads a string and checks it.
func (c *String) Str(d *jx.Decoder) (string, error) {
	s, err := Str(d)
	if err != nil {
		return s, err
	}
	return s, c.rules(s)
}

// Time reads a date-time, checking its text first: an asserted
// date-time format is stricter than Go's RFC 3339 parser (a one-digit
// hour). A time.Time built in Go writes valid text when [CheckTime]
// accepts it.
func (c *String) Time(d *jx.Decoder) (time.Time, error) {
	s, err := Str(d)
	if err != nil {
		return time.Time{}, err
	}
	if err := c.rules(s); err != nil {
		return time.Time{}, err
	}
	return parseDateTime(s)
}

// Pattern is a JSON Schema regular expression ("pattern", or a key of
// "patternProperties"): ECMA-262 syntax and meaning, compiled on first use
// by the engine it needs, the same one the reference validator
// (runtime/schemaset) uses for it. Most patterns run on Go's regexp;
// those that need lookaround, backreferences or other ECMA-262 constructs
// it lacks run on a backtracking engine, each match bounded in time: a
// match given up there is an error wrapping [ErrPatternTimeout], which
// validation counts as a failure.
type Pattern struct {
	expr string
	once sync.Once
	re   *pattern.Regexp
	err  error
	// fast matches the anchored runs of ASCII classes most patterns of
	// identifiers are without the engine (see compileSimple); nil for
	// any other pattern.
	fast *simple
}

// ErrPatternTimeout is the cause of a failed check whose match was
// stopped (catastrophic backtracking): find it with errors.Is.
var ErrPatternTimeout = pattern.ErrTimeout

// Regexp returns the pattern expr. Generated code declares one per
// pattern, as a package-level variable.
func Regexp(expr string) *Pattern { return &Pattern{expr: expr} }

func (p *Pattern) compiled() (*pattern.Regexp, error) {
	p.once.Do(func() {
		p.re, p.err = pattern.Compile(p.expr)
		if p.err == nil {
			p.fast = compileSimple(p.expr)
		}
	})
	return p.re, p.err
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.expr }

// Match reports whether s contains a match (patterns are not anchored),
// as patternProperties asks of a property name. An error means the
// pattern does not compile (the generator refuses such schemas) or the
// match was stopped; either way s must be refused.
func (p *Pattern) Match(s string) (bool, error) {
	re, err := p.compiled()
	if err != nil {
		return false, Wrap(err, "a schema whose pattern "+strconv.Quote(p.expr)+" compiles")
	}
	if p.fast != nil {
		if ok, sure := p.fast.match(s); sure {
			return ok, nil
		}
	}
	ok, err := re.Match(s)
	if err != nil {
		return false, Wrap(err, "a string matching "+strconv.Quote(p.expr))
	}
	return ok, nil
}

// Check checks that s matches.
func (p *Pattern) Check(s string) error {
	ok, err := p.Match(s)
	if err != nil {
		return err
	}
	if !ok {
		return Expect("a string matching " + strconv.Quote(p.expr))
	}
	return nil
}

// Format is an asserted "format", checked by the same code the reference
// validator uses for it (runtime/schemaset).
type Format struct {
	name  string
	check func(string) error
	// valid accepts, without the reference's check, a string that check
	// accepts; what it does not accept goes to check, which decides and
	// says why (format.go). nil for the other formats.
	valid func(string) bool
}

// FormatOf returns the check of the format name.
func FormatOf(name string) *Format {
	return &Format{name: name, check: schemaset.FormatChecker(name), valid: natives[name]}
}

// Check checks s.
func (f *Format) Check(s string) error {
	if f.valid != nil && f.valid(s) {
		return nil
	}
	if err := f.check(s); err != nil {
		return Wrap(err, "a valid "+f.name)
	}
	return nil
}

// Int checks an integer: Min <= v <= Max (exclusive bounds are made
// inclusive by the generator) and a multiple of MultipleOf.
type Int struct {
	Min, Max   int64
	MultipleOf int64 // 0: none
}

// Check checks v.
func (c *Int) Check(v int64) error {
	if v < c.Min {
		return Expect("at least " + strconv.FormatInt(c.Min, 10))
	}
	if v > c.Max {
		return Expect("at most " + strconv.FormatInt(c.Max, 10))
	}
	if c.MultipleOf != 0 && v%c.MultipleOf != 0 {
		return Expect("a multiple of " + strconv.FormatInt(c.MultipleOf, 10))
	}
	return nil
}

// Int reads an integer and checks it.
func (c *Int) Int(d *jx.Decoder) (int64, error) {
	v, err := Int64(d)
	if err != nil {
		return v, err
	}
	return v, c.Check(v)
}

// Float checks a number: that JSON can hold it (see [CheckFloat]), its
// bounds, multipleOf and enum.
type Float struct {
	Min, Max                   float64 // math.Inf for none
	ExclusiveMin, ExclusiveMax bool
	MultipleOf                 *big.Rat // nil: none
	Enum                       *Enum    // nil: none
}

// Check checks v.
func (c *Float) Check(v float64) error {
	if err := CheckFloat(v); err != nil {
		return err
	}
	switch {
	case c.ExclusiveMin && v <= c.Min:
		return Expect("more than " + formatFloat(c.Min))
	case v < c.Min:
		return Expect("at least " + formatFloat(c.Min))
	case c.ExclusiveMax && v >= c.Max:
		return Expect("less than " + formatFloat(c.Max))
	case v > c.Max:
		return Expect("at most " + formatFloat(c.Max))
	}
	if c.MultipleOf != nil {
		// The shortest decimal that reads back as v: the text of the
		// number as it was written, unless it had more digits than a
		// float64 holds.
		r, _ := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
		if !r.Quo(r, c.MultipleOf).IsInt() {
			return Expect("a multiple of " + c.MultipleOf.RatString())
		}
	}
	if c.Enum != nil {
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
		if !ok {
			return Expect(c.Enum.shown)
		}
		return c.Enum.check(r.RatString())
	}
	return nil
}

// Float reads a number and checks it.
func (c *Float) Float(d *jx.Decoder) (float64, error) {
	v, err := Float64(d)
	if err != nil {
		return v, err
	}
	return v, c.Check(v)
}

// Rat returns the exact value of a decimal literal, for Float.MultipleOf.
func Rat(decimal string) *big.Rat {
	r, ok := new(big.Rat).SetString(decimal)
	if !ok {
		panic("codec: " + decimal + " is not a number") // generated code writes literals
	}
	return r
}

// Array checks the number of items and, with Unique, that no two are the
// same JSON value.
type Array struct {
	MinItems int // 0: no minimum
	MaxItems int // -1: no maximum
	Unique   bool
}

// Check checks an array of n items; key returns the canonical JSON of
// item i (used only when Unique is set; nil: uniqueness is checked by the
// caller).
func (c *Array) Check(n int, key func(i int) string) error {
	if n < c.MinItems {
		return Expect("at least " + plural(c.MinItems, "item"))
	}
	if c.MaxItems >= 0 && n > c.MaxItems {
		return Expect("at most " + plural(c.MaxItems, "item"))
	}
	if c.Unique && n > 1 && key != nil {
		seen := make(map[string]int, n)
		for i := range n {
			k := key(i)
			if j, dup := seen[k]; dup {
				return Expect("unique items; items " + strconv.Itoa(j) + " and " + strconv.Itoa(i) + " are equal")
			}
			seen[k] = i
		}
	}
	return nil
}

// Items checks a slice, with enc writing an item's JSON for uniqueness.
func Items[T any](c *Array, items []T, enc func(*jx.Encoder, T)) error {
	return c.Check(len(items), func(i int) string {
		var e jx.Encoder
		enc(&e, items[i])
		return canonical(e.Bytes())
	})
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Each checks every item of a slice with check, naming the failing index.
func Each[T any](items []T, check func(T) error) error {
	for i, x := range items {
		if err := check(x); err != nil {
			return AtIndex(err, i)
		}
	}
	return nil
}

// EachValue checks every value of a map with check, naming the member,
// and that its keys are valid UTF-8 (see [CheckNames]).
func EachValue[T any](m map[string]T, check func(T) error) error {
	for k, x := range m {
		if err := checkName(k); err != nil {
			return err
		}
		if err := check(x); err != nil {
			return AtField(err, k)
		}
	}
	return nil
}

// CountSet counts the true values: the branches of a union that are set.
func CountSet(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}
