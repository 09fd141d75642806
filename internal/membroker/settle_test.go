package membroker_test

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// An ack of a tag the channel never delivered succeeds as a call, as
// basic.ack has no reply, and closes the channel with 406.
func TestAckOfAnUnknownTagClosesTheChannel(t *testing.T) {
	_, ch := openBroker(t, "")
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	declare(t, ch, "q", nil)
	publish(t, ch, "", "q", body("x"))
	d, ok, err := ch.Get("q", false)
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	if err := d.Acknowledger.Ack(99, false); err != nil {
		t.Errorf("ack of an unknown tag returned %v, want nil", err)
	}
	if e := await(t, closed, "the channel's close"); e.Code != amqp.PreconditionFailed {
		t.Errorf("channel closed with %v, want 406", e)
	}
	if err := d.Ack(false); err != amqp.ErrClosed {
		t.Errorf("ack on the closed channel returned %v, want %v", err, amqp.ErrClosed)
	}
}

// A message given back to a quorum queue takes its old place from 3.13
// on; before, RabbitMQ puts it behind the messages waiting.
func TestQuorumRequeuePlace(t *testing.T) {
	for version, want := range map[string]string{"3.10.8": "231", "3.13.7": "123"} {
		b, ch := openBroker(t, version)
		declare(t, ch, "q", amqp.Table{"x-queue-type": "quorum"})
		for _, s := range []string{"1", "2", "3"} {
			publish(t, ch, "", "q", body(s))
		}
		d, ok, err := ch.Get("q", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		must(t, "nack", d.Nack(false, true))
		got := ""
		for _, m := range b.Messages("q") {
			got += string(m.Body)
		}
		if got != want {
			t.Errorf("%s: order after a requeue %s, want %s", version, got, want)
		}
	}
}

// Before 3.13, basic.get on a quorum queue carries x-delivery-count from
// the first delivery, 0 before any return.
func TestQuorumGetDeliveryCount(t *testing.T) {
	for version, want := range map[string]any{"3.10.8": int64(0), "3.13.7": nil} {
		_, ch := openBroker(t, version)
		declare(t, ch, "q", amqp.Table{"x-queue-type": "quorum"})
		publish(t, ch, "", "q", body("1"))
		d, ok, err := ch.Get("q", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		if got := d.Headers["x-delivery-count"]; got != want {
			t.Errorf("%s: x-delivery-count on the first get %#v, want %#v", version, got, want)
		}
		must(t, "nack", d.Nack(false, true))
		d, ok, err = ch.Get("q", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		if got := d.Headers["x-delivery-count"]; got != int64(1) {
			t.Errorf("%s: x-delivery-count after a return %#v, want 1", version, got)
		}
	}
}
