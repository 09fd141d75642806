package poison_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/poison"
)

// Two operators read the same lane at once, each from a connection of
// their own (two terminals, or warren console beside warren replay): the
// second reading waits for the first to hand the lane back, and then sees
// every message in its order, rather than a lane that looks empty or
// short because the first holds its messages.
func TestAReadingWaitsForAnotherReadingOfTheLane(t *testing.T) {
	l := newLane(t)
	const n = 40
	var want []string
	for i := range n {
		id := fmt.Sprintf("m%02d", i)
		want = append(want, id)
		l.poisonCopy(l.a, id, "item.added", "boom", 2)
	}
	other := dial(t)
	ctx := context.Background()

	// The first reading holds the whole lane while it reads: its callback
	// waits at the first message until the test lets it go on.
	reading, goOn := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		seen := 0
		first <- poison.Each(ctx, l.conn, l.a, poison.FromPoison, poison.Filter{}, func(poison.Message) error {
			if seen++; seen == 1 {
				close(reading)
				<-goOn
			}
			return nil
		})
	}()
	<-reading

	type listing struct {
		ids []string
		err error
	}
	second := make(chan listing, 1)
	go func() {
		got, err := poison.List(ctx, other, l.a, poison.Filter{})
		second <- listing{ids(got), err}
	}()
	// A listing that does not wait answers at once, from a lane whose
	// messages the first reading holds; give it that chance before the
	// first reading goes on.
	var got listing
	select {
	case got = <-second:
		close(goOn)
	case <-time.After(500 * time.Millisecond):
		close(goOn)
		got = <-second
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if !slices.Equal(got.ids, want) {
		t.Fatalf("the second reading listed %d messages %v, want all %d in order", len(got.ids), got.ids, n)
	}
	if d := l.depth(l.a.PoisonQueue); d != n {
		t.Errorf("poison depth after both readings = %d, want %d", d, n)
	}
	// The turn ends with the reading: nothing of it stays on the broker.
	if _, err := l.channel().QueueDeclarePassive(poison.ReadingQueue(l.a.PoisonQueue), false, false, true, false, nil); err == nil {
		t.Errorf("%s is still there after both readings ended", poison.ReadingQueue(l.a.PoisonQueue))
	}
}

// Several readings started at the same moment, on connections of their
// own and two on one connection (warren console answering two pages at
// once), each list the whole lane in its order, and the lane is as it
// was.
func TestReadingsAtOnceEachSeeTheWholeLane(t *testing.T) {
	l := newLane(t)
	const n, readers, rounds = 60, 4, 3
	var want []string
	for i := range n {
		id := fmt.Sprintf("m%02d", i)
		want = append(want, id)
		l.poisonCopy(l.a, id, "item.added", fmt.Sprintf("boom %d", i%4), 2)
	}
	conns := []*lane{l, l}
	for range readers - 2 {
		conns = append(conns, &lane{t: t, conn: dial(t), top: l.top, a: l.a, b: l.b})
	}
	ctx := context.Background()
	for round := range rounds {
		var wg sync.WaitGroup
		got := make([][]string, readers)
		errs := make([]error, readers)
		for i, r := range conns {
			wg.Go(func() {
				msgs, err := poison.List(ctx, r.conn, l.a, poison.Filter{})
				got[i], errs[i] = ids(msgs), err
			})
		}
		wg.Wait()
		for i := range readers {
			if errs[i] != nil {
				t.Fatalf("round %d, reader %d: %v", round, i, errs[i])
			}
			if !slices.Equal(got[i], want) {
				t.Errorf("round %d, reader %d listed %d messages, want all %d in order: %v", round, i, len(got[i]), n, got[i])
			}
		}
	}
	if d := l.depth(l.a.PoisonQueue); d != n {
		t.Errorf("poison depth after the readings = %d, want %d", d, n)
	}
}
