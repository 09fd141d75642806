package membroker_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
)

// TestDifferential runs every case against RabbitMQ and against the
// in-process broker and fails where what a client sees differs.
func TestDifferential(t *testing.T) {
	runDifferential(t, []diffCase{
		{"topic routing with * and #", topicRouting},
		{"fanout", fanout},
		{"direct", direct},
		{"default exchange", defaultExchange},
		{"exchange-to-exchange binding", exchangeToExchange},
		{"consistent hash on a header", consistentHash},
		{"mandatory unroutable publish is returned, then acked", mandatoryReturn},
		{"publish to a missing exchange closes the channel", missingExchange},
		{"queue TTL dead-letters twice through one queue", ttlDeadLetterTwice},
		{"per-message expiration", perMessageExpiration},
		{"nack without requeue dead-letters as rejected", nackDeadLetter},
		{"nack with requeue redelivers in the original order", nackRequeue},
		{"prefetch limits unacknowledged deliveries", prefetch},
		{"ack multiple", ackMultiple},
		{"unknown delivery tag closes the channel", unknownDeliveryTag},
		{"inequivalent redeclarations", inequivalentRedeclare},
		{"passive declare of a missing queue", passiveMissing},
		{"x-max-length with reject-publish nacks", maxLengthRejectPublish},
		{"x-max-length with drop-head dead-letters the oldest", maxLengthDropHead},
		{"x-max-priority orders by priority", maxPriority},
		{"single active consumer", singleActiveConsumer},
		{"quorum delivery limit dead-letters", quorumDeliveryLimit},
		{"exclusive consumer refuses others", exclusiveConsumer},
		{"direct reply-to", directReplyTo},
		{"channel close returns unacked messages", channelCloseRequeues},
		{"basic.get counts what is left", getMessageCount},
		{"connection errors close the connection", connectionErrors},
		{"consistent hash without the header", consistentHashNoHeader},
		{"deleting what does not exist", deleteMissing},
		{"x-max-length-bytes with reject-publish nacks", maxBytesRejectPublish},
		{"dead-lettering back to the same queue", deadLetterCycle},
		{"quorum queue requeue and delivery count on basic.get", quorumRequeue},
		{"quorum queue arguments", quorumArguments},
		{"deleting a queue cancels its consumers", deleteCancels},
		{"consumers of one queue take turns", roundRobin},
		{"x-overflow reject-publish-dlx", rejectPublishDLX},
		{"quorum queue TTL dead-letters", quorumTTL},
		{"headers exchange, chained alternate exchanges, dead-lettered into", headersChain},
		{"stream consumers read from their offsets, and the stream keeps what they acked", streamOffsets},
		{"basic.nack of a stream fact: a connection error before 3.13, a settle from 3.13", streamNack},
	})
}

func consume(t *testing.T, ch transport.Channel, queue, tag string, autoAck bool) <-chan amqp.Delivery {
	t.Helper()
	ds, err := ch.Consume(queue, tag, autoAck, false, false, false, nil)
	must(t, "consume "+queue, err)
	return ds
}

func topicRouting(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "t", "topic", nil)
	patterns := map[string]string{"qa": "a.*", "qb": "a.#", "qc": "#", "qd": "*.b.#", "qe": "*", "qf": "#.c"}
	for _, q := range []string{"qa", "qb", "qc", "qd", "qe", "qf"} {
		declare(t, ch, q, nil)
		bind(t, ch, q, patterns[q], "t")
	}
	done := confirming(t, ch)
	for _, k := range []string{"a", "a.b", "a.b.c", "x.b", "b", "c", "x.y.c", ""} {
		publish(t, ch, "t", k, body("key "+k))
	}
	var o observation
	o.add(done())
	for _, q := range []string{"qa", "qb", "qc", "qd", "qe", "qf"} {
		o.add(q, getAll(t, ch, q))
	}
	return o
}

func fanout(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "f", "fanout", nil)
	declare(t, ch, "q1", nil)
	declare(t, ch, "q2", nil)
	bind(t, ch, "q1", "", "f")
	bind(t, ch, "q2", "x", "f")
	bind(t, ch, "q2", "y", "f") // bound twice: still one copy
	done := confirming(t, ch)
	publish(t, ch, "f", "any.key", body("one"))
	var o observation
	o.add(done(), getAll(t, ch, "q1"), getAll(t, ch, "q2"))
	return o
}

func direct(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "d", "direct", nil)
	declare(t, ch, "q1", nil)
	declare(t, ch, "q2", nil)
	bind(t, ch, "q1", "k1", "d")
	bind(t, ch, "q1", "k2", "d")
	bind(t, ch, "q2", "k2", "d")
	done := confirming(t, ch)
	for _, k := range []string{"k1", "k2", "k3", "K1"} {
		publish(t, ch, "d", k, body(k))
	}
	var o observation
	o.add(done(), getAll(t, ch, "q1"), getAll(t, ch, "q2"))
	return o
}

func defaultExchange(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	w := watch(ch)
	done := confirming(t, ch)
	publish(t, ch, "", "q", body("to q"))
	must(t, "publish", ch.PublishWithContext(context.Background(), "", "nobody", true, false, body("to nobody")))
	var o observation
	o.add(done(), returnOrder(w.until(t, 3, "a return and two confirms"), map[string]uint64{"to nobody": 2}), getAll(t, ch, "q"))
	// The default exchange takes no bindings.
	err := ch.QueueBind("q", "k", "", false, nil)
	o.add("bind to the default exchange", seenErr(err, "default exchange"))
	return o
}

func exchangeToExchange(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "src", "topic", nil)
	exchange(t, ch, "dst", "fanout", nil)
	exchange(t, ch, "loop", "fanout", nil)
	must(t, "bind dst to src", ch.ExchangeBind("dst", "a.#", "src", false, nil))
	// A cycle, and a queue reachable two ways: still one copy.
	must(t, "bind loop to dst", ch.ExchangeBind("loop", "", "dst", false, nil))
	must(t, "bind dst to loop", ch.ExchangeBind("dst", "", "loop", false, nil))
	declare(t, ch, "q", nil)
	bind(t, ch, "q", "", "dst")
	bind(t, ch, "q", "", "loop")
	done := confirming(t, ch)
	publish(t, ch, "src", "a.b", body("routed"))
	publish(t, ch, "src", "b.a", body("not routed"))
	var o observation
	o.add(done(), getAll(t, ch, "q"))
	must(t, "unbind dst", ch.ExchangeUnbind("dst", "a.#", "src", false, nil))
	publish(t, ch, "src", "a.b", body("after unbind"))
	o.add(done(), getAll(t, ch, "q"))
	return o
}

func consistentHash(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "h", "x-consistent-hash", amqp.Table{"hash-header": "app-key"})
	queues := []string{"h1", "h2", "h3"}
	for _, q := range queues {
		declare(t, ch, q, nil)
		bind(t, ch, q, "10", "h")
	}
	done := confirming(t, ch)
	for round := range 3 {
		for v := range 12 {
			msg := body(fmt.Sprintf("v%d/%d", v, round))
			msg.Headers = amqp.Table{"app-key": fmt.Sprintf("value-%d", v)}
			publish(t, ch, "h", "ignored", msg)
		}
	}
	var o observation
	o.add(done())
	// Which queue a value reaches depends on the hash function; that each
	// value reaches exactly one queue, every copy of it, does not.
	where := map[string]map[string]bool{}
	total := 0
	for _, q := range queues {
		for _, d := range getAll(t, ch, q) {
			v, _, _ := strings.Cut(d.Body, "/")
			if where[v] == nil {
				where[v] = map[string]bool{}
			}
			where[v][q] = true
			total++
		}
	}
	for v := range 12 {
		o.add(fmt.Sprintf("v%d reaches %d queue(s)", v, len(where[fmt.Sprintf("v%d", v)])))
	}
	o.add("total", total)
	return o
}

func mandatoryReturn(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "x", "direct", nil)
	w := watch(ch)
	must(t, "confirm mode", ch.Confirm(false))
	must(t, "publish", ch.PublishWithContext(context.Background(), "x", "nowhere", true, false, body("lost")))
	must(t, "publish", ch.PublishWithContext(context.Background(), "x", "nowhere", false, false, body("dropped")))
	var o observation
	o.add(w.until(t, 3, "a return and two confirms"))
	return o
}

func missingExchange(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	w := watch(ch)
	err := ch.PublishWithContext(context.Background(), "nope", "k", false, false, body("x"))
	var o observation
	o.add("publish", seenErr(err, ""))
	o.add("closed", seenErr(w.closeErr(t, "the channel to close"), "no exchange 'nope'"))
	_, err = ch.QueueDeclare("q", false, false, false, false, nil)
	o.add("declare after", seenErr(err, "not open"))
	return o
}

// deadLetterRig declares a direct DLX "dlx" and a queue "dead" bound to it
// with key.
func deadLetterRig(t *testing.T, ch transport.Channel, key string) {
	exchange(t, ch, "dlx", "direct", nil)
	declare(t, ch, "dead", nil)
	bind(t, ch, "dead", key, "dlx")
}

func ttlDeadLetterTwice(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	deadLetterRig(t, ch, "back")
	declare(t, ch, "wait", amqp.Table{"x-message-ttl": int32(20), "x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "back"})
	ds := consume(t, ch, "dead", "", false)
	msg := body("m")
	msg.Headers = amqp.Table{"app-n": "1"}
	publish(t, ch, "", "wait", msg)
	var o observation
	first := await(t, ds, "the first dead-lettered copy")
	o.add(seen(first))
	must(t, "ack", first.Ack(false))
	// Republish as a client retrying through a delay queue does: the
	// headers, x-death included, as received.
	publish(t, ch, "", "wait", amqp.Publishing{Headers: first.Headers, Body: first.Body})
	second := await(t, ds, "the second dead-lettered copy")
	o.add(seen(second))
	must(t, "ack", second.Ack(false))
	return o
}

func perMessageExpiration(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	deadLetterRig(t, ch, "k")
	bind(t, ch, "dead", "wait", "dlx")
	declare(t, ch, "wait", amqp.Table{"x-dead-letter-exchange": "dlx"})
	ds := consume(t, ch, "dead", "", true)
	msg := body("m")
	msg.Expiration = "20"
	publish(t, ch, "", "wait", amqp.Publishing{Body: []byte("kept")})
	publish(t, ch, "", "wait", msg)
	// Only the head of a queue expires: "m" waits behind "kept", which
	// never expires, until "kept" is taken.
	awaitCount(t, ch, "wait", 2)
	var o observation
	d, ok, err := ch.Get("wait", true)
	must(t, "get", err)
	o.add(ok, seen(d))
	publish(t, ch, "", "k", body("unused")) // nothing bound: the default exchange has no queue k
	msg.Body = []byte("alone")
	// A queue with a TTL shorter than the message's: the shorter wins.
	declare(t, ch, "k", amqp.Table{"x-message-ttl": int32(10), "x-dead-letter-exchange": "dlx"})
	msg.Expiration = "60000"
	publish(t, ch, "", "k", msg)
	a := await(t, ds, "a dead-lettered message")
	b := await(t, ds, "a second dead-lettered message")
	got := []deliverySeen{seen(a), seen(b)}
	if got[0].Body > got[1].Body {
		got[0], got[1] = got[1], got[0]
	}
	o.add(got)
	return o
}

func nackDeadLetter(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "dlx", "topic", nil)
	declare(t, ch, "dead", nil)
	bind(t, ch, "dead", "#", "dlx")
	exchange(t, ch, "x", "topic", nil)
	declare(t, ch, "work", amqp.Table{"x-dead-letter-exchange": "dlx"})
	bind(t, ch, "work", "order.*", "x")
	ds := consume(t, ch, "work", "", false)
	publish(t, ch, "x", "order.placed", body("bad"))
	d := await(t, ds, "the delivery")
	must(t, "nack", d.Nack(false, false))
	dead := consume(t, ch, "dead", "", true)
	var o observation
	o.add(seen(await(t, dead, "the dead-lettered copy")))
	return o
}

func nackRequeue(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	for _, s := range []string{"1", "2", "3", "4"} {
		publish(t, ch, "", "q", body(s))
	}
	awaitCount(t, ch, "q", 4)
	var ds []amqp.Delivery
	for range 3 {
		d, ok, err := ch.Get("q", false)
		must(t, "get", err)
		if !ok {
			t.Fatal("get: the queue is empty")
		}
		ds = append(ds, d)
	}
	var o observation
	// Given back out of order, they take their old places.
	must(t, "nack 2", ds[1].Nack(false, true))
	must(t, "nack 1", ds[0].Nack(false, true))
	must(t, "ack 3", ds[2].Ack(false))
	awaitCount(t, ch, "q", 3)
	o.add(getAll(t, ch, "q"))
	// To a consumer: nack multiple gives all back at once.
	for _, s := range []string{"a", "b", "c"} {
		publish(t, ch, "", "q", body(s))
	}
	c := consume(t, ch, "q", "c", false)
	var last amqp.Delivery
	for i := range 3 {
		last = await(t, c, fmt.Sprintf("delivery %d", i+1))
		o.add(seen(last))
	}
	must(t, "nack multiple", last.Nack(true, true))
	for i := range 3 {
		d := await(t, c, fmt.Sprintf("redelivery %d", i+1))
		o.add(seen(d))
		must(t, "ack", d.Ack(false))
	}
	return o
}

func prefetch(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	must(t, "qos", ch.Qos(2, 0, false))
	c := consume(t, ch, "q", "c", false)
	for _, s := range []string{"1", "2", "3", "4"} {
		publish(t, ch, "", "q", body(s))
	}
	var o observation
	d1 := await(t, c, "delivery 1")
	d2 := await(t, c, "delivery 2")
	o.add(seen(d1), seen(d2))
	// Two unacknowledged: the others wait in the queue.
	awaitCount(t, ch, "q", 2)
	must(t, "ack 1", d1.Ack(false))
	d3 := await(t, c, "delivery 3 after an ack")
	o.add(seen(d3))
	awaitCount(t, ch, "q", 1)
	must(t, "ack 2 and 3", d3.Ack(true))
	o.add(seen(await(t, c, "delivery 4")))
	return o
}

func ackMultiple(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	c := consume(t, ch, "q", "c", false)
	for _, s := range []string{"1", "2", "3"} {
		publish(t, ch, "", "q", body(s))
	}
	var ds []amqp.Delivery
	for i := range 3 {
		ds = append(ds, await(t, c, fmt.Sprintf("delivery %d", i+1)))
	}
	var o observation
	o.add("tags", ds[0].DeliveryTag, ds[1].DeliveryTag, ds[2].DeliveryTag)
	must(t, "ack up to 2", ds[1].Ack(true))
	must(t, "close", ch.Close())
	// Only 3 was unacknowledged when the channel closed.
	other := channel(t, conn)
	awaitCount(t, other, "q", 1)
	o.add(getAll(t, other, "q"))
	return o
}

func unknownDeliveryTag(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	w := watch(ch)
	publish(t, ch, "", "q", body("1"))
	c := consume(t, ch, "q", "c", false)
	d := await(t, c, "the delivery")
	var o observation
	o.add("ack of an unknown tag", seenErr(d.Acknowledger.Ack(99, false), ""))
	o.add("closed", seenErr(w.closeErr(t, "the channel to close"), "unknown delivery tag 99"))
	o.add("ack after", seenErr(d.Ack(false), ""))
	other := channel(t, conn)
	awaitCount(t, other, "q", 1)
	o.add(getAll(t, other, "q"))
	return o
}

func inequivalentRedeclare(t *testing.T, conn transport.Connection) observation {
	setup := channel(t, conn)
	declare(t, setup, "ttl", amqp.Table{"x-message-ttl": int32(1000)})
	declare(t, setup, "classic", nil)
	declare(t, setup, "explicit", amqp.Table{"x-queue-type": "classic"})
	declare(t, setup, "quorum", amqp.Table{"x-queue-type": "quorum"})
	_, err := setup.QueueDeclare("auto", false, true, false, false, nil)
	must(t, "declare auto", err)
	exchange(t, setup, "x", "topic", nil)
	type redeclare struct {
		name    string
		durable bool
		auto    bool
		args    amqp.Table
		phrase  string
	}
	var o observation
	for _, r := range []redeclare{
		{"ttl", false, false, amqp.Table{"x-message-ttl": int32(2000)}, "inequivalent arg 'x-message-ttl'"},
		{"ttl", false, false, nil, "inequivalent arg 'x-message-ttl'"},
		{"ttl", false, false, amqp.Table{"x-message-ttl": int64(1000)}, ""}, // another integer type is the same value
		{"ttl", true, false, amqp.Table{"x-message-ttl": int32(1000)}, "inequivalent arg 'durable'"},
		{"classic", false, false, amqp.Table{"x-queue-type": "quorum"}, "inequivalent arg 'x-queue-type'"},
		{"classic", false, false, amqp.Table{"x-queue-type": "classic"}, ""},
		{"explicit", false, false, nil, "inequivalent arg 'x-queue-type'"},
		{"quorum", true, false, amqp.Table{"x-queue-type": "classic"}, "inequivalent arg 'x-queue-type'"},
		{"quorum", true, false, nil, "inequivalent arg 'x-queue-type'"},
		{"auto", false, false, nil, "inequivalent arg 'auto_delete'"},
	} {
		ch := channel(t, conn)
		_, err := ch.QueueDeclare(r.name, r.durable, r.auto, false, false, r.args)
		o.add(fmt.Sprintf("%s durable=%t auto=%t %v", r.name, r.durable, r.auto, r.args), seenErr(err, r.phrase))
		if err == nil {
			ch.Close()
		}
	}
	ch := channel(t, conn)
	err = ch.ExchangeDeclare("x", "direct", false, false, false, false, nil)
	o.add("exchange x as direct", seenErr(err, "inequivalent arg 'type'"))
	ch = channel(t, conn)
	err = ch.ExchangeDeclare("x", "topic", true, false, false, false, nil)
	o.add("exchange x durable", seenErr(err, "inequivalent arg 'durable'"))
	return o
}

func passiveMissing(t *testing.T, conn transport.Connection) observation {
	var o observation
	ch := channel(t, conn)
	_, err := ch.QueueDeclarePassive("missing", false, false, false, false, nil)
	o.add("queue", seenErr(err, "no queue 'missing'"))
	ch = channel(t, conn)
	err = ch.ExchangeDeclarePassive("missing", "direct", false, false, false, false, nil)
	o.add("exchange", seenErr(err, "no exchange 'missing'"))
	ch = channel(t, conn)
	_, err = ch.Consume("missing", "", false, false, false, false, nil)
	o.add("consume", seenErr(err, "no queue 'missing'"))
	ch = channel(t, conn)
	err = ch.QueueBind("missing", "k", "amq.direct", false, nil)
	o.add("bind", seenErr(err, "no queue 'missing'"))
	ch = channel(t, conn)
	n, err := ch.QueueDelete("missing", false, false, false)
	o.add("delete", n, seenErr(err, ""))
	return o
}

func maxLengthRejectPublish(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", amqp.Table{"x-max-length": int32(2), "x-overflow": "reject-publish"})
	done := confirming(t, ch)
	for _, s := range []string{"1", "2", "3"} {
		publish(t, ch, "", "q", body(s))
	}
	var o observation
	o.add(done())
	q, err := ch.QueueDeclarePassive("q", false, false, false, false, nil)
	must(t, "passive", err)
	o.add("count", q.Messages, getAll(t, ch, "q"))
	return o
}

func maxLengthDropHead(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	deadLetterRig(t, ch, "q")
	declare(t, ch, "q", amqp.Table{"x-max-length": int32(2), "x-dead-letter-exchange": "dlx"})
	done := confirming(t, ch)
	for _, s := range []string{"1", "2", "3"} {
		publish(t, ch, "", "q", body(s))
	}
	var o observation
	o.add(done())
	awaitCount(t, ch, "dead", 1)
	o.add(getAll(t, ch, "q"), getAll(t, ch, "dead"))
	return o
}

func maxPriority(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", amqp.Table{"x-max-priority": int32(5)})
	done := confirming(t, ch)
	for i, p := range []uint8{0, 3, 9, 5, 1, 3, 0} {
		publish(t, ch, "", "q", amqp.Publishing{Priority: p, Body: []byte(fmt.Sprint(i))})
	}
	var o observation
	o.add(done(), getAll(t, ch, "q"))
	return o
}

func singleActiveConsumer(t *testing.T, conn transport.Connection) observation {
	setup := channel(t, conn)
	declare(t, setup, "q", amqp.Table{"x-single-active-consumer": true})
	chA, chB := channel(t, conn), channel(t, conn)
	a := consume(t, chA, "q", "a", false)
	b := consume(t, chB, "q", "b", false)
	for _, s := range []string{"1", "2"} {
		publish(t, setup, "", "q", body(s))
	}
	var o observation
	for i := range 2 {
		d := await(t, a, fmt.Sprintf("delivery %d to the active consumer", i+1))
		o.add("a", seen(d))
		must(t, "ack", d.Ack(false))
	}
	must(t, "cancel a", chA.Cancel("a", false))
	publish(t, setup, "", "q", body("3"))
	// Had b received 1 or 2, it would be its first delivery.
	d := await(t, b, "the delivery to the consumer that became active")
	o.add("b", seen(d))
	must(t, "ack", d.Ack(false))
	return o
}

func quorumDeliveryLimit(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	deadLetterRig(t, ch, "q")
	declare(t, ch, "q", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(2), "x-dead-letter-exchange": "dlx"})
	c := consume(t, ch, "q", "c", false)
	publish(t, ch, "", "q", body("poison"))
	var o observation
	for i := range 3 {
		d := await(t, c, fmt.Sprintf("delivery %d", i+1))
		o.add(seen(d))
		must(t, "nack", d.Nack(false, true))
	}
	dead := consume(t, ch, "dead", "", true)
	o.add("dead", seen(await(t, dead, "the dead-lettered copy")))
	return o
}

func exclusiveConsumer(t *testing.T, conn transport.Connection) observation {
	setup := channel(t, conn)
	declare(t, setup, "q", nil)
	declare(t, setup, "r", nil)
	_, err := setup.Consume("q", "only", false, true, false, false, nil)
	must(t, "exclusive consume", err)
	var o observation
	ch := channel(t, conn)
	_, err = ch.Consume("q", "second", false, false, false, false, nil)
	o.add("beside an exclusive consumer", seenErr(err, "in exclusive use"))
	consume(t, setup, "r", "plain", false)
	ch = channel(t, conn)
	_, err = ch.Consume("r", "excl", false, true, false, false, nil)
	o.add("exclusive beside a consumer", seenErr(err, "in exclusive use"))
	return o
}

func directReplyTo(t *testing.T, conn transport.Connection) observation {
	server := channel(t, conn)
	declare(t, server, "rpc", nil)
	requests := consume(t, server, "rpc", "server", false)
	var o observation

	// Without consuming the pseudo-queue first, a request is refused.
	lone := channel(t, conn)
	w := watch(lone)
	must(t, "publish", lone.PublishWithContext(context.Background(), "", "rpc", false, false, amqp.Publishing{ReplyTo: "amq.rabbitmq.reply-to", Body: []byte("x")}))
	o.add("without a reply consumer", seenErr(w.closeErr(t, "the channel to close"), "fast reply consumer does not exist"))

	client := channel(t, conn)
	replies := consume(t, client, "amq.rabbitmq.reply-to", "client", true)
	must(t, "publish", client.PublishWithContext(context.Background(), "", "rpc", false, false, amqp.Publishing{ReplyTo: "amq.rabbitmq.reply-to", CorrelationId: "c1", Body: []byte("question")}))
	req := await(t, requests, "the request")
	o.add("rewritten", strings.HasPrefix(req.ReplyTo, "amq.rabbitmq.reply-to.") && len(req.ReplyTo) > len("amq.rabbitmq.reply-to."))
	sw := watch(server)
	must(t, "confirm", server.Confirm(false))
	must(t, "reply", server.PublishWithContext(context.Background(), "", req.ReplyTo, true, false, amqp.Publishing{CorrelationId: req.CorrelationId, Body: []byte("answer")}))
	must(t, "ack", req.Ack(false))
	rep := await(t, replies, "the reply")
	o.add("key is the reply address", rep.RoutingKey == req.ReplyTo)
	rep.RoutingKey = "" // the address's form is the broker's own
	o.add(seen(rep), rep.CorrelationId, rep.ConsumerTag)
	// RabbitMQ 3.10 also returns a mandatory reply it delivered; the
	// in-process broker does not (see the package doc).
	delivered := withoutReturns(sw.untilConfirms(t, 1, "the reply's confirm"))
	o.add(delivered)

	// Once the requester has gone, a reply to it is dropped.
	must(t, "close the client channel", client.Close())
	must(t, "late reply", server.PublishWithContext(context.Background(), "", req.ReplyTo, true, false, amqp.Publishing{Body: []byte("late")}))
	publish(t, server, "", "rpc", body("marker"))                                                           // confirmed after the late reply
	o.add(withoutReturnsOf("answer", sw.untilConfirms(t, 3, "the late reply's and the marker's confirms"))) // a return, if any, comes before its confirm
	m := await(t, requests, "the marker")
	must(t, "ack", m.Ack(false))
	return o
}

func channelCloseRequeues(t *testing.T, conn transport.Connection) observation {
	setup := channel(t, conn)
	declare(t, setup, "q", nil)
	for _, s := range []string{"1", "2", "3"} {
		publish(t, setup, "", "q", body(s))
	}
	ch := channel(t, conn)
	must(t, "qos", ch.Qos(2, 0, false))
	c := consume(t, ch, "q", "c", false)
	var o observation
	for i := range 2 {
		o.add(seen(await(t, c, fmt.Sprintf("delivery %d", i+1))))
	}
	must(t, "close", ch.Close())
	awaitCount(t, setup, "q", 3)
	o.add(getAll(t, setup, "q"))
	return o
}

func getMessageCount(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	done := confirming(t, ch)
	for _, s := range []string{"1", "2", "3"} {
		publish(t, ch, "", "q", body(s))
	}
	var o observation
	o.add(done())
	q, err := ch.QueueDeclare("q", false, false, false, false, nil)
	must(t, "redeclare", err)
	o.add("declare-ok", q.Messages, q.Consumers)
	for range 4 {
		d, ok, err := ch.Get("q", false)
		must(t, "get", err)
		o.add(ok, d.MessageCount, string(d.Body), d.DeliveryTag)
	}
	n, err := ch.QueuePurge("q", false)
	o.add("purge", n, seenErr(err, ""))
	n, err = ch.QueueDelete("q", false, false, false)
	o.add("delete", n, seenErr(err, ""))
	return o
}

// withoutReturns drops the returns of events.
func withoutReturns(events []any) []any { return withoutReturnsOf("", events) }

// withoutReturnsOf drops the returns of body from events ("": every return).
func withoutReturnsOf(body string, events []any) []any {
	var out []any
	for _, e := range events {
		if r, ok := e.(returnSeen); ok && (body == "" || r.Body == body) {
			continue
		}
		if r, ok := e.(returnSeen); ok {
			r.RoutingKey = "" // the address's form is the broker's own
			e = r
		}
		out = append(out, e)
	}
	return out
}

func connectionErrors(t *testing.T, conn transport.Connection) observation {
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	consume(t, ch, "q", "same", false)
	_, err := ch.Consume("q", "same", false, false, false, false, nil)
	var o observation
	o.add("reused consumer tag", seenErr(err, "reuse consumer tag"))
	e := await(t, closed, "the connection's close")
	o.add("connection closed", seenErr(e, "reuse consumer tag"))
	_, err = conn.Channel()
	o.add("channel after", seenErr(err, ""))
	return o
}

func consistentHashNoHeader(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "h", "x-consistent-hash", amqp.Table{"hash-header": "app-key"})
	for _, q := range []string{"h1", "h2"} {
		declare(t, ch, q, nil)
		bind(t, ch, q, "1", "h")
	}
	w := watch(ch)
	must(t, "confirm", ch.Confirm(false))
	for i := range 4 {
		must(t, "publish", ch.PublishWithContext(context.Background(), "h", fmt.Sprint(i), true, false, body(fmt.Sprint(i))))
	}
	var o observation
	o.add(w.untilConfirms(t, 4, "four confirms"))
	total, reached := 0, 0
	for _, q := range []string{"h1", "h2"} {
		if n := len(getAll(t, ch, q)); n > 0 {
			total += n
			reached++
		}
	}
	o.add("routed", total, "queues reached", reached)
	return o
}

func deleteMissing(t *testing.T, conn transport.Connection) observation {
	var o observation
	ch := channel(t, conn)
	err := ch.ExchangeDelete("missing", false, false)
	o.add("exchange", seenErr(err, ""))
	ch = channel(t, conn)
	n, err := ch.QueueDelete("missing", false, false, false)
	o.add("queue", n, seenErr(err, ""))
	err = ch.QueueUnbind("missing", "k", "amq.direct", nil)
	o.add("unbind a missing queue", seenErr(err, ""))
	declare(t, ch, "q", nil)
	err = ch.QueueUnbind("q", "k", "missing", nil)
	o.add("unbind from a missing exchange", seenErr(err, ""))
	ch = channel(t, conn)
	err = ch.QueueUnbind("q", "never-bound", "amq.direct", nil)
	o.add("unbind what was never bound", seenErr(err, ""))
	ch = channel(t, conn)
	err = ch.ExchangeUnbind("missing", "k", "amq.direct", false, nil)
	o.add("unbind a missing exchange", seenErr(err, ""))
	return o
}

func maxBytesRejectPublish(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", amqp.Table{"x-max-length-bytes": int32(5), "x-overflow": "reject-publish"})
	done := confirming(t, ch)
	for _, s := range []string{"abc", "de", "f"} {
		publish(t, ch, "", "q", body(s))
	}
	var o observation
	o.add(done(), getAll(t, ch, "q"))
	return o
}

func deadLetterCycle(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	// Rejected into itself through the default exchange: a cycle with a
	// rejection in it is not one RabbitMQ breaks.
	declare(t, ch, "self", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "self"})
	publish(t, ch, "", "self", body("m"))
	awaitCount(t, ch, "self", 1)
	var o observation
	for i := range 2 {
		d, ok, err := ch.Get("self", false)
		must(t, "get", err)
		o.add(ok, seen(d))
		if !ok {
			return o
		}
		must(t, "reject", d.Reject(false))
		if i == 0 {
			// It comes back: RabbitMQ does not break a cycle with a
			// rejection in it. An empty queue is only the moment between
			// the reject and the dead-lettered copy's arrival, so waiting
			// for "back or gone" read that moment as gone now and then.
			eventually(t, "the rejected message to come back", func() bool {
				q, err := ch.QueueDeclarePassive("self", false, false, false, false, nil)
				must(t, "passive", err)
				return q.Messages == 1
			})
		}
	}
	// Expired into itself with nothing else in the cycle: dropped.
	declare(t, ch, "loop", amqp.Table{"x-message-ttl": int32(10), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "loop"})
	declare(t, ch, "watch", nil)
	publish(t, ch, "", "loop", body("l"))
	eventually(t, "the expired message to leave its queue", func() bool {
		q, err := ch.QueueDeclarePassive("loop", false, false, false, false, nil)
		must(t, "passive", err)
		return q.Messages == 0
	})
	return o
}

func quorumRequeue(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", amqp.Table{"x-queue-type": "quorum"})
	done := confirming(t, ch)
	for _, s := range []string{"1", "2", "3"} {
		publish(t, ch, "", "q", body(s))
	}
	var o observation
	o.add(done())
	var ds []amqp.Delivery
	for range 2 {
		d, ok, err := ch.Get("q", false)
		must(t, "get", err)
		if !ok {
			t.Fatal("get: the queue is empty")
		}
		o.add(seen(d), d.MessageCount)
		ds = append(ds, d)
	}
	must(t, "nack 1", ds[0].Nack(false, true))
	awaitCount(t, ch, "q", 2)
	for range 3 {
		d, ok, err := ch.Get("q", true)
		must(t, "get", err)
		o.add(ok, seen(d), d.MessageCount)
	}
	must(t, "ack 2", ds[1].Ack(false))
	return o
}

func quorumArguments(t *testing.T, conn transport.Connection) observation {
	var o observation
	for i, args := range []amqp.Table{
		{"x-max-priority": int32(5)},
		{"x-message-ttl": int32(1000)},
		{"x-overflow": "reject-publish"},
		{"x-overflow": "reject-publish-dlx"},
		{"x-overflow": "drop-head", "x-max-length": int32(3)},
		{"x-single-active-consumer": true},
		{"x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish", "x-dead-letter-exchange": "dlx"},
		{"x-delivery-limit": int32(3)},
		{"x-max-length-bytes": int32(100)},
		{"x-queue-mode": "lazy"},
	} {
		ch := channel(t, conn)
		args["x-queue-type"] = "quorum"
		_, err := ch.QueueDeclare(fmt.Sprintf("q%d", i), true, false, false, false, args)
		o.add(fmt.Sprint(args), seenErr(err, "invalid arg"))
		if err == nil {
			ch.Close()
		}
	}
	ch := channel(t, conn)
	_, err := ch.QueueDeclare("transient", false, false, false, false, amqp.Table{"x-queue-type": "quorum"})
	o.add("not durable", seenErr(err, "invalid property"))
	return o
}

func quorumTTL(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	deadLetterRig(t, ch, "back")
	declare(t, ch, "wait", amqp.Table{"x-queue-type": "quorum", "x-message-ttl": int32(20), "x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "back"})
	ds := consume(t, ch, "dead", "", true)
	publish(t, ch, "", "wait", body("m"))
	msg := body("e")
	msg.Expiration = "10"
	publish(t, ch, "", "wait", msg)
	var o observation
	a := await(t, ds, "the first dead-lettered message")
	b := await(t, ds, "the second dead-lettered message")
	got := []deliverySeen{seen(a), seen(b)}
	if got[0].Body > got[1].Body {
		got[0], got[1] = got[1], got[0]
	}
	o.add(got)
	return o
}

func deleteCancels(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	for _, s := range []string{"1", "2"} {
		publish(t, ch, "", "q", body(s))
	}
	awaitCount(t, ch, "q", 2)
	c := consume(t, ch, "q", "c", false)
	var o observation
	d := await(t, c, "the first delivery")
	o.add(seen(d))
	other := channel(t, conn)
	n, err := other.QueueDelete("q", false, false, false)
	o.add("deleted", n, seenErr(err, ""))
	// The consumer's delivery channel closes once the broker cancels it.
	// Whether "2" reaches the client first is not observed: on the
	// network it was in flight, and arrives; the in-process broker had not
	// handed it over yet (see the package doc).
	for range c {
	}
	o.add("delivery channel closed")
	o.add("ack of a delivery from the deleted queue", seenErr(d.Ack(false), ""))
	_, err = ch.QueueDeclare("r", false, false, false, false, nil)
	o.add("channel still open", seenErr(err, ""))
	return o
}

func roundRobin(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	a := consume(t, ch, "q", "a", true)
	b := consume(t, ch, "q", "b", true)
	for _, s := range []string{"1", "2", "3", "4"} {
		publish(t, ch, "", "q", body(s))
	}
	var o observation
	for i := range 2 {
		o.add("a", string(await(t, a, fmt.Sprintf("delivery %d to a", i+1)).Body))
		o.add("b", string(await(t, b, fmt.Sprintf("delivery %d to b", i+1)).Body))
	}
	return o
}

func rejectPublishDLX(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	deadLetterRig(t, ch, "q")
	declare(t, ch, "q", amqp.Table{"x-max-length": int32(1), "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "dlx"})
	w := watch(ch)
	must(t, "confirm", ch.Confirm(false))
	for _, s := range []string{"1", "2"} {
		must(t, "publish", ch.PublishWithContext(context.Background(), "", "q", true, false, body(s)))
	}
	var o observation
	o.add(w.untilConfirms(t, 2, "two confirms"))
	o.add(getAll(t, ch, "q"))
	// The refused copy is dead-lettered as well as nacked.
	awaitCount(t, ch, "dead", 1)
	o.add(getAll(t, ch, "dead"))
	// A quorum queue takes the argument, but not its meaning.
	declare(t, ch, "qq", amqp.Table{"x-queue-type": "quorum", "x-max-length": int32(1), "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "q"})
	for _, s := range []string{"3", "4"} {
		must(t, "publish", ch.PublishWithContext(context.Background(), "", "qq", true, false, body(s)))
	}
	o.add(withoutReturns(w.untilConfirms(t, 4, "four confirms")))
	awaitCount(t, ch, "qq", 1)
	o.add(getAll(t, ch, "qq"))
	awaitCount(t, ch, "dead", 1)
	o.add(getAll(t, ch, "dead"))
	return o
}

// The delay levels' routing: headers exchanges whose bindings match a
// header's presence (an argument with no value) or its value, what they do
// not take going on through chained alternate exchanges, for messages
// published and dead-lettered alike.
func headersChain(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "end", "fanout", nil)
	exchange(t, ch, "h1", "headers", amqp.Table{"alternate-exchange": "end"})
	exchange(t, ch, "h2", "headers", amqp.Table{"alternate-exchange": "h1"})
	for _, q := range []string{"q1", "q2", "qany", "out"} {
		declare(t, ch, q, nil)
	}
	bind(t, ch, "out", "", "end")
	must(t, "bind q2", ch.QueueBind("q2", "", "h2", false, amqp.Table{"x-match": "all", "d2": nil}))
	must(t, "bind q1", ch.QueueBind("q1", "", "h1", false, amqp.Table{"x-match": "all", "d1": nil}))
	must(t, "bind qany", ch.QueueBind("qany", "", "h1", false, amqp.Table{"x-match": "any", "color": "red", "size": nil}))
	declare(t, ch, "wait", amqp.Table{"x-queue-type": "quorum", "x-message-ttl": int32(20), "x-dead-letter-exchange": "h2"})
	done := confirming(t, ch)
	for i, h := range []amqp.Table{{"d2": true}, {"d1": true}, {}, {"color": "red"}, {"color": "blue"}, {"size": int32(1)}, {"d2": true, "d1": true}, {"d1": true, "color": "red"}} {
		msg := body(fmt.Sprint("published ", i))
		msg.Headers = h
		publish(t, ch, "h2", "any.key", msg)
	}
	for i, h := range []amqp.Table{{"d2": true}, {"d1": true}, {}} {
		msg := body(fmt.Sprint("dead-lettered ", i))
		msg.Headers = h
		publish(t, ch, "", "wait", msg)
	}
	var o observation
	o.add(done())
	awaitCount(t, ch, "wait", 0)
	for _, q := range []string{"q1", "q2", "qany"} {
		o.add(q, bodies(getAll(t, ch, q)))
	}
	// What reached the fanout, the messages nobody bound: bodies only, the
	// dead-lettered ones carrying x-death.
	o.add("out", bodies(getAll(t, ch, "out")))
	return o
}

func bodies(ds []deliverySeen) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.Body)
	}
	sort.Strings(out)
	return out
}

// streamOffsets: each consumer of a stream reads it from its own
// x-stream-offset ("first", an offset, "next") and then what is appended,
// every delivery carrying its offset; an ack frees credit and removes
// nothing, so a later consumer from "first" reads it all again.
func streamOffsets(t *testing.T, conn transport.Connection) observation {
	ch := channel(t, conn)
	exchange(t, ch, "x", "topic", nil)
	_, err := ch.QueueDeclare("s", true, false, false, false, amqp.Table{"x-queue-type": "stream"})
	must(t, "declare stream", err)
	bind(t, ch, "s", "o.#", "x")
	done := confirming(t, ch)
	for _, k := range []string{"o.1", "o.2", "o.3"} {
		publish(t, ch, "x", k, body(k))
	}
	var o observation
	o.add(done())
	must(t, "qos", ch.Qos(10, 0, false))
	from := func(ch transport.Channel, tag string, start any) <-chan amqp.Delivery {
		ds, err := ch.Consume("s", tag, false, false, false, false, amqp.Table{"x-stream-offset": start})
		must(t, "consume from "+fmt.Sprint(start), err)
		return ds
	}
	read := func(c <-chan amqp.Delivery, what string, n int) {
		for i := range n {
			d := await(t, c, fmt.Sprintf("%s delivery %d", what, i+1))
			o.add(what, seen(d), toInt(d.Headers["x-stream-offset"]))
			must(t, "ack", d.Ack(false))
		}
	}
	first, one, next := from(ch, "first", "first"), from(ch, "one", int64(1)), from(ch, "next", "next")
	read(first, "first", 3)
	read(one, "offset 1", 2)
	publish(t, ch, "x", "o.4", body("o.4"))
	o.add(done())
	read(first, "first", 1)
	read(one, "offset 1", 1)
	read(next, "next", 1)
	other := channel(t, conn)
	must(t, "qos", other.Qos(10, 0, false))
	read(from(other, "again", "first"), "again from first", 4)
	// A stream cannot be read with basic.get: a connection error.
	_, _, err = channel(t, conn).Get("s", false)
	o.add(seenErr(err, "stream"))
	_, err = conn.Channel()
	o.add("channel after", err != nil)
	return o
}

// streamNack: before RabbitMQ 3.13 a stream refuses basic.nack and
// basic.reject with NOT_IMPLEMENTED, a connection error: the whole
// connection closes. From 3.13 either settles as an ack does: the credit
// is freed, and the stream delivers on.
func streamNack(t *testing.T, conn transport.Connection) observation {
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch := channel(t, conn)
	_, err := ch.QueueDeclare("s", true, false, false, false, amqp.Table{"x-queue-type": "stream"})
	must(t, "declare stream", err)
	done := confirming(t, ch)
	publish(t, ch, "", "s", body("one"))
	publish(t, ch, "", "s", body("two"))
	var o observation
	o.add(done())
	must(t, "qos", ch.Qos(1, 0, false))
	ds, err := ch.Consume("s", "c", false, false, false, false, amqp.Table{"x-stream-offset": "first"})
	must(t, "consume", err)
	d := await(t, ds, "the first delivery")
	o.add("first", seen(d))
	o.add("nack", seenErr(d.Nack(false, true), ""))
	// A round trip on the same channel: answered only after the nack.
	if _, err := ch.QueueDeclarePassive("s", true, false, false, false, amqp.Table{"x-queue-type": "stream"}); err != nil {
		o.add("connection closed", seenErr(await(t, closed, "the connection's close"), "basic.nack and basic.reject not supported by stream queues"))
		return o
	}
	o.add("second", seen(await(t, ds, "the second delivery, its credit freed")))
	return o
}
