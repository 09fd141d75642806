package warrentest

import (
	"fmt"
	"strings"

	"github.com/warrenbus/warren/internal/secret"
)

// WantHandled fails the test unless consumer handled exactly n facts,
// telling what happened to each fact it saw.
func (b *Bus) WantHandled(consumer string, n int) {
	b.t.Helper()
	b.want(consumer, "fact", "handled", len(b.Handled(consumer)), n)
}

// WantRetried fails the test unless exactly n of consumer's handler calls
// failed and sent their fact round again.
func (b *Bus) WantRetried(consumer string, n int) {
	b.t.Helper()
	b.want(consumer, "handler call", "failed and retried", len(b.Retried(consumer)), n)
}

// WantDeferred fails the test unless exactly n of consumer's handler
// calls deferred their fact.
func (b *Bus) WantDeferred(consumer string, n int) {
	b.t.Helper()
	b.want(consumer, "handler call", "deferred", len(b.Deferred(consumer)), n)
}

// WantPoisoned fails the test unless exactly n facts reached consumer's
// poison queue.
func (b *Bus) WantPoisoned(consumer string, n int) {
	b.t.Helper()
	b.want(consumer, "fact", "poisoned", len(b.Poisoned(consumer)), n)
}

// WantDuplicates fails the test unless the idempotency guard skipped
// exactly n deliveries of consumer.
func (b *Bus) WantDuplicates(consumer string, n int) {
	b.t.Helper()
	b.want(consumer, "delivery", "skipped as a duplicate", len(b.Duplicates(consumer)), n)
}

// want fails the test unless got is want; noun and what say what was
// counted ("fact", "handled"), so that a failure of one of several Want
// calls in a row says which.
func (b *Bus) want(consumer, noun, what string, got, want int) {
	b.t.Helper()
	if got == want {
		return
	}
	b.t.Errorf("warrentest: %s: want %d %s %s, got %d\n%s", consumer, want, plural(want, noun), what, got, b.Story(consumer))
}

// Story tells what happened on the bus to consumer's facts, call by call,
// for a failure message.
func (b *Bus) Story(consumer string) string {
	b.t.Helper()
	var sb strings.Builder
	calls := b.Calls(consumer)
	poisoned := b.Poisoned(consumer)
	fmt.Fprintf(&sb, "what %s saw (%d %s, %d poisoned):", consumer, len(calls), plural(len(calls), "call"), len(poisoned))
	if len(calls) == 0 {
		sb.WriteString("\n  no handler call")
		if started := b.startedQueues(); len(started) == 0 {
			sb.WriteString(" (no consumer was started on the bus: use the kit's Start methods or Bus.Start)")
		}
	}
	for _, c := range calls {
		outcome := "handled"
		switch {
		case c.Duplicate:
			outcome = "skipped: handled before (idempotency guard)"
		case c.Deferred:
			outcome = secret.Text(c.Err.Error())
		case c.Err != nil:
			// As the runtime logs it: test output ends up in CI logs.
			outcome = "failed: " + secret.Text(c.Err.Error())
		}
		deferred := ""
		if c.Deferrals > 0 {
			deferred = fmt.Sprintf(" (deferred %d %s before)", c.Deferrals, plural(c.Deferrals, "time"))
		}
		fmt.Fprintf(&sb, "\n  %s attempt %d%s of message %s: %s\n    %s", c.RoutingKey, c.Attempt, deferred, c.MessageID, outcome, describe(c.Body))
	}
	for _, m := range poisoned {
		fmt.Fprintf(&sb, "\n  poisoned %s message %s after %d failed %s: %s", m.RoutingKey, m.MessageID, m.Attempts, plural(m.Attempts, "attempt"), m.Failure)
	}
	return sb.String()
}

func plural(n int, word string) string {
	switch {
	case n == 1:
		return word
	case strings.HasSuffix(word, "y"):
		return strings.TrimSuffix(word, "y") + "ies"
	}
	return word + "s"
}
