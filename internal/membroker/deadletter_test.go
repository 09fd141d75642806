package membroker_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// x-last-death-* headers are written from 3.13 on; x-first-death-* always.
func TestLastDeathHeadersFollowTheVersion(t *testing.T) {
	for version, want := range map[string]bool{"3.10.8": false, "3.12.14": false, "3.13.7": true, "4.1.0": true} {
		b, ch := openBroker(t, version)
		deadLetterRig(t, ch, "q")
		declare(t, ch, "q", amqp.Table{"x-dead-letter-exchange": "dlx"})
		publish(t, ch, "", "q", body("x"))
		d, ok, err := ch.Get("q", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		must(t, "reject", d.Reject(false))
		dead := b.Messages("dead")
		if len(dead) != 1 {
			t.Fatalf("%s: %d dead-lettered messages, want 1", version, len(dead))
		}
		_, last := dead[0].Headers["x-last-death-reason"]
		_, first := dead[0].Headers["x-first-death-reason"]
		if last != want || !first {
			t.Errorf("%s: x-last-death-reason present %t, x-first-death-reason present %t; want %t and true", version, last, first, want)
		}
	}
}

// A message rejected into its own queue comes back, as a cycle with a
// rejection in it is not one RabbitMQ breaks; one that expires into its
// own queue, or round a cycle of expiries, is dropped.
func TestDeadLetterCycles(t *testing.T) {
	b, ch := openBroker(t, "")
	declare(t, ch, "self", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "self"})
	publish(t, ch, "", "self", body("m"))
	d, ok, err := ch.Get("self", false)
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	must(t, "reject", d.Reject(false))
	if s, _ := b.Queue("self"); s.Ready != 1 {
		t.Errorf("rejected into its own queue: %d messages there, want it back", s.Ready)
	}

	declare(t, ch, "a", amqp.Table{"x-message-ttl": int32(5), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "b"})
	declare(t, ch, "b", amqp.Table{"x-message-ttl": int32(5), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "a"})
	publish(t, ch, "", "a", body("round"))
	eventually(t, "the expiring message to be dropped", func() bool {
		sa, _ := b.Queue("a")
		sb, _ := b.Queue("b")
		return sa.Ready+sb.Ready == 0
	})
	var hops []string
	for _, r := range b.Journal(0) {
		if r.DeadLettered != "" {
			hops = append(hops, r.DeadLettered+"->"+strings.Join(r.Queues, ","))
		}
	}
	if want := []string{"self->self", "a->b", "b->"}; !slices.Equal(hops, want) {
		t.Errorf("dead-letter hops %v, want %v", hops, want)
	}
}

// With x-overflow reject-publish-dlx, a publish a full queue refuses is
// nacked and dead-lettered as "maxlen".
func TestRejectPublishDLXDeadLetters(t *testing.T) {
	b, ch := openBroker(t, "")
	deadLetterRig(t, ch, "q")
	declare(t, ch, "q", amqp.Table{"x-max-length": int32(1), "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "dlx"})
	done := confirming(t, ch)
	publish(t, ch, "", "q", body("1"))
	publish(t, ch, "", "q", body("2"))
	if got := done(); len(got) != 2 || !got[0].Ack || got[1].Ack {
		t.Errorf("confirms %v, want an ack then a nack", got)
	}
	dead := b.Messages("dead")
	if len(dead) != 1 || string(dead[0].Body) != "2" || dead[0].Headers["x-first-death-reason"] != "maxlen" {
		t.Errorf("dead-lettered %v, want the refused message, as maxlen", dead)
	}
}

// A quorum queue takes x-overflow reject-publish-dlx but drops the head,
// as RabbitMQ's quorum queues fall back to drop-head.
func TestQuorumRejectPublishDLXDropsHead(t *testing.T) {
	b, ch := openBroker(t, "")
	deadLetterRig(t, ch, "qq")
	declare(t, ch, "qq", amqp.Table{"x-queue-type": "quorum", "x-max-length": int32(1), "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "dlx"})
	done := confirming(t, ch)
	publish(t, ch, "", "qq", body("1"))
	publish(t, ch, "", "qq", body("2"))
	if got := done(); len(got) != 2 || !got[0].Ack || !got[1].Ack {
		t.Errorf("confirms %v, want two acks", got)
	}
	if kept, dead := b.Messages("qq"), b.Messages("dead"); len(kept) != 1 || string(kept[0].Body) != "2" || len(dead) != 1 || string(dead[0].Body) != "1" {
		t.Errorf("kept %v, dead-lettered %v; want 2 kept and 1 dead-lettered", kept, dead)
	}
}

// From 3.13 a message a client publishes starts without dead-letter
// history, whatever x-death header it carries; before, the broker adds to
// the header's entries. The runtime's retry copies carry their earlier
// hops' x-death, so this is what a consumer sees on each attempt.
func TestClientXDeathIsKeptBefore313Only(t *testing.T) {
	for _, c := range []struct {
		version string
		entries int
	}{{"3.10.8", 2}, {"3.13.7", 1}, {"4.0.5", 1}} {
		_, ch := openBroker(t, c.version)
		if _, err := ch.QueueDeclare("out", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare("wait", true, false, false, false, amqp.Table{
			"x-message-ttl": int64(0), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "out",
		}); err != nil {
			t.Fatal(err)
		}
		earlier := amqp.Table{"count": int64(1), "reason": "expired", "queue": "earlier", "exchange": "", "routing-keys": []any{"earlier"}}
		if err := ch.PublishWithContext(context.Background(), "", "wait", false, false, amqp.Publishing{
			Headers: amqp.Table{"x-death": []any{earlier}}, Body: []byte("m"),
		}); err != nil {
			t.Fatal(err)
		}
		d, ok, err := ch.Get("out", true)
		if err != nil || !ok {
			t.Fatalf("%s: get: %v %v", c.version, ok, err)
		}
		deaths, _ := d.Headers["x-death"].([]any)
		if len(deaths) != c.entries {
			t.Errorf("%s: x-death %v, want %d entries", c.version, deaths, c.entries)
		}
	}
}
