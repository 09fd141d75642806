package runtime

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/topology"
)

// settle ends a delivery by the outcome of its handling, and counts the
// outcome towards an outage. Acking, giving back, retrying, holding and
// poisoning live in this file alone, so that every way a delivery can end
// is in one place.
func (c *Consumer) settle(ctx context.Context, in inbound, duplicate bool, err error) {
	if c.end(ctx, in, duplicate, err) {
		c.outage.failed(err)
	} else {
		c.outage.succeeded()
	}
}

// end settles a delivery by the outcome of its handling, without counting
// it towards an outage (a batch consumer counts a batch once), and reports
// whether it held the delivery for an outage of a dependency
// ([Unavailable]).
func (c *Consumer) end(ctx context.Context, in inbound, duplicate bool, err error) (held bool) {
	switch {
	case duplicate:
		c.ack(in, DuplicateSkipped)
	case err == nil:
		c.ack(in, Acked)
	case IsPermanent(err):
		c.poison(ctx, in, err)
	case deferredTo(err) != nil:
		c.deferFact(ctx, in, err)
	case IsUnavailable(err):
		c.hold(ctx, in, err)
		return true
	case in.attempt >= c.spec.MaxAttempts:
		c.poison(ctx, in, err)
	default:
		c.retry(ctx, in, err)
	}
	return false
}

func (c *Consumer) ack(in inbound, e Event) {
	if in.acked != nil {
		// Even if the ack fails below: the fact was handled (or its copy
		// confirmed), and a stream's position is its stored offset.
		*in.acked = true
	}
	if in.acks != nil {
		in.acks.ack(in.d, e, in.routingKey)
		return
	}
	if err := in.d.Ack(false); err != nil {
		// The channel is gone; the broker redelivers the message.
		c.log.Debug("ack failed; the message will be redelivered", "message_id", in.d.MessageId, "err", c.conn.redact(err))
		return
	}
	c.count(e, in.routingKey)
}

// giveBack returns d to its queue unsettled, to be delivered again.
func (c *Consumer) giveBack(d amqp.Delivery, why string) {
	if err := d.Nack(false, true); err != nil {
		c.log.Debug("nack failed; the message will be redelivered", "message_id", d.MessageId, "err", c.conn.redact(err))
	}
	rk := d.RoutingKey
	if orig, ok := d.Headers[HeaderOriginalRoutingKey].(string); ok {
		rk = orig
	}
	c.count(Returned, rk)
	c.log.Debug("gave a delivery back to the queue", "message_id", d.MessageId, "why", why)
}

// hold keeps a delivery whose handling failed for a reason outside the
// message (a dependency is down, see [Unavailable]) without spending an
// attempt: a copy with the attempt count unchanged goes to the delay queue
// of the current attempt, and the original is acked once the copy is
// confirmed. A copy, not a give-back, because a quorum queue counts every
// give-back against its delivery limit and would dead-letter a good
// message after a long outage. Without delay queues the message is given
// back.
func (c *Consumer) hold(ctx context.Context, in inbound, cause error) {
	tier, ok := c.spec.TierFor(in.attempt)
	if !ok {
		c.log.Warn("dependency unavailable; returning the message to the queue", logAttrs(in, cause)...)
		c.giveBack(in.d, "dependency unavailable")
		return
	}
	msg := copyOf(in)
	msg.Headers[HeaderAttempts] = int64(in.attempt - 1)
	if err := c.publishCopy(ctx, in, c.spec.RetryExchange, tier.Queue, msg); err != nil {
		c.log.Error("could not send a delay copy; returning the message to the queue",
			append(logAttrs(in, cause), "delay_queue", tier.Queue, "copy_err", c.conn.redact(err))...)
		c.giveBack(in.d, "delay copy not confirmed")
		return
	}
	c.log.Warn("dependency unavailable; message delayed without spending an attempt", append(logAttrs(in, cause), "delay_queue", tier.Queue)...)
	c.ack(in, Held)
}

// retry sends a copy of the delivery to the delay queue for its attempt,
// with the attempt count in a header, and acks the original once the broker
// confirmed the copy. If the copy is not confirmed the original goes back to
// the queue: it is delivered again rather than lost.
func (c *Consumer) retry(ctx context.Context, in inbound, cause error) {
	tier, _ := c.spec.TierFor(in.attempt)
	msg := copyOf(in)
	msg.Headers[HeaderAttempts] = int64(in.attempt)
	if err := c.publishCopy(ctx, in, c.spec.RetryExchange, tier.Queue, msg); err != nil {
		c.log.Error("could not send a retry copy; returning the message to the queue",
			append(logAttrs(in, cause), "delay_queue", tier.Queue, "copy_err", c.conn.redact(err))...)
		c.giveBack(in.d, "retry copy not confirmed")
		return
	}
	c.log.Warn("handler failed; retrying", append(logAttrs(in, cause), "delay_queue", tier.Queue)...)
	c.ack(in, Retried)
}

// deferFact sends a copy of the delivery through the delay levels back to
// the consumer's own work queue, due when the handler asked, with its
// attempts unchanged and its deferrals counted, and acks the original once
// the broker confirmed the copy. If the copy is not confirmed the original
// goes back to the queue, as for a retry.
func (c *Consumer) deferFact(ctx context.Context, in inbound, cause error) {
	de := deferredTo(cause)
	due := de.DueAt.UTC().Format(dueAtLayout)
	msg := copyOf(in)
	key, err := topology.DeferredRoutingKey(c.spec.Queue)
	var entry int
	if err == nil {
		// A delayed fact's own delay headers are replaced, or it would
		// wait that delay again on top of this one.
		entry, err = topology.SetDelayHeaders(msg.Headers, deferredDelay(de.DueAt))
	}
	if err != nil {
		// Unreachable: NewConsumer refuses a queue name too long for the
		// key, and Consumer.deferral a delay the levels cannot hold.
		c.log.Error("could not defer; returning the message to the queue", append(logAttrs(in, cause), "key_err", err)...)
		c.giveBack(in.d, "deferral key: "+err.Error())
		return
	}
	dropDelayDeaths(msg.Headers, c.spec.DeferExchange)
	msg.Headers[HeaderDeferrals] = int64(in.deferrals + 1)
	msg.Headers[HeaderDueAt] = due
	if err := c.publishCopy(ctx, in, topology.DelayLevelExchange(c.spec.DeferExchange, entry), key, msg); err != nil {
		c.log.Error("could not send a deferred copy; returning the message to the queue",
			append(logAttrs(in, cause), "copy_err", c.conn.redact(err))...)
		c.giveBack(in.d, "deferred copy not confirmed")
		return
	}
	c.log.Info("deferred until "+due, append(logAttrs(in, cause), "deferrals", in.deferrals+1)...)
	c.ack(in, Deferred)
}

// dropDelayDeaths removes from h's x-death the entries of the delay levels
// whose top exchange is top. The broker drops a message dead-lettered to a
// queue its x-death names, unless a rejection came between (its guard
// against dead-letter cycles), so a fact that passed the levels before (a
// delayed fact, or one deferred already) would vanish on its way through
// them again. The other entries (the retry queues it passed) stay.
func dropDelayDeaths(h amqp.Table, top string) {
	deaths, ok := h["x-death"].([]any)
	if !ok {
		return
	}
	kept := make([]any, 0, len(deaths))
	for _, d := range deaths {
		if t, ok := d.(amqp.Table); ok {
			if q, _ := t["queue"].(string); topology.IsDelayLevel(top, q) {
				continue
			}
		}
		kept = append(kept, d)
	}
	if len(kept) == 0 {
		delete(h, "x-death")
		return
	}
	h["x-death"] = kept
}

// deferredTo returns the deferral that err asks for and the consumer
// honours (see [Consumer.deferral]), or nil.
func deferredTo(err error) *DeferredError {
	de, _ := honoured(err)
	return de
}

// poison sends a copy to the poison queue with the failure attached and
// acks the original once the broker confirmed the copy. It reports false
// when the copy was not confirmed and the original was given back.
func (c *Consumer) poison(ctx context.Context, in inbound, cause error) bool {
	msg := copyOf(in)
	msg.Headers[HeaderAttempts] = int64(in.attempt)
	msg.Headers[HeaderFailure] = failureText(cause)
	msg.Headers[HeaderFailedAt] = time.Now().UTC().Format(time.RFC3339)
	msg.Headers[HeaderConsumer] = c.spec.Name
	markVersionMismatch(cause, msg.Headers)
	if in.deferrals > 0 {
		// An ordered consumer counts its deferrals in place, not in the header.
		msg.Headers[HeaderDeferrals] = int64(in.deferrals)
	}
	if err := c.publishCopy(ctx, in, c.spec.DeadExchange, c.spec.Name, msg); err != nil {
		c.log.Error("could not send a poison copy; returning the message to the queue",
			append(logAttrs(in, cause), "copy_err", c.conn.redact(err))...)
		c.giveBack(in.d, "poison copy not confirmed")
		return false
	}
	c.log.Error("gave up on a message; it is in the poison queue",
		append(logAttrs(in, cause), "poison_queue", c.spec.PoisonQueue)...)
	c.ack(in, Poisoned)
	c.notifyPoisoned(in, msg)
	return true
}

// publishCopy publishes with the mandatory flag: a copy that reaches no
// queue (a topology that was never declared) is a failure, not an ack. It
// publishes only on the connection the delivery came on: once that is gone
// the broker delivers the original again, and a copy would double it.
func (c *Consumer) publishCopy(ctx context.Context, in inbound, exchange, key string, msg amqp.Publishing) error {
	cc, err := c.lane.channel(ctx)
	if err != nil {
		return err
	}
	if cc.sess != in.sess {
		return fmt.Errorf("%w: the delivery's connection is gone; the broker delivers it again", errChannelLost)
	}
	return cc.publish(ctx, exchange, key, true, msg)
}

// copyOf copies a delivery for republishing (see [amqpmsg.Republish]). It
// keeps every header (x-death included, which records the delay queues the
// message passed through) and records where the fact was first published.
func copyOf(in inbound) amqp.Publishing {
	h := amqpmsg.CloneHeaders(in.d.Headers, 6)
	h[HeaderOriginalRoutingKey] = in.routingKey
	h[HeaderOriginalExchange] = in.exchange
	return amqpmsg.Republish(in.d, h)
}

// failureText renders err for the x-failure header: URL passwords
// redacted (a handler's error may quote a database DSN), at most
// maxFailureLen bytes, cut on a UTF-8 boundary and marked when cut.
func failureText(err error) string {
	s := "unknown error"
	if err != nil {
		s = secret.Text(err.Error())
	}
	if len(s) <= maxFailureLen {
		return s
	}
	const mark = "..."
	cut := maxFailureLen - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
