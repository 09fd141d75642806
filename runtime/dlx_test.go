package runtime

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// A delay queue keeps a message whose way back is missing instead of
// dropping it: x-dead-letter-strategy at-least-once (with x-overflow
// reject-publish, without which RabbitMQ silently falls back to
// at-most-once) is in effect. The broker would deliver it once the work
// queue is back, but only after its dead-letter worker's retry interval
// (180s by default), so the test reads the queue's state instead: the
// expired message is held by the dead-letter worker, not gone.
func TestDelayQueueKeepsWhatItCannotDeadLetter(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "keeper", Bindings: []string{"item.#"}, Backoff: testLadder[:1], MaxAttempts: 2})
	spec := b.consumer(0)
	tier := spec.Tiers[0].Queue
	admin := testenv.BrokerAdmin(t)
	ch := b.confirmChannel(t)
	defer ch.Close()
	if _, err := ch.QueueDelete(spec.Queue, false, false, false); err != nil {
		t.Fatal(err)
	}
	// Confirmed, so the queue holds the message before its state is read.
	dc, err := ch.PublishWithDeferredConfirm(spec.RetryExchange, tier, true, false, amqp.Publishing{Body: []byte(`{}`), DeliveryMode: amqp.Persistent})
	if err != nil || !dc.Wait() {
		t.Fatalf("publish to the delay queue: %v", err)
	}
	testenv.Eventually(t, "the expired message held for dead-lettering, or dropped", func() bool {
		o := quorumOverview(t, admin, tier)
		if o["num_messages"] == 0 {
			t.Fatalf("the delay queue dropped a message it could not dead-letter: %v", o)
		}
		return o["num_discard_checked_out"]+o["num_discarded"] == 1
	})
}

var overviewField = regexp.MustCompile(`(num_\w+) => (\d+)`)

// quorumOverview reads the numeric fields of a quorum queue's internal
// state (rabbit_fifo:overview/1) through rabbitmqctl eval.
func quorumOverview(t testing.TB, admin *testenv.Admin, queue string) map[string]int {
	t.Helper()
	expr := `{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<"/">>, queue, <<"` + queue + `">>)),
		{Name, _} = amqqueue:get_pid(Q),
		ra:local_query({Name, node()}, fun rabbit_fifo:overview/1).`
	out := admin.Run(t, "eval", expr)
	if strings.Contains(out, ":undef,") {
		t.Fatalf("cannot read the quorum queue's state on this broker version:\n%s", out)
	}
	fields := map[string]int{}
	for _, m := range overviewField.FindAllStringSubmatch(out, -1) {
		fields[m[1]], _ = strconv.Atoi(m[2])
	}
	if _, ok := fields["num_messages"]; !ok {
		t.Fatalf("unexpected quorum queue state:\n%s", out)
	}
	return fields
}
