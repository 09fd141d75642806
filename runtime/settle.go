package runtime

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/secret"
)

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

// poison sends a copy to the poison queue with the failure attached and
// acks the original once the broker confirmed the copy.
func (c *Consumer) poison(ctx context.Context, in inbound, cause error) {
	msg := copyOf(in)
	msg.Headers[HeaderAttempts] = int64(in.attempt)
	msg.Headers[HeaderFailure] = failureText(cause)
	msg.Headers[HeaderFailedAt] = time.Now().UTC().Format(time.RFC3339)
	msg.Headers[HeaderConsumer] = c.spec.Name
	if err := c.publishCopy(ctx, in, c.spec.DeadExchange, c.spec.Name, msg); err != nil {
		c.log.Error("could not send a poison copy; returning the message to the queue",
			append(logAttrs(in, cause), "copy_err", c.conn.redact(err))...)
		c.giveBack(in.d, "poison copy not confirmed")
		return
	}
	c.log.Error("gave up on a message; it is in the poison queue",
		append(logAttrs(in, cause), "poison_queue", c.spec.PoisonQueue)...)
	c.ack(in, Poisoned)
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
