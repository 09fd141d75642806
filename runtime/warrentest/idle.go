package warrentest

import (
	"fmt"
	"sort"
	"strings"
	"testing/synctest"
	"time"
)

// settle lets what the test just set off run as far as it can without the
// clock moving, so that records read next are complete.
func (b *Bus) settle() {
	if b.virtual {
		synctest.Wait()
	}
}

// Idle waits until the bus has nothing left to do: no handler running, no
// delivery unsettled or on its way, no fact waiting in a queue that a
// started consumer reads, and nothing the bus holds for later: no delayed
// retry still to come, no deferred fact (runtime.Defer), no fact published
// for later (runtime.Publisher.In or At). Under [Run] it advances the
// virtual clock to each next of those due times, so a whole ladder, or a
// fact published for tomorrow, runs at once; while a handler runs that
// waits on the clock (a sleep, a consumer pausing after
// runtime.Unavailable) it lets time pass in growing steps.
//
// Moving the clock moves it for everything in the test: an outbox row or
// a saga timeout due before the time Idle moves to is published, by a
// relay started on the bus, and handled within Idle. Idle does not wait
// for such rows (they are in a database, not on the bus): those due after
// it stay due later. To let what is due now run without moving the clock,
// as before advancing to just short of a timeout, use [Bus.Settle].
//
// Idle fails the test if a handler stays blocked, if a runner stopped, or
// if the bus is still busy after the patience ([WithPatience]).
func (b *Bus) Idle() {
	b.t.Helper()
	b.wait("Idle", busyLater)
}

// Settle lets what is due now run to its end without moving the clock:
// the handlers of the facts published so far, what they publish at once,
// and the rows an outbox relay started on the bus finds due (a commit in
// this process wakes it). What is due later stays due later, on the bus
// and off it: a retry, a deferred fact, a fact published with
// runtime.Publisher.In or At, an outbox row or saga timeout scheduled
// ahead, a handler waiting on the clock; [Bus.Advance] reaches them, or
// [Bus.Idle]. Under [Run] it returns once every goroutine of the test
// waits; under [New], where the clock cannot be held, once no handler
// runs, no delivery is unsettled or on its way and no fact waits for a
// started consumer (it fails the test if that takes longer than the
// patience). It fails the test if a runner stopped.
func (b *Bus) Settle() {
	b.t.Helper()
	if b.virtual {
		b.settle()
		if stopped := b.stopped(); len(stopped) > 0 {
			b.t.Fatalf("warrentest: Settle: %s", strings.Join(stopped, "; "))
		}
		return
	}
	b.wait("Settle", busyNow)
}

// wait is Idle, and Settle in real time: it waits until nothing of what
// busy reports is left. Only with busyLater does it move the virtual clock.
func (b *Bus) wait(what string, mode busyMode) {
	b.t.Helper()
	start := time.Now()
	step := time.Millisecond
	for {
		b.settle()
		if stopped := b.stopped(); len(stopped) > 0 {
			b.t.Fatalf("warrentest: %s: %s", what, strings.Join(stopped, "; "))
		}
		busy := b.busy(mode)
		if len(busy) == 0 {
			if b.virtual {
				return
			}
			// In real time, the runtime may be between taking a delivery
			// and telling the bus: look twice.
			time.Sleep(2 * time.Millisecond)
			if len(b.busy(mode)) == 0 {
				return
			}
			continue
		}
		if waited := time.Since(start); waited > b.opts.patience {
			clock := "wall"
			if b.virtual {
				clock = "virtual"
			}
			b.t.Fatalf("warrentest: %s: the bus is still busy after %v of %s time:\n  %s", what, b.opts.patience, clock, strings.Join(busy, "\n  "))
		}
		wait := step
		if due, ok := b.nextDue(); ok && len(b.runningCalls()) == 0 {
			wait = max(time.Until(due), 0)
		} else {
			// Something runs that the bus cannot see the end of (a handler
			// that sleeps, a consumer pausing after an outage): let time
			// pass, a little more each round.
			step = min(step*2, time.Minute)
		}
		if !b.virtual {
			wait = min(wait, 2*time.Millisecond)
		}
		time.Sleep(wait)
	}
}

// Advance moves the virtual clock on by d, running what falls due on the
// way (retries, request deadlines, pauses). It needs [Run]'s virtual time,
// and fails the test while a handler is running: the handler would see
// time jump under it, so the test must first release it.
func (b *Bus) Advance(d time.Duration) {
	b.t.Helper()
	if !b.virtual {
		b.t.Fatalf("warrentest: Advance needs virtual time: run the test with warrentest.Run (or the kit's Run), not New")
	}
	synctest.Wait()
	if running := b.runningCalls(); len(running) > 0 {
		b.t.Fatalf("warrentest: Advance(%v) while a handler is blocked: %s; release it (it waits on something only the test controls) before moving time", d, strings.Join(running, "; "))
	}
	time.Sleep(d)
	synctest.Wait()
}

func (b *Bus) runningCalls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, c := range b.running {
		out = append(out, fmt.Sprintf("the handler of %q on %s (message %s, attempt %d: %s)", c.Consumer, c.RoutingKey, c.MessageID, c.Attempt, describe(c.Body)))
	}
	sort.Strings(out)
	return out
}

// nextDue is the earliest time a waiting message expires into its next
// queue (the delay queues of retry ladders).
func (b *Bus) nextDue() (time.Time, bool) {
	var due time.Time
	for _, q := range b.broker.Queues() {
		if !q.Due.IsZero() && (due.IsZero() || q.Due.Before(due)) {
			due = q.Due
		}
	}
	return due, !due.IsZero()
}

// busyMode says how much of what the bus holds busy reports.
type busyMode int

const (
	// busyInFlight: handlers running, deliveries unsettled or on their way.
	busyInFlight busyMode = iota
	// busyNow adds facts waiting for a started consumer: what is due now.
	busyNow
	// busyLater adds what waits for a later time: delayed retries,
	// deferred facts and facts published for later.
	busyLater
)

// busy describes what is still in flight on the bus, and with mode what
// waits to be.
func (b *Bus) busy(mode busyMode) []string {
	out := b.runningCalls()
	if n := b.broker.Pending(); n > 0 {
		out = append(out, fmt.Sprintf("%d confirms, returns or deliveries on their way to the runtime", n))
	}
	readBy := b.startedQueues()
	for _, q := range b.broker.Queues() {
		if q.Unacked > 0 {
			out = append(out, fmt.Sprintf("queue %s: %d %s not settled", q.Name, q.Unacked, plural(q.Unacked, "delivery")))
		}
		switch {
		case mode < busyNow:
		case q.Ready > 0 && (q.Consumers > 0 || readBy[q.Name]):
			out = append(out, fmt.Sprintf("queue %s: %d facts waiting for its consumer", q.Name, q.Ready))
		case mode == busyLater && !q.Due.IsZero():
			out = append(out, fmt.Sprintf("queue %s: %d facts waiting, the next due at %s", q.Name, q.Ready, q.Due.Format(time.RFC3339Nano)))
		}
	}
	return out
}

// startedQueues are the queues of the consumers started on the bus.
func (b *Bus) startedQueues() map[string]bool {
	b.mu.Lock()
	names := map[string]bool{}
	for _, r := range b.runners {
		names[r.name] = true
	}
	b.mu.Unlock()
	out := map[string]bool{}
	for _, c := range b.top.Consumers {
		if !names[c.Name] {
			continue
		}
		if c.Queue != "" {
			out[c.Queue] = true
		}
		if c.Stream != "" && len(c.Partitions) == 0 {
			out[c.Stream] = true
		}
		for _, p := range c.Partitions {
			out[p] = true
		}
		for _, s := range c.Shards {
			out[s] = true
		}
	}
	return out
}
