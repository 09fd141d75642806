package runtime

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
)

// A publisher that remembers at most 2 keys per generation forgets a key
// not published while 2 others were: the key's next fact starts again at
// 1 under a new source, which the ordered consumer takes for a new
// sequence, reporting neither a gap nor a step back, and the memory stays
// bounded however many keys are published.
func TestOrderedPublisherForgetsKeysWithinItsBound(t *testing.T) {
	b := newBroker(t, orderedSpec("seqbound"))
	conn := b.dial(Config{})
	pub, err := NewPublisher(conn, b.events(), WithSequenceKeys(2))
	if err != nil {
		t.Fatal(err)
	}
	// a and b fill the first generation; c starts the second, d fills it;
	// e starts the third and a, b are forgotten; a and b come back.
	order := []string{"a", "b", "a", "c", "d", "e", "a", "b", "a", "e"}
	perKey := map[string]int{}
	for _, k := range order {
		if _, err := pub.Publish(context.Background(), orderedFact(), item{SKU: k, N: perKey[k]}); err != nil {
			t.Fatal(err)
		}
		perKey[k]++
	}
	if n := pub.seq.tracked(); n > 4 {
		t.Errorf("the publisher remembers %d keys, want at most 2 generations of 2", n)
	}

	type seen struct {
		source string
		seq    int64
	}
	var mu sync.Mutex
	got := map[string][]seen{}
	h := newHandled()
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(orderedFact(), func(ctx context.Context, d Delivery, it item) error {
		return h.run(it, func() error {
			source, seq, _ := sequenceOf(d.Headers)
			mu.Lock()
			got[it.SKU] = append(got[it.SKU], seen{source, seq})
			mu.Unlock()
			return nil
		})
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	testenv.Eventually(t, "all facts handled", func() bool { return h.count() >= len(order) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for k, n := range perKey {
		if len(h.byKey[k]) != n {
			t.Errorf("key %s: handled %v, want %d facts", k, h.byKey[k], n)
		}
		for i, v := range h.byKey[k] {
			if v != i {
				t.Errorf("key %s: handled %v, want 0..%d in order", k, h.byKey[k], n-1)
				break
			}
		}
	}
	// a: 1, 2 under the first source; forgotten; then 1, 2 under another.
	a := got["a"]
	if len(a) != 4 || a[0].seq != 1 || a[1].seq != 2 || a[2].seq != 1 || a[3].seq != 2 ||
		a[0].source != a[1].source || a[2].source != a[3].source || a[1].source == a[2].source {
		t.Errorf("key a was numbered %v; want 1, 2 under one source, then 1, 2 under another", a)
	}
	if e := got["e"]; len(e) != 2 || e[1].seq != 2 || e[0].source != e[1].source {
		t.Errorf("key e, published again while remembered, was numbered %v; want 1, 2 under one source", e)
	}
	counts := conn.Counts(b.consumer(0).Name)
	for _, e := range []Event{SequenceGap, SequenceStepBack} {
		if n := counts.Get(e); n != 0 {
			t.Errorf("%s: counted %d, want 0: a forgotten key must read as a new sequence", e, n)
		}
	}
}

// The publisher's memory of keys stays within two generations of its bound
// whatever the number of keys, and a key published without a pause keeps
// one sequence.
func TestSequencerBound(t *testing.T) {
	s := newSequencer(100)
	var source string
	for i := range 10_000 {
		s.number(fmt.Sprintf("key-%d", i))
		src, n := s.number("hot")
		if i > 0 && (src != source || n != int64(i+1)) {
			t.Fatalf("after %d keys the hot key was numbered %d under %s, want %d under %s", i, n, src, i+1, source)
		}
		source = src
	}
	if n := s.tracked(); n > 200 {
		t.Errorf("remembers %d keys, want at most 200", n)
	}
}
