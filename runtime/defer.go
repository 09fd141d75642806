package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/runtime/topology"
)

// HeaderDeferrals counts how often a fact was deferred ([Defer]) by the
// consumer it is on its way back to, as an integer; absent means never.
// A deferred copy carries it, so the count survives the delay levels and
// broker restarts, and [topology.Consumer.MaxDeferrals] bounds it.
const HeaderDeferrals = "x-deferrals"

// DefaultMaxDeferInPlace is how long an ordered consumer holds a deferred
// fact in place unless [WithMaxDeferInPlace] says otherwise: well below
// RabbitMQ's consumer_timeout (30 minutes by default), after which the
// broker closes the channel of a consumer that holds a delivery unacked.
const DefaultMaxDeferInPlace = 15 * time.Minute

// DeferredError is the error of a handler that defers its fact: "come back
// later, this is not a failure". [Defer] and [DeferUntil] make one; a
// handler returns it, wrapped with %w or not, and errors.As finds it.
type DeferredError struct {
	// DueAt is when the fact should be handled again. The deferred fact
	// carries it as [HeaderDueAt], so [Delivery.DueAt] says when it was
	// due and time.Since(d.DueAt) how late it came.
	DueAt time.Time
}

func (e *DeferredError) Error() string {
	return "deferred until " + e.DueAt.UTC().Format(dueAtLayout)
}

// Defer returns the error with which a handler defers its fact by d: the
// fact comes back to this consumer (and no other) after d, without
// spending an attempt (x-attempts is unchanged) and without approaching
// the poison lane. Wrap it to say why:
//
//	return fmt.Errorf("partner closed until 09:00: %w", runtime.Defer(d))
//
// A plain consumer has the broker hold the fact in the delay levels of its
// topology ("delayedFacts": true; see docs/RUNTIME.md, "Deferring a
// fact"); without them the deferral is a failure that walks the retry
// ladder. An ordered consumer waits in place, its key's later facts
// waiting behind it, for at most [WithMaxDeferInPlace]. A fact deferred
// more often than the consumer's MaxDeferrals goes to poison.
//
// d is rounded up to a whole millisecond; a d under a millisecond (0
// included) brings the fact back at once, a millisecond later. A negative
// d, or one beyond [topology.MaxDelay], is not a deferral but a failure
// matching [ErrDelay].
func Defer(d time.Duration) error {
	if d < 0 || d > topology.MaxDelay {
		return fmt.Errorf("defer by %s: %w, expected 0 to %s", d, ErrDelay, maxDelayText())
	}
	return &DeferredError{DueAt: time.Now().Add(d)}
}

// DeferUntil returns the error with which a handler defers its fact until
// t: [Defer] with the time left until t. A t that has passed brings the
// fact back at once (with t as its [HeaderDueAt]), as [Publisher.At] does,
// so a time computed a moment late is not refused; a t beyond
// [topology.MaxDelay] from now is a failure matching [ErrDelay].
func DeferUntil(t time.Time) error {
	if d := time.Until(t); d > topology.MaxDelay {
		return fmt.Errorf("defer until %s: %w, expected at most %s from now", t.UTC().Format(dueAtLayout), ErrDelay, maxDelayText())
	}
	return &DeferredError{DueAt: t}
}

// IsDeferred reports whether err, or any error it wraps, is a deferral
// made by [Defer] or [DeferUntil].
func IsDeferred(err error) bool {
	var d *DeferredError
	return errors.As(err, &d)
}

// deferredDelay returns how long the fact of a deferral due at due waits
// from now: at least a millisecond, the shortest the delay levels hold.
func deferredDelay(due time.Time) time.Duration {
	return max(time.Until(due), time.Millisecond)
}

// refusedDeferral is a deferral the consumer cannot honour, as the failure
// it then is: it wraps the handler's error, so its text and marks stay,
// but the consumer settles it as a failure, never as a deferral.
type refusedDeferral struct {
	why string
	err error
}

func (e *refusedDeferral) Error() string { return e.why + ": " + e.err.Error() }
func (e *refusedDeferral) Unwrap() error { return e.err }

// deferral reads how the consumer settles err: as a deferral of the fact
// until due (ok), or as the failure err is. A deferral the consumer cannot
// honour comes back as a failure saying why, in place of err: one beyond
// MaxDeferrals is permanent (to poison at once); on a plain consumer
// without delay levels, or on an ordered one beyond its in-place bound,
// it is an ordinary failure that walks the retry ladder. A deferral marked
// [Permanent] is the permanent failure it says it is.
func (c *Consumer) deferral(in inbound, err error) (settled error, ok bool) {
	de, ok := honoured(err)
	if !ok {
		return err, false
	}
	switch {
	case in.deferrals >= c.spec.MaxDeferrals:
		return Permanent(&refusedDeferral{
			why: fmt.Sprintf("deferred %d times, and maxDeferrals allows %d", in.deferrals, c.spec.MaxDeferrals), err: err}), false
	case c.spec.Ordered():
		if wait := time.Until(de.DueAt); wait > c.opts.maxDeferInPlace {
			return &refusedDeferral{
				why: fmt.Sprintf("deferred by %s, beyond the %s an ordered consumer holds a fact in place (WithMaxDeferInPlace, below RabbitMQ's consumer_timeout)", wait.Round(time.Millisecond), c.opts.maxDeferInPlace), err: err}, false
		}
	case c.spec.DeferExchange == "":
		return &refusedDeferral{
			why: `not deferred: deferral needs the delay levels ("delayedFacts": true in warren.json, topology.Spec.Delays)`, err: err}, false
	case time.Until(de.DueAt) > topology.MaxDelay:
		// Defer and DeferUntil refuse it; a DeferredError made by hand can ask.
		return &refusedDeferral{
			why: fmt.Sprintf("not deferred: due at %s, beyond the %s the delay levels hold", de.DueAt.UTC().Format(dueAtLayout), topology.MaxDelay), err: err}, false
	}
	return err, true
}

// honoured returns the deferral err asks for, unless err is marked
// [Permanent] or is a deferral the consumer refused.
func honoured(err error) (*DeferredError, bool) {
	if err == nil {
		// Before the targets of errors.As, which escape: a fact done, the
		// common case, allocates nothing here.
		return nil, false
	}
	var de *DeferredError
	var refused *refusedDeferral
	if !errors.As(err, &de) || IsPermanent(err) || errors.As(err, &refused) {
		return nil, false
	}
	return de, true
}

// deferrals reads [HeaderDeferrals]; 0 when absent.
func deferrals(h map[string]any) int { return amqpmsg.HeaderInt(h, HeaderDeferrals) }
