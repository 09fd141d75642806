package runtime

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Pending is a fact published by [Publisher.PublishAsync] whose confirm
// has not been waited for. Wait for it exactly once.
type Pending struct {
	p    *Publisher
	dst  destination
	msg  amqp.Publishing
	sent inFlight
	err  error // the first send failed as a channel loss: Wait republishes
	// wrote reports that msg was written to the broker (or may have
	// been); until then a publish that fails gives its key's number back.
	wrote bool
}

// ID returns the message id of the pending fact.
func (h *Pending) ID() string { return h.msg.MessageId }

// Wait waits for the broker's confirm, bounded by ctx, and returns what
// [Publisher.Publish] would have: nil once the broker took the fact,
// [ErrUnroutable], [ErrNacked], or ctx's error (the fact may or may not
// have been published). If the channel was lost before the confirm, Wait
// publishes the same envelope (same id) again on the next connection, as
// Publish does.
func (h *Pending) Wait(ctx context.Context) error {
	var err error
	if h.err == nil {
		err = h.sent.wait(ctx)
	}
	if h.err != nil || errors.Is(err, errChannelLost) {
		var wrote bool
		wrote, err = h.p.sendTracked(ctx, h.msg, h.dst)
		h.wrote = h.wrote || wrote
	}
	if err != nil {
		if !h.wrote {
			h.p.unnumber(h.msg)
		}
		return h.p.conn.redact(fmt.Errorf("publish %s: %w", h.dst.fact, h.p.explainDelayed(h.dst, err)))
	}
	return nil
}

// PublishAsync is [Publisher.Publish] without the wait: it validates
// payload, sends it and returns a [Pending] to wait on for the broker's
// confirm. One goroutine can so keep hundreds of publishes in flight:
//
//	var pending []*runtime.Pending
//	for _, v := range batch {
//		h, err := pub.PublishAsync(ctx, fact, v)
//		if err != nil {
//			return err
//		}
//		pending = append(pending, h)
//	}
//	for _, h := range pending {
//		if err := h.Wait(ctx); err != nil {
//			return err
//		}
//	}
//
// ctx bounds the send (waiting for a connection, or for a resource alarm
// to be lifted); Wait's ctx bounds the confirm. An error here means
// nothing was sent. Publish middleware ([WithPublishMiddleware]) runs
// around the send and sees its outcome, not the confirm's.
func (p *Publisher) PublishAsync(ctx context.Context, f Fact, payload any) (*Pending, error) {
	m, err := encodeFact(f, payload)
	if err != nil {
		return nil, p.publishError(f, err)
	}
	return p.publishAsync(ctx, f, m)
}

// PublishEnvelopeAsync is [Publisher.PublishEnvelope] without the wait;
// see [Publisher.PublishAsync].
func (p *Publisher) PublishEnvelopeAsync(ctx context.Context, f Fact, env Envelope) (*Pending, error) {
	m, err := encodeEnvelope(f, env)
	if err != nil {
		return nil, p.publishError(f, err)
	}
	return p.publishAsync(ctx, f, m)
}

func (p *Publisher) publishAsync(ctx context.Context, f Fact, m outMessage) (*Pending, error) {
	msg, err := p.message(f, m)
	if err != nil {
		return nil, p.publishError(f, err)
	}
	dst, err := p.destination(f, &msg)
	if err != nil {
		p.unnumber(msg)
		return nil, p.publishError(f, err)
	}
	h := &Pending{p: p, dst: dst, msg: msg}
	if len(p.opts.middleware) == 0 {
		err = h.send(ctx)
	} else {
		err = p.through(ctx, f, dst, h.msg, func(ctx context.Context, msg amqp.Publishing) error {
			h.msg = msg
			return h.send(ctx)
		})
	}
	if err != nil {
		if !h.wrote {
			p.unnumber(msg)
		}
		return nil, p.publishError(f, p.explainDelayed(dst, err))
	}
	return h, nil
}

// send sends h's message once. A channel loss is not an error yet: Wait
// publishes it again.
func (h *Pending) send(ctx context.Context) error {
	h.sent, h.err = h.p.sendOnce(ctx, h.msg, h.dst)
	if !wasNotSent(h.err) {
		h.wrote = true
	}
	if errors.Is(h.err, errChannelLost) {
		return nil
	}
	return h.err
}
