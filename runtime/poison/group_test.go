package poison_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

func failed(failure string) poison.Message {
	return poison.Message{Failure: failure, Headers: amqp.Table{runtime.HeaderFailure: failure}}
}

// Messages that failed for the same reason have the same cause, whatever
// ids, numbers, quoted values and array indices their failures quote.
func TestCauseMasksWhatVaries(t *testing.T) {
	same := [][]string{
		{
			`payload of order.placed does not match its schema: does not match schema order/placed.json: /lines/0/qty: minimum: got -1, want 1`,
			`payload of order.placed does not match its schema: does not match schema order/placed.json: /lines/12/qty: minimum: got -7, want 1`,
		},
		{
			`payload of order.placed does not match its schema: /customer/email: 'x@' is not valid 'email': missing domain`,
			`payload of order.placed does not match its schema: /customer/email: 'ana@' is not valid 'email': missing domain`,
		},
		{
			`order 0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11: sku "AB-12" unknown in warehouse 3`,
			`order 0190b2c4-8888-7c1a-9f5e-2b8d1c0e4a99: sku "ZZ-9" unknown in warehouse 41`,
		},
		{
			`KeyError: 'customer_id' at line 42`,
			`KeyError: 'order_id' at line 7`,
		},
		{`handler panicked: runtime error: index out of range [3] with length 2`, `handler panicked: runtime error: index out of range [5] with length 1`},
		{`charge ord-123 failed: card declined (ref 5f2b9c0d1e3a4b5c6d7e)`, `charge ord-9 failed: card declined (ref 0a1b2c3d4e5f60718293)`},
	}
	seen := map[string]int{}
	for i, group := range same {
		a, b := poison.CauseOf(failed(group[0])), poison.CauseOf(failed(group[1]))
		if a.ID() != b.ID() {
			t.Errorf("group %d: %+v and %+v differ", i, a, b)
		}
		if j, ok := seen[a.ID()]; ok {
			t.Errorf("groups %d and %d have the same id %s", j, i, a.ID())
		}
		seen[a.ID()] = i
	}
	for _, tc := range []struct {
		failure string
		want    poison.Cause
	}{
		{same[0][0], poison.Cause{Kind: poison.KindValidation, Problems: []poison.Problem{{Pointer: "/lines/*/qty", Rule: "minimum: got …, want 1"}}, Text: "/lines/*/qty: minimum: got …, want 1"}},
		{`payload of a.b does not match its schema: (root): required property "id"`, poison.Cause{Kind: poison.KindValidation, Problems: []poison.Problem{{Rule: `required property "id"`}}, Text: `(root): required property "id"`}},
		{same[3][0], poison.Cause{Kind: poison.KindHandler, Exception: "KeyError", Text: `KeyError: "…" at line <n>`}},
		{same[4][0], poison.Cause{Kind: poison.KindPanic, Exception: "runtime error", Text: "runtime error: index out of range [<n>] with length <n>"}},
		{`java.lang.IllegalStateException: no tenant for 42`, poison.Cause{Kind: poison.KindHandler, Exception: "java.lang.IllegalStateException", Text: "java.lang.IllegalStateException: no tenant for <n>"}},
		{same[5][0], poison.Cause{Kind: poison.KindHandler, Text: "charge ord-<n> failed: card declined (ref <hex>)"}},
		// A version the consumer does not read: the fact and the versions
		// are the cause, kept as they are; the payload's problems are not.
		{`order.paid version 3 cannot be read by a consumer that reads versions 1,2: payload of order.paid does not match its schema: /amount: required property "amount"`,
			poison.Cause{Kind: poison.KindVersion, Text: "order.paid version 3 cannot be read by a consumer that reads versions 1,2"}},
		// An upcast's failure: the consumer's code, its error masked.
		{`payload of order.placed version 1: upcast version 1: KeyError: no SKU for "AB-12"`,
			poison.Cause{Kind: poison.KindUpcast, Exception: "KeyError", Text: `upcast of order.placed version 1: KeyError: no SKU for "…"`}},
		{`payload of order.placed version 1: version 1, upcast: the result does not match the schema of the version the route reads: /sku: minLength: got 0, want 1`,
			poison.Cause{Kind: poison.KindUpcast, Text: "upcast of order.placed version 1: the result does not match the schema of the version the route reads: /sku: minLength: got <n>, want <n>"}},
	} {
		got := poison.CauseOf(failed(tc.failure))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("CauseOf(%q)\n got %+v\nwant %+v", tc.failure, got, tc.want)
		}
	}
	// What the runtime refuses before a handler runs, in its words.
	for _, failure := range []string{
		`body is not a JSON envelope: invalid character '<' looking for beginning of value`,
		`envelope incomplete: missing ["occurred_at"]`,
		`body is not valid UTF-8: invalid byte 0xff at offset 3; JSON messages must be UTF-8`,
		`body of 2000000 bytes is over the consumer's limit of 1048576 bytes (WithMaxBodySize); it was not decoded`,
		`content_encoding "gzip": the consumer decodes no content encoding; publish the JSON envelope as is, without content_encoding`,
		`content_type "text/plain": expected application/json (or none); the body is a JSON envelope`,
		`fact "item.removed" is not handled by consumer "picky"`,
		`decode item.added payload: /n: expected an integer`,
		`payload of item.added version 3: not JSON`,
	} {
		if got := poison.CauseOf(failed(failure)); got.Kind != poison.KindRefused {
			t.Errorf("CauseOf(%q).Kind = %q, want %q", failure, got.Kind, poison.KindRefused)
		}
	}
	// A handler's error that merely mentions such words stays the handler's.
	if got := poison.CauseOf(failed(`lookup failed: fact "x" is not handled by consumer "y"`)); got.Kind != poison.KindHandler {
		t.Errorf("a handler's error: kind %q, want %q", got.Kind, poison.KindHandler)
	}
	broker := poison.Message{Failure: "the broker dead-lettered it", Headers: amqp.Table{"x-death": []any{amqp.Table{"queue": "q", "reason": "delivery_limit"}}}}
	if got := poison.CauseOf(broker); got.Kind != poison.KindBroker || got.Text != "dead-lettered by the broker: delivery_limit" {
		t.Errorf("broker dead-lettered: %+v", got)
	}
	if got := poison.CauseOf(poison.Message{}); got.Kind != poison.KindUnknown {
		t.Errorf("no failure: %+v", got)
	}
}

// vhostLane is a consumer's topology in a vhost of the test's own.
func vhostLane(t *testing.T, prefix string) (*runtime.Conn, topology.Consumer) {
	t.Helper()
	url := testenv.VHost(t, prefix)
	ctx := context.Background()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: "events", Retry: "retry", Dead: "dead"},
		Consumers: []topology.ConsumerSpec{{Name: "mailer", Bindings: []string{"order.*"}, MaxAttempts: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Declare(ctx, top); err != nil {
		t.Fatal(err)
	}
	return conn, top.Consumers[0]
}

// causeWords make the 20 causes of fill distinct after masking.
var causeWords = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
	"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"}

// fill puts n poison copies in c's poison queue, message i with id m<i>
// and cause i%causes (of at most 20; half of them validation failures, half handler
// errors, each quoting values of its own), publishing with confirms
// pipelined.
func fill(t *testing.T, conn *runtime.Conn, c topology.Consumer, n, causes int) []string {
	t.Helper()
	ctx := context.Background()
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	const window = 2000
	var pending []*amqp.DeferredConfirmation
	wait := func() {
		for _, dc := range pending {
			if ok, err := dc.WaitContext(ctx); err != nil || !ok {
				t.Fatalf("publish not confirmed: %v", err)
			}
		}
		pending = pending[:0]
	}
	for i := range n {
		id := fmt.Sprintf("m%06d", i)
		ids[i] = id
		failure := failureOf(i, causes)
		key := "order.placed"
		if i%3 == 0 {
			key = "order.paid"
		}
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", c.PoisonQueue, true, false, amqp.Publishing{
			MessageId: id, ContentType: "application/json", DeliveryMode: amqp.Persistent,
			Body: fmt.Appendf(nil, `{"id":%q,"payload":{"sku":"S-%d"}}`, id, i),
			Headers: amqp.Table{
				runtime.HeaderAttempts: int64(1), runtime.HeaderFailure: failure, runtime.HeaderConsumer: c.Name,
				runtime.HeaderFailedAt:           time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339),
				runtime.HeaderOriginalRoutingKey: key, runtime.HeaderOriginalExchange: "events",
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if pending = append(pending, dc); len(pending) == window {
			wait()
		}
	}
	wait()
	return ids
}

// failureOf is the failure of fill's message i.
func failureOf(i, causes int) string {
	k := i % causes
	if k%2 == 0 {
		return fmt.Sprintf("payload of order.placed does not match its schema: /lines/%d/%s: minimum: got %d, want 1", i%9, causeWords[k], -i)
	}
	return fmt.Sprintf("order %08x-0000-4000-8000-%012x: warehouse %s refused sku %q after %d tries", i, i, causeWords[k], fmt.Sprint("S-", i), i%5)
}

// drainIDs takes every message of queue (acked: the end of the test) and
// returns their ids in queue order.
func drainIDs(t *testing.T, conn *runtime.Conn, queue string, n int) []string {
	t.Helper()
	ch, err := conn.OpenChannel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var ready int
	testenv.Eventually(t, fmt.Sprintf("%s to hold %d messages ready", queue, n), func() bool {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		ready = q.Messages
		return ready >= n
	})
	if ready != n {
		t.Fatalf("%s holds %d messages, want %d", queue, ready, n)
	}
	if err := ch.Qos(1000, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, n)
	for d := range deliveries {
		if ids = append(ids, d.MessageId); len(ids) == n {
			break
		}
	}
	return ids
}

// Grouping a poison queue of 50,000 messages finds its 20 causes, counts
// them exactly, and leaves all 50,000 in the queue in their order.
func TestGroupsOfALargeQueueLeaveItAsItWas(t *testing.T) {
	conn, c := vhostLane(t, "poisongroups")
	n := testenv.Load(t, 50_000, 2_000) / len(causeWords) * len(causeWords)
	ids := fill(t, conn, c, n, len(causeWords))

	start := time.Now()
	groups, err := poison.Groups(context.Background(), conn, c, poison.FromPoison)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("grouped %d messages into %d groups in %v", n, len(groups), time.Since(start).Round(time.Millisecond))

	if len(groups) != len(causeWords) {
		t.Fatalf("%d groups, want %d: %+v", len(groups), len(causeWords), groups)
	}
	total := 0
	for _, g := range groups {
		total += g.Count
		if g.Count != n/len(causeWords) {
			t.Errorf("group %s (%s) holds %d, want %d", g.ID, g.Cause.Text, g.Count, n/len(causeWords))
		}
		keys := 0
		for _, k := range g.RoutingKeys {
			keys += k.Count
		}
		if keys != g.Count || len(g.RoutingKeys) != 2 {
			t.Errorf("group %s: routing keys %+v do not add up to %d", g.ID, g.RoutingKeys, g.Count)
		}
		if g.FirstSeen.IsZero() || !g.LastSeen.After(g.FirstSeen) {
			t.Errorf("group %s: first seen %v, last seen %v", g.ID, g.FirstSeen, g.LastSeen)
		}
	}
	if total != n {
		t.Errorf("groups hold %d messages, want %d", total, n)
	}
	// Groups returns once every message is ready again, so that the next
	// scan finds them all.
	if ready := readyIn(t, conn, c.PoisonQueue); ready != n {
		t.Errorf("after grouping, %d messages are ready, want %d", ready, n)
	}
	again, err := poison.Groups(context.Background(), conn, c, poison.FromPoison)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(again, groups, func(a, b poison.Group) bool { return a.ID == b.ID && a.Count == b.Count }) {
		t.Errorf("grouping again gave other groups:\n%s\nfirst:\n%s", summary(again), summary(groups))
	}
	if got := drainIDs(t, conn, c.PoisonQueue, n); !slices.Equal(got, ids) {
		i := 0
		for i < len(got) && got[i] == ids[i] {
			i++
		}
		t.Fatalf("the queue's order changed: first difference at %d of %d", i, len(got))
	}
}

// Retrying a group of 10,000 sends each of its messages to the work queue
// exactly once, and leaves the other group in the poison queue, in order.
func TestRetryOfALargeGroupLosesAndDuplicatesNothing(t *testing.T) {
	conn, c := vhostLane(t, "poisonretry")
	n := testenv.Load(t, 20_000, 2_000) &^ 1 // even: two groups
	ids := fill(t, conn, c, n, 2)
	groups, err := poison.Groups(context.Background(), conn, c, poison.FromPoison)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups[0].Count != n/2 {
		t.Fatalf("groups: %+v", groups)
	}
	retried := groups[0]
	start := time.Now()
	done, err := poison.ReplayWith(context.Background(), conn, c, poison.Filter{Group: retried.ID}, poison.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("retried a group of %d of %d messages in %v", len(done), n, time.Since(start).Round(time.Millisecond))
	if len(done) != n/2 {
		t.Errorf("retried %d, want %d", len(done), n/2)
	}
	var want, stay []string
	for i, id := range ids {
		if poison.CauseOf(failed(failureOf(i, 2))).ID() == retried.ID {
			want = append(want, id)
		} else {
			stay = append(stay, id)
		}
	}
	got := drainIDs(t, conn, c.Queue, n/2)
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Fatalf("message %s is in the work queue %d times, want once", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("the work queue holds %d distinct ids, want %d", len(seen), len(want))
	}
	if left := drainIDs(t, conn, c.PoisonQueue, n/2); !slices.Equal(left, stay) {
		t.Errorf("the other group's messages are not all in the poison queue in order")
	}
}

// readyIn is how many messages queue holds ready.
func readyIn(t *testing.T, conn *runtime.Conn, queue string) int {
	t.Helper()
	ch, err := conn.OpenChannel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return q.Messages
}

// summary lists groups' ids and counts, one per line.
func summary(groups []poison.Group) string {
	var b strings.Builder
	for _, g := range groups {
		fmt.Fprintf(&b, "  %s %d\n", g.ID, g.Count)
	}
	return b.String()
}

// An export line leaves out x-delivery-count, which counts the scans that
// read the poison copy (the export's own included), and keeps every other
// header.
func TestExportLineLeavesOutTheScansCount(t *testing.T) {
	m := poison.Message{ID: "m-1", RoutingKey: "order.placed", Body: []byte(`{"id":"m-1","payload":{"order_id":"o-1"}}`),
		Headers: amqp.Table{runtime.HeaderAttempts: int64(3), "x-delivery-count": int64(4)}}
	line, err := poison.ExportLine(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"m-1","routing_key":"order.placed","headers":{"x-attempts":3},"payload":{"order_id":"o-1"}}` + "\n"
	if string(line) != want {
		t.Errorf("export line:\n%s\nwant:\n%s", line, want)
	}
	if _, ok := m.Headers["x-delivery-count"]; !ok {
		t.Error("the message's own headers lost x-delivery-count")
	}
}
