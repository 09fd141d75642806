package runtime

import (
	"context"
	"fmt"
	"sync"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// Conn.Figures gives a consumer of a super stream its lag per partition,
// where its offsets are kept (the super stream itself is an exchange, and
// reading its "tail" failed the whole reading), and their sum as
// StreamLag: unknown while a partition holding facts has nothing stored,
// 0 once the group read everything, and a fact written into one partition
// afterwards shows in that partition's lag alone.
func TestSuperStreamFiguresLagPerPartition(t *testing.T) {
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	conn := b.dial(Config{})
	c := b.consumer(0)
	figures := func() Figures {
		t.Helper()
		fig, err := conn.Figures(context.Background(), c)
		if err != nil {
			t.Fatalf("Figures of a super stream's consumer: %v", err)
		}
		if len(fig.PartitionLags) != len(c.Partitions) {
			t.Fatalf("Figures.PartitionLags: %d, want one per partition (%d)", len(fig.PartitionLags), len(c.Partitions))
		}
		return fig
	}
	pub, _ := NewPublisher(conn, b.events())
	for i := range 12 {
		mustPublish(t, pub, f, item{SKU: fmt.Sprintf("k%d", i)})
	}
	if fig := figures(); fig.StreamLag != nil {
		t.Fatalf("Figures.StreamLag with facts and nothing stored: %d, want nil", *fig.StreamLag)
	}

	var mu sync.Mutex
	handled := 0
	cons, err := NewConsumer(conn, c, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		mu.Lock()
		defer mu.Unlock()
		handled++
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, cons)
	testenv.Eventually(t, "the group handles all 12", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled == 12
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	atTail := func(fig Figures) bool {
		for _, l := range fig.PartitionLags {
			if l == nil || *l != 0 {
				return false
			}
		}
		return fig.StreamLag != nil && *fig.StreamLag == 0
	}
	testenv.Eventually(t, "every partition at its tail", func() bool { return atTail(figures()) })

	// One fact straight into the second partition.
	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	dc, err := ch.PublishWithDeferredConfirm("", c.Partitions[1], false, false, amqp.Publishing{Body: []byte(`{}`)})
	if err != nil || !dc.Wait() {
		t.Fatalf("publish into %s: %v", c.Partitions[1], err)
	}
	fig := figures()
	for i, l := range fig.PartitionLags {
		switch {
		case l == nil:
			t.Errorf("partition %s: lag not known, stored offset and tail expected", c.Partitions[i])
		case i == 1 && *l == 0:
			t.Errorf("partition %s: lag 0 after a fact written into it", c.Partitions[i])
		case i != 1 && *l != 0:
			t.Errorf("partition %s: lag %d, want 0: nothing was written into it", c.Partitions[i], *l)
		}
	}
	if fig.StreamLag == nil || fig.PartitionLags[1] == nil || *fig.StreamLag != *fig.PartitionLags[1] {
		t.Errorf("Figures.StreamLag %v: want the sum of the partitions' lags, %v", fig.StreamLag, fig.PartitionLags[1])
	}
}
