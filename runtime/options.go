package runtime

import (
	"errors"
	"fmt"
	"time"
)

// ConsumerOption configures a [Consumer] or a [Responder]. Each kind of
// consumer takes the options that apply to it and refuses the others with
// an error from its constructor, so an option never silently does nothing.
type ConsumerOption func(*consumerOptions)

type consumerOptions struct {
	guard           Guard
	middleware      []Middleware
	shutdownTimeout time.Duration
	prefetch        int
	concurrency     int
	maxBodySize     int
	outage          OutagePolicy
	maxDeferInPlace time.Duration     // ordered consumers: the longest deferral held in place
	poisonHook      func(PoisonEvent) // see WithPoisonHook
	offsetName      string            // stream consumers: see WithOffsetName
	offsetEvery     time.Duration     // stream consumers: see WithOffsetStoreInterval
	readOverAMQP    bool              // stream consumers: see WithStreamReadOverAMQP
	balanceEvery    time.Duration     // ordered consumers: how often shards are shared out (tests shorten it)
	given           optionSet         // the options that were passed, to refuse those a kind does not apply
}

// optionSet records which options were passed.
type optionSet uint16

const (
	optGuard optionSet = 1 << iota
	optMiddleware
	optShutdownTimeout
	optPrefetch
	optConcurrency
	optMaxBodySize
	optOutagePolicy
	optMaxDeferInPlace
	optPoisonHook
	optOffsetName
	optOffsetEvery
	optReadOverAMQP
)

var optionNames = map[optionSet]string{
	optGuard: "WithGuard", optMiddleware: "WithMiddleware", optShutdownTimeout: "WithShutdownTimeout",
	optPrefetch: "WithPrefetch", optConcurrency: "WithConcurrency", optMaxBodySize: "WithMaxBodySize",
	optOutagePolicy: "WithOutagePolicy", optMaxDeferInPlace: "WithMaxDeferInPlace", optPoisonHook: "WithPoisonHook",
	optOffsetName: "WithOffsetName", optOffsetEvery: "WithOffsetStoreInterval", optReadOverAMQP: "WithStreamReadOverAMQP",
}

// WithMiddleware adds middleware around every handler call. The first
// listed runs outermost. Order, outside in: panic recovery, these
// middleware, the guard ([WithGuard]), panic recovery, the handler.
func WithMiddleware(m ...Middleware) ConsumerOption {
	return func(o *consumerOptions) { o.middleware = append(o.middleware, m...); o.given |= optMiddleware }
}

// WithShutdownTimeout bounds how long Run waits, once its ctx is
// cancelled, for running handlers to finish (default 30s). Handlers still
// running then see their ctx cancelled and their messages return to the
// queue unacked, to be delivered again: shutdown never loses a message.
func WithShutdownTimeout(d time.Duration) ConsumerOption {
	return func(o *consumerOptions) { o.shutdownTimeout = d; o.given |= optShutdownTimeout }
}

// WithPrefetch overrides the topology's prefetch: how many unacked
// deliveries the broker sends ahead.
func WithPrefetch(n int) ConsumerOption {
	return func(o *consumerOptions) { o.prefetch = n; o.given |= optPrefetch }
}

// WithConcurrency overrides the topology's concurrency: how many handlers
// run at once.
func WithConcurrency(n int) ConsumerOption {
	return func(o *consumerOptions) { o.concurrency = n; o.given |= optConcurrency }
}

// WithMaxDeferInPlace bounds how long an ordered consumer holds a deferred
// fact ([Defer]) in place, unacked, its key's later facts waiting behind
// it (default [DefaultMaxDeferInPlace], 15 minutes). Keep it below the
// broker's consumer_timeout (RabbitMQ's default is 30 minutes): the broker
// closes the channel of a consumer that holds a delivery longer. A
// deferral beyond it is a failure, tried again in place after the ladder's
// delay as any other. Plain consumers refuse the option: their deferred
// facts wait in the delay levels.
func WithMaxDeferInPlace(d time.Duration) ConsumerOption {
	return func(o *consumerOptions) { o.maxDeferInPlace = d; o.given |= optMaxDeferInPlace }
}

// newOptions applies opts over a kind's topology figures and checks them:
// every option given must be one the kind applies (refused names the
// others and why), and each value must be in range.
func newOptions(prefetch, concurrency int, opts []ConsumerOption, refused map[optionSet]string) (consumerOptions, error) {
	o := consumerOptions{shutdownTimeout: 30 * time.Second, prefetch: prefetch, concurrency: concurrency, maxBodySize: DefaultMaxBodySize, maxDeferInPlace: DefaultMaxDeferInPlace, balanceEvery: DefaultBalanceInterval, offsetEvery: DefaultOffsetStoreInterval}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	var errs []error
	for _, bit := range []optionSet{optGuard, optMiddleware, optShutdownTimeout, optPrefetch, optConcurrency, optMaxBodySize, optOutagePolicy, optMaxDeferInPlace, optPoisonHook, optOffsetName, optOffsetEvery, optReadOverAMQP} {
		if why, ok := refused[bit]; ok && o.given&bit != 0 {
			errs = append(errs, fmt.Errorf("%s does not apply: %s", optionNames[bit], why))
		}
	}
	if o.maxBodySize < 1 || o.maxBodySize > MaxBodySizeCeiling {
		errs = append(errs, fmt.Errorf("WithMaxBodySize(%d): expected 1 to %d bytes (RabbitMQ's default max_message_size)", o.maxBodySize, MaxBodySizeCeiling))
	}
	if o.given&optPrefetch != 0 && o.prefetch < 1 {
		errs = append(errs, fmt.Errorf("WithPrefetch(%d): expected 1 or more", o.prefetch))
	}
	if o.given&optConcurrency != 0 && o.concurrency < 1 {
		errs = append(errs, fmt.Errorf("WithConcurrency(%d): expected 1 or more", o.concurrency))
	}
	if o.given&optShutdownTimeout != 0 && o.shutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("WithShutdownTimeout(%s): expected a positive duration", o.shutdownTimeout))
	}
	if o.given&optOffsetEvery != 0 && o.offsetEvery < 0 {
		errs = append(errs, fmt.Errorf("WithOffsetStoreInterval(%s): expected 0 (store as it advances) or a positive duration", o.offsetEvery))
	}
	if o.given&optMaxDeferInPlace != 0 && o.maxDeferInPlace <= 0 {
		errs = append(errs, fmt.Errorf("WithMaxDeferInPlace(%s): expected a positive duration", o.maxDeferInPlace))
	}
	o.concurrency = max(o.concurrency, 1)
	o.prefetch = max(o.prefetch, o.concurrency)
	return o, errors.Join(errs...)
}
