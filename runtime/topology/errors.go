package topology

import (
	"fmt"
	"strings"
)

// SpecError is what [Build] returns for a [Spec] it cannot build: every
// problem it found, in spec order. Its text is one line per problem after a
// "topology: " prefix; a caller that shows the problems elsewhere (the
// generator points each at its line of warren.json) reads Problems instead
// of the text.
type SpecError struct {
	Problems []Problem
}

func (e *SpecError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return "topology: " + strings.Join(lines, "\n")
}

// Unwrap returns the problems, so that errors.As finds a [Problem].
func (e *SpecError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// Problem is one thing wrong with a [Spec]: which consumer or exchange, which
// field of it, and what was wrong.
type Problem struct {
	// Consumer is the index of the consumer in Spec.Consumers, or -1 for a
	// problem with the exchanges.
	Consumer int
	// Name is the consumer's name as given, or the role of the exchange at
	// fault ("events", "retry" or "dead").
	Name string
	// Field is the field at fault, spelled as warren.json spells it: for a
	// consumer "name", "bindings", "queueType", "prefetch", "concurrency",
	// "maxAttempts", "maxDeferrals", "backoff" or "deliveryLimit", and a
	// key inside one joined by a dot ("batch.size"); for an exchange its
	// role.
	// It is "" when the consumer as a whole is at fault: one of its queue
	// names collides with another queue or exchange.
	Field string
	// Index is the element of a list field (bindings, backoff) at fault, or
	// -1 when the field as a whole is.
	Index int
	// Detail says what was wrong in words, beginning with what it concerns
	// and its value: `prefetch 5: expected at least concurrency (20), or
	// handlers would sit idle`.
	Detail string
}

func (p Problem) Error() string {
	if p.Consumer < 0 {
		return p.Detail
	}
	return fmt.Sprintf("consumer %d (%q): %s", p.Consumer, p.Name, p.Detail)
}

// problems collects the problems of one consumer or of the exchanges.
type problems struct {
	consumer int
	name     string
	list     []Problem
}

func (ps *problems) add(field string, index int, format string, args ...any) {
	ps.list = append(ps.list, Problem{
		Consumer: ps.consumer, Name: ps.name, Field: field, Index: index,
		Detail: fmt.Sprintf(format, args...),
	})
}
