package schemaset

import (
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/warrenbus/warren/internal/pattern"
)

// The validator compiles "pattern", the keys of "patternProperties" and
// the strings of format "regex" through internal/pattern, as generated
// code does (runtime/codec.Pattern), so that both read a pattern as
// ECMA-262 and agree on every string: Go's regexp where it means the
// same, regexp2 with a match timeout where it does not.
//
// The validator's Regexp interface answers a match with a bool, so a match
// that regexp2 stops answers false there: a failed "pattern", but for a
// patternProperties key "not matched", which could let a value past the
// subschema meant for it. So every stopped match is recorded, and after
// validating a document the Set looks for the strings it stopped on:
// a document holding one (as a value or as a property name) fails,
// whatever the validator said, with a problem that names the pattern.

// maxStopped is how many stopped matches a Set remembers. A document is
// judged on the ones recorded while it was validated; if more came in
// meanwhile (some of them dropped), it fails.
const maxStopped = 64

// stoppedMatches records the matches a Set's patterns gave up on.
type stoppedMatches struct {
	n      atomic.Uint64 // stopped matches so far
	mu     sync.Mutex
	recent []stopped // oldest first, at most maxStopped
	lost   uint64    // seq of the newest record dropped from recent
}

type stopped struct {
	seq     uint64
	input   uint64 // maphash of the string, so that a large input is not kept
	pattern string
}

var inputSeed = maphash.MakeSeed()

func (m *stoppedMatches) record(expr, input string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seq := m.n.Add(1)
	if len(m.recent) == maxStopped {
		m.lost = m.recent[0].seq
		m.recent = m.recent[1:]
	}
	m.recent = append(m.recent, stopped{seq: seq, input: maphash.String(inputSeed, input), pattern: expr})
}

// since returns the patterns stopped on each input since count was
// before, by the input's hash; complete is false when some were dropped.
func (m *stoppedMatches) since(before uint64) (byInput map[uint64]string, complete bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	byInput = map[uint64]string{}
	for _, s := range m.recent {
		if s.seq > before {
			byInput[s.input] = s.pattern
		}
	}
	return byInput, m.lost <= before
}

// problems returns why doc fails when a match was stopped while it was
// validated (count was before when it began): one problem per string of
// doc that a pattern was stopped on; none if they were all other
// documents' strings.
func (m *stoppedMatches) problems(doc any, before uint64) []Problem {
	if m.n.Load() == before {
		return nil
	}
	byInput, complete := m.since(before)
	var out []Problem
	found := func(ptr []string, s string) {
		if expr, ok := byInput[maphash.String(inputSeed, s)]; ok {
			out = append(out, Problem{Pointer: pointer(ptr), Message: fmt.Sprintf("matching pattern %s was stopped: %v; the value counts as not valid", strconv.Quote(expr), pattern.ErrTimeout)})
		}
	}
	var walk func(v any, ptr []string)
	walk = func(v any, ptr []string) {
		switch x := v.(type) {
		case string:
			found(ptr, x)
		case map[string]any:
			for k, sub := range x {
				at := append(ptr[:len(ptr):len(ptr)], k)
				found(at, k)
				walk(sub, at)
			}
		case []any:
			for i, sub := range x {
				walk(sub, append(ptr[:len(ptr):len(ptr)], strconv.Itoa(i)))
			}
		}
	}
	walk(doc, nil)
	if len(out) == 0 && !complete {
		out = append(out, Problem{Message: fmt.Sprintf("more than %d pattern matches were stopped (%v) while this document was validated; it counts as not valid", maxStopped, pattern.ErrTimeout)})
	}
	return out
}

// engine is the Set's regexp engine for the validator.
func (m *stoppedMatches) engine(expr string) (jsonschema.Regexp, error) {
	re, err := pattern.Compile(expr)
	if err != nil {
		return nil, err
	}
	return &setRegexp{re: re, stopped: m}, nil
}

type setRegexp struct {
	re      *pattern.Regexp
	stopped *stoppedMatches
}

func (r *setRegexp) String() string { return r.re.String() }

func (r *setRegexp) MatchString(s string) bool {
	ok, err := r.re.Match(s)
	if errors.Is(err, pattern.ErrTimeout) {
		r.stopped.record(r.re.String(), s)
	}
	return ok
}

// validateRegex is format "regex": a pattern that compiles, as "pattern"
// does. The validator itself sends this format to its regexp engine;
// generated code checks it through FormatChecker, which needs it here.
func validateRegex(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	_, err := pattern.Compile(s)
	return err
}
