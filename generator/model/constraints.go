package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// The validation keywords that bound, divide, match or format a value are
// judged here, once, for two readers: the generator, which writes no cast
// between two versions of a fact whose newer schema accepts fewer values
// than the older (narrowedValues), and warren diff (generator/schemadiff),
// which files a change to one of them as constraint-tightened,
// constraint-loosened or constraint-changed. Both read the verdict and its
// words from [JudgeConstraint], so a change that diff calls tightened in
// place is one whose upcast is hand-written when it ships as a version.

// Narrowing says how the values a keyword accepts changed from an older
// schema to a newer one.
type Narrowing int

const (
	Same       Narrowing = iota // written alike, or alike in meaning (1 and 1.0)
	Annotation                  // written differently, accepting the same values: a format that nobody asserts
	Tightened                   // the newer accepts fewer values
	Loosened                    // the newer accepts more values
	Changed                     // each accepts values the other refuses
	Unjudged                    // a value the keyword does not take (a bound that is no number): which cannot be told
)

// Narrows reports whether a value the older schema accepts may fail the
// newer: what keeps a cast from being generated, and what diff calls
// breaking backward.
func (n Narrowing) Narrows() bool { return n == Tightened || n == Changed || n == Unjudged }

// Constraints are the keywords [JudgeConstraint] reads of one schema.
type Constraints struct {
	Minimum, Maximum *load.Bound // as the loader settled them, exclusive or not
	// Keywords are the schema's other keywords, of which the count bounds
	// (minLength, ...), multipleOf, pattern and uniqueItems are read.
	Keywords map[string]any
	Format   string
	// FormatAsserted says whether consumers check Format (see
	// [AssertedFormats]); otherwise it is an annotation.
	FormatAsserted bool
}

// writes reports whether the schema writes keyword kw.
func (c Constraints) writes(kw string) bool {
	switch kw {
	case "minimum":
		return c.Minimum != nil
	case "maximum":
		return c.Maximum != nil
	case "format":
		return c.Format != ""
	case "uniqueItems":
		return c.Keywords["uniqueItems"] == true
	}
	_, ok := c.Keywords[kw]
	return ok
}

// ConstraintChange is the judgement of one keyword.
type ConstraintChange struct {
	// Keyword is the keyword judged: "minimum" and "maximum" stand for
	// their exclusive forms too.
	Keyword   string
	Narrowing Narrowing
	What      string // what changed: "maxLength lowered from 300 to 10"; "" when Same
	// Why says what the change means for consumers, when What does not
	// ("arrays with repeated elements fail"); "" for nothing more.
	Why string
}

// CountBound is a keyword that bounds a length or a count.
type CountBound struct {
	Keyword string
	Lower   bool // a lower bound (minLength); else an upper one
}

// CountBounds are the keywords that bound a length or a count, from below
// (Lower) or above: raising a lower one accepts fewer values, lowering an
// upper one too.
var CountBounds = []CountBound{
	{"minLength", true}, {"maxLength", false},
	{"minItems", true}, {"maxItems", false},
	{"minProperties", true}, {"maxProperties", false},
	{"minContains", true}, {"maxContains", false},
}

// ConstraintKeywords are the keywords [JudgeConstraint] judges, in the
// order [JudgeConstraints] reports them.
var ConstraintKeywords = func() []string {
	out := []string{"minimum", "maximum"}
	for _, b := range CountBounds {
		out = append(out, b.Keyword)
	}
	return append(out, "multipleOf", "pattern", "format", "uniqueItems")
}()

// JudgeConstraints judges every keyword of [ConstraintKeywords] from old
// to new and returns those that are not the [Same].
func JudgeConstraints(old, new Constraints) []ConstraintChange {
	var out []ConstraintChange
	for _, kw := range ConstraintKeywords {
		if c := JudgeConstraint(kw, old, new); c.Narrowing != Same {
			out = append(out, c)
		}
	}
	return out
}

// JudgeConstraint judges keyword kw, one of [ConstraintKeywords], from old
// to new: whether new accepts the same values, fewer, more, or others.
func JudgeConstraint(kw string, old, new Constraints) ConstraintChange {
	c := ConstraintChange{Keyword: kw}
	switch kw {
	case "minimum":
		c.Narrowing, c.What = judgeLimit(kw, old.Minimum, new.Minimum, true)
	case "maximum":
		c.Narrowing, c.What = judgeLimit(kw, old.Maximum, new.Maximum, false)
	case "multipleOf":
		c.Narrowing, c.What, c.Why = judgeMultipleOf(old.Keywords, new.Keywords)
	case "pattern":
		c.Narrowing, c.What, c.Why = judgePattern(old.Keywords, new.Keywords)
	case "format":
		c.Narrowing, c.What, c.Why = judgeFormat(old, new)
	case "uniqueItems":
		switch o, n := old.Keywords["uniqueItems"] == true, new.Keywords["uniqueItems"] == true; {
		case n && !o:
			c.Narrowing, c.What, c.Why = Tightened, "uniqueItems is now true", "arrays with repeated elements fail"
		case o && !n:
			c.Narrowing, c.What = Loosened, "uniqueItems is no longer true"
		}
	default:
		i := slices.IndexFunc(CountBounds, func(b CountBound) bool { return b.Keyword == kw })
		if i < 0 {
			panic("model.JudgeConstraint: " + kw + " is no keyword of ConstraintKeywords")
		}
		c.Narrowing, c.What = judgeCount(kw, CountBounds[i].Lower, old.Keywords, new.Keywords)
	}
	return c
}

// judgeLimit judges a minimum (lower) or a maximum, exclusive or not: a
// raised minimum, or one made exclusive, accepts fewer values.
func judgeLimit(kw string, o, n *load.Bound, lower bool) (Narrowing, string) {
	name := func(b *load.Bound) string {
		if b.Exclusive {
			return "exclusive" + strings.ToUpper(kw[:1]) + kw[1:]
		}
		return kw
	}
	switch {
	case o == nil && n == nil:
		return Same, ""
	case o == nil:
		return Tightened, fmt.Sprintf("%s %s added", name(n), CanonicalJSON(n.Value))
	case n == nil:
		return Loosened, fmt.Sprintf("%s %s removed", name(o), CanonicalJSON(o.Value))
	}
	or, ok1 := ExactNumber(o.Value)
	nr, ok2 := ExactNumber(n.Value)
	if !ok1 || !ok2 {
		if o.Value == n.Value && o.Exclusive == n.Exclusive {
			return Same, ""
		}
		return Unjudged, fmt.Sprintf("%s %s changed to %s %s, which is not a number", name(o), o.Value, name(n), n.Value)
	}
	d := nr.Cmp(or)
	if d == 0 {
		switch {
		case n.Exclusive && !o.Exclusive:
			return Tightened, fmt.Sprintf("%s %s is now exclusive", kw, CanonicalJSON(n.Value))
		case o.Exclusive && !n.Exclusive:
			return Loosened, fmt.Sprintf("%s %s is no longer exclusive", kw, CanonicalJSON(n.Value))
		}
		return Same, ""
	}
	verb := "raised"
	if d < 0 {
		verb = "lowered"
	}
	what := fmt.Sprintf("%s %s from %s to %s", name(n), verb, CanonicalJSON(o.Value), CanonicalJSON(n.Value))
	if name(o) != name(n) {
		what = fmt.Sprintf("%s %s changed to %s %s", name(o), CanonicalJSON(o.Value), name(n), CanonicalJSON(n.Value))
	}
	// Equal values aside, the exclusive side of one value is between it
	// and the next: (d > 0) == lower tells tighter whatever exclusiveness.
	if (d > 0) == lower {
		return Tightened, what
	}
	return Loosened, what
}

// judgeCount judges a length or count bound (lower: minLength, ...).
func judgeCount(kw string, lower bool, old, new map[string]any) (Narrowing, string) {
	o, oHas := old[kw]
	n, nHas := new[kw]
	switch {
	case !oHas && !nHas:
		return Same, ""
	case !oHas:
		return Tightened, fmt.Sprintf("%s %s added", kw, CanonicalJSON(n))
	case !nHas:
		return Loosened, fmt.Sprintf("%s %s removed", kw, CanonicalJSON(o))
	}
	or, ok1 := ExactNumber(o)
	nr, ok2 := ExactNumber(n)
	if !ok1 || !ok2 {
		if CanonicalJSON(o) == CanonicalJSON(n) {
			return Same, ""
		}
		return Unjudged, fmt.Sprintf("%s changed from %s to %s, which is not a number", kw, CanonicalJSON(o), CanonicalJSON(n))
	}
	d := nr.Cmp(or)
	if d == 0 {
		return Same, ""
	}
	verb := "raised"
	if d < 0 {
		verb = "lowered"
	}
	what := fmt.Sprintf("%s %s from %s to %s", kw, verb, CanonicalJSON(o), CanonicalJSON(n))
	if (d > 0) == lower {
		return Tightened, what
	}
	return Loosened, what
}

// judgeMultipleOf: a new divisor that is a multiple of the old one
// accepts a subset of the old values (multiples of 4 are multiples of 2);
// the other way round a superset; anything else loses values each way.
func judgeMultipleOf(older, newer map[string]any) (Narrowing, string, string) {
	const kw = "multipleOf"
	o, oHas := older[kw]
	n, nHas := newer[kw]
	switch {
	case !oHas && !nHas:
		return Same, "", ""
	case !oHas:
		return Tightened, fmt.Sprintf("multipleOf %s added", CanonicalJSON(n)), ""
	case !nHas:
		return Loosened, fmt.Sprintf("multipleOf %s removed", CanonicalJSON(o)), ""
	}
	what := fmt.Sprintf("multipleOf changed from %s to %s", CanonicalJSON(o), CanonicalJSON(n))
	or, ok1 := ExactNumber(o)
	nr, ok2 := ExactNumber(n)
	switch {
	case !ok1 || !ok2 || or.Sign() <= 0 || nr.Sign() <= 0:
		if CanonicalJSON(o) == CanonicalJSON(n) {
			return Same, "", ""
		}
		return Unjudged, what + ", which is not a positive number", ""
	case or.Cmp(nr) == 0:
		return Same, "", ""
	case new(big.Rat).Quo(or, nr).IsInt():
		return Loosened, what + ", which divides it", ""
	case new(big.Rat).Quo(nr, or).IsInt():
		return Tightened, what + ", a multiple of it", ""
	}
	return Changed, what, "each accepts values the other rejects"
}

// judgePattern: any other pattern may refuse what the first accepted.
func judgePattern(old, new map[string]any) (Narrowing, string, string) {
	const kw = "pattern"
	o, oHas := old[kw]
	n, nHas := new[kw]
	switch {
	case !oHas && !nHas:
		return Same, "", ""
	case !oHas:
		return Tightened, fmt.Sprintf("pattern %s added", CanonicalJSON(n)), ""
	case !nHas:
		return Loosened, fmt.Sprintf("pattern %s removed", CanonicalJSON(o)), ""
	case CanonicalJSON(o) != CanonicalJSON(n):
		return Changed, fmt.Sprintf("pattern changed from %s to %s", CanonicalJSON(o), CanonicalJSON(n)), "warren cannot prove that either accepts every value the other does"
	}
	return Same, "", ""
}

// judgeFormat: a format consumers check breaks where it is checked, an
// old one (old consumers, new facts) and a new one (new consumers, old
// facts); one nobody checks is an annotation.
func judgeFormat(old, new Constraints) (Narrowing, string, string) {
	o, n := old.Format, new.Format
	if o == n {
		return Same, "", ""
	}
	oAsserted, nAsserted := o != "" && old.FormatAsserted, n != "" && new.FormatAsserted
	what := fmt.Sprintf("format changed from %q to %q", o, n)
	switch {
	case o == "":
		what = fmt.Sprintf("format %q added", n)
	case n == "":
		what = fmt.Sprintf("format %q removed", o)
	}
	switch {
	case oAsserted && nAsserted:
		return Changed, what, "consumers on both sides assert their format"
	case oAsserted:
		why := "consumers built from the old schema assert it"
		if o == "date-time" {
			why += assertedWhy(o)
		}
		return Loosened, what, why
	case nAsserted:
		return Tightened, what, "consumers built from the new schema assert it" + assertedWhy(n)
	}
	return Annotation, what, "an annotation on both sides: neither manifest lists it in assertFormats"
}

// assertedWhy says why a format is asserted, for the message.
func assertedWhy(format string) string {
	if format == "date-time" {
		return " (a date-time is always checked: its value is read into a time.Time)"
	}
	return " (assertFormats)"
}

// AssertedFormats are the formats a directory's consumers check: the
// manifest's assertFormats and date-time, whose values are read into a
// time.Time, which only a valid date-time can become. Every other format
// is an annotation.
func AssertedFormats(m *load.Manifest) []string {
	var assert []string
	if m != nil {
		assert = slices.Clone(m.AssertFormats)
	}
	if !slices.Contains(assert, "date-time") {
		assert = append(assert, "date-time")
	}
	return assert
}

// CanonicalJSON renders a decoded JSON value canonically (object keys
// sorted, numbers exactly and in their shortest form, no HTML escapes), so
// that values compare by meaning, not spelling: 1 and 1.0 are the same
// number.
func CanonicalJSON(v any) string {
	var b bytes.Buffer
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, k)
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	default:
		if r, ok := ExactNumber(v); ok {
			if r.IsInt() {
				b.WriteString(r.Num().String())
			} else {
				f, _ := r.Float64()
				b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
			}
			return
		}
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false) // patterns keep their '<', '>' and '&'
		if err := enc.Encode(v); err != nil {
			fmt.Fprintf(b, "%v", v)
			return
		}
		b.Truncate(b.Len() - 1) // Encode ends with a newline
	}
}

// ExactNumber reads a decoded JSON number (json.Number, float64, int or
// int64) exactly, for comparing schema bounds; false for anything else.
func ExactNumber(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(string(x))
	case float64:
		r := new(big.Rat)
		if r.SetFloat64(x) == nil {
			return nil, false
		}
		return r, true
	case int:
		return new(big.Rat).SetInt64(int64(x)), true
	case int64:
		return new(big.Rat).SetInt64(x), true
	}
	return nil, false
}
