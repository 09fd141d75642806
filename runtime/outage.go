package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/warrenbus/warren/internal/secret"
)

// errPaused is the cause recorded for deliveries that arrived after the
// consumer paused and were kept without calling the handler.
var errPaused = Unavailable(errors.New("the consumer is paused: a dependency is unavailable"))

// OutagePolicy says how a consumer behaves while something its handlers
// depend on is down: when handling fails with errors marked [Unavailable]
// (idempotency-store errors are marked so) PauseAfter times in a row, the
// consumer stops taking deliveries and probes with one message at a time,
// ProbeMin apart at first and twice as long after each failed probe, up to
// ProbeMax. The first probe that does not fail as unavailable resumes
// consuming. Messages are never poisoned for an outage, and none spends an
// attempt: each waits in a delay queue with its attempt count unchanged.
// This is the answer of NServiceBus's rate limiting on consecutive
// failures and MassTransit's kill switch: an outage of a dependency should
// cost a consumer its throughput, never its messages.
type OutagePolicy struct {
	PauseAfter int           // consecutive unavailable failures that pause the consumer; default 5
	ProbeMin   time.Duration // first wait between probes; default 1s
	ProbeMax   time.Duration // longest wait between probes; default 1m
}

// WithOutagePolicy sets how the consumer pauses and probes during an
// outage of a dependency; zero fields take the defaults of [OutagePolicy].
// An ordered consumer does not pause (each fact waits out the outage in
// place, holding back its key) and uses only ProbeMin, as the shortest
// wait between tries. A [Responder] refuses it: a request is answered at
// once or not at all.
func WithOutagePolicy(p OutagePolicy) ConsumerOption {
	return func(o *consumerOptions) { o.outage = p; o.given |= optOutagePolicy }
}

func (p *OutagePolicy) setDefaults() {
	if p.PauseAfter <= 0 {
		p.PauseAfter = 5
	}
	if p.ProbeMin <= 0 {
		p.ProbeMin = time.Second
	}
	if p.ProbeMax < p.ProbeMin {
		p.ProbeMax = max(time.Minute, p.ProbeMin)
	}
}

// outage counts consecutive unavailable failures and says when to pause.
type outage struct {
	policy OutagePolicy
	pause  chan struct{} // receives one value when the streak reaches PauseAfter

	mu     sync.Mutex
	streak int
	paused bool
	last   lastError
}

func newOutage(p OutagePolicy) *outage {
	p.setDefaults()
	return &outage{policy: p, pause: make(chan struct{}, 1)}
}

// failed records an unavailable failure.
func (o *outage) failed(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.streak++
	o.last.set(err)
	if o.streak >= o.policy.PauseAfter && !o.paused {
		o.paused = true
		select {
		case o.pause <- struct{}{}:
		default:
		}
	}
}

// succeeded records an outcome that was not an outage (success, or a
// failure of the message itself): the streak is broken.
func (o *outage) succeeded() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.paused {
		o.streak = 0
	}
}

// resume ends a pause after a probe that did not fail as unavailable.
func (o *outage) resume() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paused, o.streak = false, 0
	select {
	case <-o.pause:
	default:
	}
}

// state reports whether the consumer is paused, and the last outage error.
func (o *outage) state() (paused bool, last lastError) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.paused, o.last
}

// probe runs while the consumer is paused: it takes one message at a time
// from the work queue, at growing intervals, and handles it as usual. The
// first that does not fail as unavailable ends the pause; Run's ctx or a
// lost channel end it too (the next channel probes first).
func (e *engine[J]) probe(ctx context.Context, r *channelRun) (end bool, err error) {
	p, ok := e.kind.(pauser[J])
	if !ok {
		return false, nil
	}
	c := e.core
	queue := e.kind.queues()[0]
	_, last := c.outage.state()
	since := time.Now()
	c.log.Warn("consumer paused: a dependency is unavailable; probing with one message at a time",
		"consecutive_failures", c.outage.policy.PauseAfter, "err", secret.Error(last.err))
	c.metrics.Paused(c.name)
	wait := c.outage.policy.ProbeMin
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return true, nil
		case e := <-r.closed:
			t.Stop()
			if e == nil {
				return false, errors.New("channel closed while paused")
			}
			return false, fmt.Errorf("channel closed while paused: %w", e)
		case <-t.C:
		}
		d, ok, err := r.ch.Get(queue, false)
		if err != nil {
			return false, fmt.Errorf("probe %q: %w", queue, err)
		}
		if !ok {
			continue // nothing to probe with yet; held messages come back from the delay queues
		}
		err = p.probe(r, d)
		r.acks.ended(d.DeliveryTag) // settled on its own
		if IsUnavailable(err) {
			wait = min(wait*2, c.outage.policy.ProbeMax)
			continue
		}
		c.outage.resume()
		c.log.Info("consumer resumed: the probe succeeded", "paused_for", time.Since(since).Round(time.Millisecond))
		c.metrics.Resumed(c.name, time.Since(since))
		return false, nil
	}
}
