package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
)

// Two instances of an ordered consumer, on two nodes, share its 4 shards
// while facts of 40 keys flow in publish order per key; the node that leads
// the shard queues, and that one instance is connected to, crashes. The
// other instance takes that one's shards (and the instance comes back
// through a third node): every confirmed fact is handled, and each key's
// facts were handled for the first time in publish order. A fact handled
// again (its ack lost with the node) repeats, never overtakes.
func TestClusterOrderedConsumerKeepsOrderWhenANodeIsLost(t *testing.T) {
	const keys, perKey = 40, 150
	b, c := newClusterBroker(t, orderedSpec("orderedloss"))
	spec := b.consumer(0)
	victim := c.Queue(t, spec.Shards[0], "").Leader
	var others []string
	for _, n := range c.Nodes {
		if n.Name != victim {
			others = append(others, n.Name)
		}
	}
	rec := &logRecorder{}
	pubConn := b.dial(Config{URLs: c.URLsFrom(others[0])})
	pub, err := NewPublisher(pubConn, b.events())
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	handled := map[string][]int{} // per key, every handling in order
	var perInstance [2]atomic.Int32
	for i, node := range []string{victim, others[1]} {
		cfg := Config{URLs: c.URLsFrom(node)}
		if i == 0 {
			cfg.Logger = slog.New(rec)
		}
		conn := b.dial(cfg)
		cons, err := NewConsumer(conn, spec, []Route{Handle(orderedFact(), func(ctx context.Context, d Delivery, it item) error {
			perInstance[i].Add(1)
			mu.Lock()
			handled[it.SKU] = append(handled[it.SKU], it.N)
			mu.Unlock()
			return nil
		})}, withBalanceInterval(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		run(t, cons)
	}

	// One goroutine per group of keys publishes them in order; a publish
	// that fails is sent again (the same fact), so every fact is confirmed.
	var confirmed, failures atomic.Int32
	var wg sync.WaitGroup
	f := orderedFact()
	for w := range 4 {
		wg.Go(func() {
			for n := range perKey {
				for k := w; k < keys; k += 4 {
					for {
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						_, err := pub.Publish(ctx, f, item{SKU: fmt.Sprintf("key-%03d", k), N: n})
						cancel()
						if err == nil {
							break
						}
						failures.Add(1)
					}
					confirmed.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	testenv.Eventually(t, "a third of the facts confirmed", func() bool { return confirmed.Load() >= keys*perKey/3 })
	testenv.Eventually(t, "both instances at work", func() bool { return perInstance[0].Load() > 0 && perInstance[1].Load() > 0 })
	before := [2]int32{perInstance[0].Load(), perInstance[1].Load()}
	c.Kill(t, victim)
	killedAt := confirmed.Load()
	wg.Wait()
	if killedAt >= keys*perKey {
		t.Fatalf("the node died after every fact was published; it proved nothing")
	}

	firsts := func() (map[string][]int, int) {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]int{}
		again := 0
		for key, ns := range handled {
			seen := map[int]bool{}
			for _, n := range ns {
				if seen[n] {
					again++
					continue
				}
				seen[n] = true
				out[key] = append(out[key], n)
			}
		}
		return out, again
	}
	testenv.Eventually(t, "every confirmed fact handled", func() bool {
		got, _ := firsts()
		n := 0
		for _, ns := range got {
			n += len(ns)
		}
		return n >= keys*perKey
	})
	got, again := firsts()
	for k := range keys {
		key := fmt.Sprintf("key-%03d", k)
		ns := got[key]
		for i, n := range ns {
			if n != i {
				t.Errorf("key %s: fact %d handled for the first time in place %d (%v...); want publish order", key, n, i, ns[:min(len(ns), i+3)])
				break
			}
		}
		if len(ns) != perKey {
			t.Errorf("key %s: %d of %d facts handled (lost %d)", key, len(ns), perKey, perKey-len(ns))
		}
	}
	t.Logf("%d facts confirmed (%d publishes failed and were sent again), %d at the crash of %s (shard leader, instance 0's node); handled: instance 0 %d before and %d in all, instance 1 %d before and %d in all; %d handled again, lost 0",
		keys*perKey, failures.Load(), killedAt, victim, before[0], perInstance[0].Load(), before[1], perInstance[1].Load(), again)
	if lost := rec.values("broker connection lost; reconnecting", "url"); len(lost) == 0 {
		t.Error("instance 0's connection never dropped: the crash missed it")
	}
}
