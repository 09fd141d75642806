package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// mailerService runs consumer {{mailer}} of a brokerCase on the real
// runtime. Its handler fails (transiently) while failing is set, and
// records every delivery it handles successfully.
type mailerService struct {
	failing atomic.Bool
	mu      sync.Mutex
	handled []runtime.Delivery
}

func startMailer(t *testing.T, b *brokerCase) (*mailerService, *runtime.Publisher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{b.url}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	spec, _ := b.model.Topology.Consumer(b.name("mailer"))
	s := &mailerService{}
	s.failing.Store(true)
	placed := runtime.Fact{RoutingKey: "order.placed", Version: 1}
	type order struct {
		SKU string `json:"sku"`
	}
	c, err := runtime.NewConsumer(conn, spec, []runtime.Route{runtime.Handle(placed, func(ctx context.Context, d runtime.Delivery, o order) error {
		if s.failing.Load() {
			return fmt.Errorf("smtp: mailbox of %s unavailable", o.SKU)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.handled = append(s.handled, d)
		return nil
	})}, runtime.WithShutdownTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("consumer: %v", err)
		}
	})
	pub, err := runtime.NewPublisher(conn, b.name("events"))
	if err != nil {
		t.Fatal(err)
	}
	return s, pub
}

func (s *mailerService) handledIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, d := range s.handled {
		ids = append(ids, d.MessageID)
	}
	slices.Sort(ids)
	return ids
}

// The whole operator's path on a real consumer: facts fail until they are
// poisoned, replay --list shows them and changes nothing, a replay by id
// moves that one alone, a full replay the rest; the consumer, fixed, handles
// each once, as a first attempt of the fact it is, and the other consumer
// bound to the same routing key never sees a replay.
func TestReplayThroughTheRuntime(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	mailer, audit := b.name("mailer"), b.name("audit")
	mailerPoison := topology.PoisonQueue(mailer)
	svc, pub := startMailer(t, b)
	ctx := context.Background()
	var ids []string
	for _, sku := range []string{"a", "b", "c"} {
		id, err := pub.Publish(ctx, runtime.Fact{RoutingKey: "order.placed", Version: 1}, map[string]string{"sku": sku})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	testenv.Eventually(t, "three facts in "+mailerPoison+" after three attempts each", func() bool { return b.depth(mailerPoison) == 3 })
	if n := b.depth(audit); n != 3 {
		t.Fatalf("%s holds %d facts, want the 3 published", audit, n)
	}

	code, stdout, stderr := b.run("replay", "--consumer", mailer, "--list", b.dir)
	if code != 0 {
		t.Fatalf("replay --list: exit %d, %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "ID ROUTING KEY ATTEMPTS FAILED AT FAILURE" {
		t.Fatalf("replay --list printed:\n%s\nwant a header and 3 rows", stdout)
	}
	var listed []string
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < 4 || f[1] != "order.placed" || f[2] != "3" {
			t.Errorf("row %q: want id, order.placed, 3 attempts", line)
			continue
		}
		if _, err := time.Parse(time.RFC3339, f[3]); err != nil {
			t.Errorf("row %q: failed-at: %v", line, err)
		}
		listed = append(listed, f[0])
		sku := []string{"a", "b", "c"}[slices.Index(ids, f[0])]
		if want := "smtp: mailbox of " + sku + " unavailable"; !strings.HasSuffix(line, want) {
			t.Errorf("row %q: want the failure %q", line, want)
		}
	}
	if !slices.Equal(listed, ids) {
		t.Errorf("listed %v, want %v in order", listed, ids)
	}
	if n := b.depth(mailerPoison); n != 3 {
		t.Fatalf("poison depth %d after --list, want 3: listing must not remove", n)
	}

	svc.failing.Store(false)
	code, stdout, stderr = b.run("replay", "--consumer", mailer, "--id", ids[1], b.dir)
	if want := fmt.Sprintf("replayed %s order.placed\n1 message moved from %s to %s\n", ids[1], mailerPoison, mailer); code != 0 || stdout != want {
		t.Fatalf("replay --id: exit %d, stderr %s, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	testenv.Eventually(t, "the consumer to handle the replayed fact", func() bool { return len(svc.handledIDs()) == 1 })
	if got := svc.handledIDs(); got[0] != ids[1] {
		t.Errorf("handled %v, want %s alone", got, ids[1])
	}
	if n := b.depth(mailerPoison); n != 2 {
		t.Errorf("poison depth %d after replaying one, want 2", n)
	}

	code, stdout, stderr = b.run("replay", "--consumer", mailer, b.dir)
	if code != 0 || !strings.HasSuffix(stdout, "2 messages moved from "+mailerPoison+" to "+mailer+"\n") {
		t.Fatalf("replay: exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
	testenv.Eventually(t, "the consumer to handle every replayed fact", func() bool { return len(svc.handledIDs()) >= 3 })
	want := slices.Sorted(slices.Values(ids))
	if got := svc.handledIDs(); !slices.Equal(got, want) {
		t.Errorf("handled %v, want each of %v once", got, want)
	}
	svc.mu.Lock()
	for _, d := range svc.handled {
		if d.Attempt != 1 || d.RoutingKey != "order.placed" || d.Consumer != mailer {
			t.Errorf("replayed delivery %+v: want attempt 1 of order.placed for %s", d, mailer)
		}
	}
	svc.mu.Unlock()
	if n := b.depth(mailerPoison); n != 0 {
		t.Errorf("poison depth %d, want 0", n)
	}
	if n := b.depth(audit); n != 3 {
		t.Errorf("%s holds %d facts after the replays, want the 3 originals: a replay reached another consumer", audit, n)
	}

	code, stdout, _ = b.run("replay", "--consumer", mailer, b.dir)
	if code != 0 || stdout != "nothing to replay in "+mailerPoison+"\n" {
		t.Errorf("replay of an empty lane: exit %d, stdout %q", code, stdout)
	}
	code, _, stderr = b.run("replay", "--consumer", mailer, "--id", "no-such-id", b.dir)
	if code != 1 || stderr != fmt.Sprintf("warren replay: no message with id \"no-such-id\" in %s\n", mailerPoison) {
		t.Errorf("replay of an unknown id: exit %d, stderr %q", code, stderr)
	}
}

// --list --format json carries every field, and the body as JSON.
func TestReplayListJSON(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	audit := b.name("audit")
	b.publish(b.name("dead"), audit, amqpPoisonCopy("m-1", "order.paid", b.name("events"), "bad\nnews\x1b[31m", 1))

	code, stdout, stderr := b.run("replay", "--consumer", audit, "--list", "--format", "json", b.dir)
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	var got []poisonJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(got) != 1 {
		t.Fatalf("got %d messages, want 1:\n%s", len(got), stdout)
	}
	m := got[0]
	var body bytes.Buffer
	_ = json.Compact(&body, m.Body)
	if m.ID != "m-1" || m.RoutingKey != "order.paid" || m.Exchange != b.name("events") || m.Attempts != 1 || m.Failure != "bad\nnews\x1b[31m" ||
		m.FailedAt == nil || !m.FailedAt.Equal(time.Date(2024, 5, 1, 10, 0, 5, 0, time.UTC)) || body.String() != `{"id":"m-1","payload":{"sku":"x"}}` {
		t.Errorf("got %+v", m)
	}

	// The text table keeps the failure on one line and drops the escape.
	_, stdout, _ = b.run("replay", "--consumer", audit, "--list", b.dir)
	if !strings.HasSuffix(stdout, "  bad news [31m\n") {
		t.Errorf("text row does not end in the cleaned failure:\n%q", stdout)
	}
}

func TestReplayErrors(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	mailer := b.name("mailer")
	// Not declared yet.
	code, _, stderr := b.run("replay", "--consumer", mailer, "--list", b.dir)
	if want := fmt.Sprintf("warren replay: list %s.poison: %s\n", mailer, b.missing(mailer+".poison", "--url")); code != 1 || stderr != want {
		t.Errorf("undeclared: exit %d, stderr %q, want %q", code, stderr, want)
	}
	code, _, stderr = b.run("replay", "--consumer", "nobody", b.dir)
	if code != 2 || !strings.Contains(stderr, `consumer "nobody": not in the manifest; expected one of `+b.name("audit")+", "+mailer) {
		t.Errorf("unknown consumer: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := run(t, "replay", b.dir); code != 2 || !strings.HasPrefix(stderr, "warren replay: expected --consumer NAME\nusage: warren replay --consumer NAME") {
		t.Errorf("no --consumer: exit %d, stderr %q", code, stderr)
	}
	// An empty id (an unset shell variable) would select the whole lane.
	if code, _, stderr := b.run("replay", "--consumer", mailer, "--id", "m1", "--id", "", b.dir); code != 2 || !strings.HasPrefix(stderr, `warren replay: --id "": expected a message id`) {
		t.Errorf(`--id "": exit %d, stderr %q; want a usage error`, code, stderr)
	}
	// Options after the directory are read as well.
	code, _, stderr = b.run("replay", b.dir, "--consumer", mailer, "--list")
	if want := fmt.Sprintf("warren replay: list %s.poison: %s\n", mailer, b.missing(mailer+".poison", "--url")); code != 1 || stderr != want {
		t.Errorf("options after the directory: exit %d, stderr %q, want %q", code, stderr, want)
	}
	code, stdout, _ := run(t, "replay", "--help")
	if code != 0 || !strings.Contains(stdout, "warren replay --consumer order-mailer --list ./events") {
		t.Errorf("replay --help: exit %d, no example in:\n%s", code, stdout)
	}
}

// TestReplayFromTheUnroutableLane: a delayed fact that fell due with no
// consumer bound waits in the unroutable lane; --list shows it under its
// own routing key, a replay while still nobody binds it is refused and
// leaves it there, and once a queue binds its key a replay publishes it
// through the events exchange, to that queue, as the fact it is.
func TestReplayFromTheUnroutableLane(t *testing.T) {
	b := newBrokerCase(t, statusDelayedSchemas, "events", "retry", "dead", "svc")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	events := b.name("events")
	lane := topology.UnroutableQueue(events)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{b.url}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pub, err := runtime.NewPublisher(conn, events)
	if err != nil {
		t.Fatal(err)
	}
	id, err := pub.In(20*time.Millisecond).Publish(ctx, runtime.Fact{RoutingKey: "order.shipped"}, map[string]string{"order_id": "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the fact in the unroutable lane", func() bool { return b.depth(lane) == 1 })

	if code, _, stderr := b.run("replay", "--from", "unroutable", "--consumer", b.name("svc"), b.dir); code != 2 || !strings.Contains(stderr, "expected no --consumer") {
		t.Errorf("--from unroutable with --consumer: exit %d, %q; want a usage error", code, stderr)
	}
	code, stdout, _ := b.run("replay", "--from", "unroutable", "--list", b.dir)
	if code != 0 || !strings.Contains(stdout, id) || !strings.Contains(stdout, "order.shipped") {
		t.Errorf("--list: exit %d\n%s", code, stdout)
	}
	code, _, stderr := b.run("replay", "--from", "unroutable", b.dir)
	if code != 1 || !strings.Contains(stderr, "unroutable") || b.depth(lane) != 1 {
		t.Errorf("replay with nobody bound: exit %d, %q, %d left in the lane; want a refusal and the fact kept", code, stderr, b.depth(lane))
	}

	// The consumer of order.shipped exists now.
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclare(testenv.Name("shipping"), false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, "order.shipped", events, false, nil); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = b.run("replay", "--from", "unroutable", b.dir)
	if code != 0 || !strings.Contains(stdout, "replayed "+id+" order.shipped") || !strings.Contains(stdout, "to exchange "+events) {
		t.Fatalf("replay: exit %d\n%s\n%s", code, stdout, stderr)
	}
	d, ok, err := ch.Get(q.Name, true)
	if err != nil || !ok {
		t.Fatalf("the shipping queue got nothing: %v", err)
	}
	if d.MessageId != id || d.RoutingKey != "order.shipped" || d.Headers[runtime.HeaderDueAt] == nil {
		t.Errorf("replayed %s with key %s, headers %v; want %s as order.shipped with its due time", d.MessageId, d.RoutingKey, d.Headers, id)
	}
	if n := b.depth(lane); n != 0 {
		t.Errorf("%d facts left in the lane", n)
	}
}
