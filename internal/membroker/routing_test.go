package membroker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The empty routing key has no words: "*" does not match it, "#" does.
func TestTopicEmptyKeyHasNoWords(t *testing.T) {
	b, ch := openBroker(t, "")
	exchange(t, ch, "t", "topic", nil)
	for q, pattern := range map[string]string{"star": "*", "hash": "#", "empty": ""} {
		declare(t, ch, q, nil)
		bind(t, ch, q, pattern, "t")
	}
	must(t, "publish", ch.PublishWithContext(context.Background(), "t", "", false, false, amqp.Publishing{Body: []byte("x")}))
	for q, want := range map[string]int{"star": 0, "hash": 1, "empty": 1} {
		if s, _ := b.Queue(q); s.Ready != want {
			t.Errorf("queue bound with %q holds %d messages published with the empty key, want %d", q, s.Ready, want)
		}
	}
}

// Unbinding what does not exist (the binding, its queue, its exchanges)
// succeeds and leaves the channel open, as on RabbitMQ.
func TestUnbindIsIdempotent(t *testing.T) {
	_, ch := openBroker(t, "")
	declare(t, ch, "q", nil)
	must(t, "unbind a missing queue", ch.QueueUnbind("missing", "k", "amq.direct", nil))
	must(t, "unbind from a missing exchange", ch.QueueUnbind("q", "k", "missing", nil))
	must(t, "unbind what was never bound", ch.QueueUnbind("q", "k", "amq.direct", nil))
	must(t, "unbind a missing exchange", ch.ExchangeUnbind("missing", "k", "amq.direct", false, nil))
	must(t, "declare on the same channel after", func() error { _, err := ch.QueueDeclare("r", false, false, false, false, nil); return err }())
}

// A message without the hash header is routed all the same, every such
// message to one queue, as RabbitMQ's consistent-hash exchange does.
func TestHashExchangeRoutesWithoutTheHeader(t *testing.T) {
	b, ch := openBroker(t, "")
	exchange(t, ch, "h", "x-consistent-hash", amqp.Table{"hash-header": "k"})
	for _, q := range []string{"h1", "h2", "h3"} {
		declare(t, ch, q, nil)
		bind(t, ch, q, "1", "h")
	}
	for i := range 9 {
		publish(t, ch, "h", fmt.Sprint(i), body("x"))
	}
	var counts []int
	for _, q := range []string{"h1", "h2", "h3"} {
		s, _ := b.Queue(q)
		counts = append(counts, s.Ready)
	}
	slices.Sort(counts)
	if !slices.Equal(counts, []int{0, 0, 9}) {
		t.Errorf("messages without the header per queue: %v, want all 9 in one", counts)
	}
}
