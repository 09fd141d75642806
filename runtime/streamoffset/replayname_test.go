package streamoffset_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// sharedTopology has two stream consumers of one stream, "ledger" and
// "audit", and "mailer", which reads a queue.
func sharedTopology(t *testing.T) (top topology.Topology, ledger, audit, mailer topology.Consumer) {
	t.Helper()
	stream := testenv.Name("shared-log")
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: stream, Bindings: []string{"item.#"}, MaxAge: time.Hour}},
		Consumers: []topology.ConsumerSpec{
			{Name: testenv.Name("ledger"), Bindings: []string{"item.#"}, Stream: stream},
			{Name: testenv.Name("audit"), Bindings: []string{"item.#"}, Stream: stream},
			{Name: testenv.Name("mailer"), Bindings: []string{"item.#"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return top, top.Consumers[0], top.Consumers[1], top.Consumers[2]
}

// A replay's offset name is refused when it is the consumer's own, or
// the own name of another consumer of the topology: of the same stream,
// whose offset it would position, or one that reads a queue, whose guard
// claims it would share. Refused before the broker is asked (no Broker).
func TestReplayRefusesAnotherConsumersName(t *testing.T) {
	top, ledger, audit, mailer := sharedTopology(t)
	for _, tc := range []struct{ name, want string }{
		{ledger.Name, "is the consumer's own"},
		{audit.Name, `is the own name of consumer "` + audit.Name + `": it keeps its own offset on stream "` + ledger.Stream + `"`},
		{mailer.Name, `is the own name of consumer "` + mailer.Name + `": its guard claims facts under it`},
	} {
		err := streamoffset.CheckReplayName(top, ledger, tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckReplayName(%q): %v, want %q", tc.name, err, tc.want)
		}
		_, err = streamoffset.PlanReplay(context.Background(), nil, streamoffset.Replay{Consumer: ledger, Name: tc.name, Topology: &top}, time.Second)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PlanReplay under %q: %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := streamoffset.CheckReplayName(top, ledger, ledger.Name+".rebuild"); err != nil {
		t.Errorf("a fresh name: %v", err)
	}
}

// runtime.WithOffsetName refuses the own name of another consumer of the
// Conn's topology, as warren replay does: under audit's name a reader of
// ledger would read and store audit's offset; under mailer's its guard
// would claim facts as mailer.
func TestWithOffsetNameRefusesAnotherConsumersName(t *testing.T) {
	top, ledger, audit, mailer := sharedTopology(t)
	_, conn := dialDeclared(t, top)
	routes := []runtime.Route{runtime.Handle(runtime.Fact{RoutingKey: "item.added", Version: 1}, func(context.Context, runtime.Delivery, map[string]any) error { return nil })}
	for _, tc := range []struct{ name, want string }{
		{audit.Name, `WithOffsetName("` + audit.Name + `"): the own name of consumer "` + audit.Name + `" of the Conn's topology: it keeps its own offset on stream "` + ledger.Stream + `"`},
		{mailer.Name, `WithOffsetName("` + mailer.Name + `"): the own name of consumer "` + mailer.Name + `" of the Conn's topology: its guard claims facts`},
	} {
		if _, err := runtime.NewConsumer(conn, ledger, routes, runtime.WithOffsetName(tc.name)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WithOffsetName(%q): %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := runtime.NewConsumer(conn, ledger, routes, runtime.WithOffsetName(ledger.Name+".rebuild")); err != nil {
		t.Errorf("a fresh name: %v", err)
	}
}

// Apply marks whose replay a name is, so that on a stream two consumers
// read a reading can tell (LagReader.ReplayOf), and another consumer's
// replay under the name is refused even when nothing else is stored (a
// replay from the first fact without a limit). A limit the stream cannot
// fill ends the replay at the tail as planned, and the plan says so.
func TestReplayMarksItsConsumer(t *testing.T) {
	top, ledger, audit, _ := sharedTopology(t)
	ctx, conn := dialDeclared(t, top)
	storeFacts(ctx, t, conn, ledger.Stream, 5)
	keys := []string{ledger.Stream} // storeFacts publishes with the stream's name as routing key

	name := ledger.Name + ".all"
	p, err := streamoffset.PlanReplay(ctx, conn, streamoffset.Replay{Consumer: ledger, Keys: keys, Name: name, Topology: &top}, streamoffset.DefaultTailWait)
	if err != nil {
		t.Fatal(err)
	}
	if p.Consumer != ledger.Name || p.First != 0 || p.Until != -1 || p.Short() {
		t.Fatalf("plan %+v", p)
	}
	if err := streamoffset.Apply(ctx, conn, p); err != nil {
		t.Fatal(err)
	}
	r := streamoffset.NewLagReader(conn)
	defer r.Close()
	if got, err := r.ReplayOf(ctx, ledger.Stream, name, []string{ledger.Name, audit.Name}); err != nil || !slices.Equal(got, []string{ledger.Name}) {
		t.Errorf("ReplayOf: %v, %v; want [%s]", got, err, ledger.Name)
	}
	if got, err := r.ReplayOf(ctx, ledger.Stream, "nobody", []string{ledger.Name, audit.Name}); err != nil || len(got) != 0 {
		t.Errorf("ReplayOf a name no replay marked: %v, %v", got, err)
	}
	_, err = streamoffset.PlanReplay(ctx, conn, streamoffset.Replay{Consumer: audit, Keys: keys, Name: name, Topology: &top}, streamoffset.DefaultTailWait)
	if !errors.Is(err, streamoffset.ErrNotFresh) || !strings.Contains(err.Error(), `taken by a replay of consumer "`+ledger.Name+`"`) {
		t.Errorf("audit's replay under ledger's replay's name: %v, want it not fresh", err)
	}
	// The same consumer again: nothing but its own mark is stored.
	if _, err := streamoffset.PlanReplay(ctx, conn, streamoffset.Replay{Consumer: ledger, Keys: keys, Name: name, Topology: &top}, streamoffset.DefaultTailWait); err != nil {
		t.Errorf("ledger's replay under its own replay's name: %v", err)
	}

	p, err = streamoffset.PlanReplay(ctx, conn, streamoffset.Replay{Consumer: ledger, Keys: keys, Name: ledger.Name + ".short",
		From: topology.Start{Kind: topology.StartOffset, Offset: 2}, Limit: 20, Topology: &top}, streamoffset.DefaultTailWait)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Short() || p.Handled() != 3 || p.Limit != 20 || p.Until != p.Tail || p.Tail != 4 {
		t.Errorf("a limit of 20 from offset 2 of 5 facts: short %v, %d handled, limit %d, until %d, tail %d; want short, 3, 20, until the tail 4", p.Short(), p.Handled(), p.Limit, p.Until, p.Tail)
	}
}

// A fact of the stream that the consumer's bindings match but that its
// code has no route for is the consumer's in a replay's plan (it counts
// against the limit), marked NoRoute: its reader poisons it as not
// handled, as the consumer would.
func TestReplayPlanMarksAFactWithoutARoute(t *testing.T) {
	top, ledger, _, _ := sharedTopology(t)
	ctx, conn := dialDeclared(t, top)
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"item.added", "item.voided"} {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, top.Exchanges[0].Name, key, true, false, amqp.Publishing{Body: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("publish %s: confirmed %v, %v", key, ok, err)
		}
	}
	p, err := streamoffset.PlanReplay(ctx, conn, streamoffset.Replay{Consumer: ledger, Keys: []string{"item.added"}, Name: ledger.Name + ".unknown", Limit: 2, Topology: &top}, streamoffset.DefaultTailWait)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range p.Facts {
		got = append(got, fmt.Sprintf("%s handled=%v noroute=%v", f.RoutingKey, f.Handled, f.NoRoute))
	}
	if want := []string{"item.added handled=true noroute=false", "item.voided handled=true noroute=true"}; !slices.Equal(got, want) || p.Handled() != 2 || p.Short() {
		t.Fatalf("plan facts %q (%d handled, short %v), want %q", got, p.Handled(), p.Short(), want)
	}
}

// dialDeclared dials the test broker with top, which Dial declares and the
// test's end deletes, and returns the Conn and a context for the test's
// calls; both end with the test.
func dialDeclared(t *testing.T, top topology.Topology) (context.Context, *runtime.Conn) {
	t.Helper()
	raw := testenv.AMQPURL(t)
	deleteAtEnd(t, raw, top)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: testenv.StreamPort(t), Topology: &top})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return ctx, conn
}
