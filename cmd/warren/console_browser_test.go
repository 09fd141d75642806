package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/topology"
)

// browserDir holds the Node script and its package.json (playwright-core).
const browserDir = "testdata/browser"

// requireBrowser returns the Chromium and Node to drive the console with,
// skipping the test when they are missing (failing it under CI=true).
// .ci/run installs both: apt-get install chromium, npm ci in browserDir.
func requireBrowser(t *testing.T) (chromium, node string) {
	t.Helper()
	missing := func(what string, err error) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true, so this fails rather than skips): %v", what, err)
		}
		t.Skipf("%s: %v", what, err)
	}
	chromium = os.Getenv("WARREN_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("Chromium is not installed (apt-get install chromium, or set WARREN_CHROMIUM)", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("Node.js is not installed", err)
	}
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "playwright-core")); err != nil {
		missing("playwright-core is not installed (npm ci in cmd/warren/"+browserDir+")", err)
	}
	return chromium, node
}

// An operator's session in a real browser against warren console on the
// real broker: the overview shows the poison lane of order-mailer, the lane
// lists its messages with markup shown as text, an action without the
// token is refused, a replayed message reaches the running consumer, and a
// discarded one is kept with its reason in order-mailer.discarded; a
// saga's view lists its instances with their pending timeouts.
//
// WARREN_CONSOLE_SCREENSHOT=path writes a screenshot of the overview.
func TestConsoleInTheBrowser(t *testing.T) {
	chromium, node := requireBrowser(t)
	url := testenv.VHost(t, "console-browser")
	dir := "../../examples/catalogue/events"
	if code := Run(context.Background(), []string{"warren", "declare", "--url", url, dir}, io.Discard, os.Stderr); code != 0 {
		t.Fatalf("declare exited %d", code)
	}
	p, err := generator.Open(context.Background(), dir, generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := p.Model
	mailer, _ := m.Topology.Consumer("order-mailer")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	seed := seeder{t: t, conn: conn}
	seed.poison(mailer, "m-replay", `{"order_id":"o-1"}`, "mail server said 451")
	seed.poison(mailer, "m-discard", `{"order_id":"o-2"}`, "mail server said 451")
	seed.poison(mailer, "m-xss", `{"note":"<script>window.__xss=1</script>","html":"\"><img src=x onerror=window.__xss=2>"}`,
		`template failed near "><img src=x onerror=window.__xss=2>`)
	seed.poison(mailer, "m-keep", `{"order_id":"o-4"}`, "address rejected")
	// A cause of two messages, for the causes view.
	seed.poison(mailer, "m-group-1", `{"order_id":"o-5"}`, "smtp timeout after 3000 ms")
	seed.poison(mailer, "m-group-2", `{"order_id":"o-6"}`, "smtp timeout after 4500 ms")
	group := poison.CauseOf(poison.Message{Headers: amqp.Table{runtime.HeaderFailure: "smtp timeout after 1 ms"}}).ID()
	// The payload the page puts in place of m-keep's: valid for order.placed.
	edited := `{"order_id":"0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11","customer":{"customer_id":"c-1","email":"ana@example.com"},` +
		`"lines":[{"sku":"ABC-12","quantity":1,"unit_price":{"amount":1999,"currency":"EUR"}}],"total":{"amount":1999,"currency":"EUR"},` +
		`"payment":{"method":"card","last4":"4242"},"placed_at":"2026-12-01T09:00:00Z"}`
	if err := versionValidator(m)("order.placed", 0, []byte(edited)); err != nil {
		t.Fatalf("the edit the page makes is not valid: %v", err)
	}
	seed.publish(mailer.DeadExchange, mailer.Name, amqp.Publishing{MessageId: "m-raw", Body: []byte("<script>window.__xss=3</script>")})
	for range 3 { // work for a consumer that is not running: it stands out too
		seed.publish(m.Topology.Exchanges[0].Name, "catalogue.item.deleted", amqp.Publishing{Body: []byte(`{}`)})
	}

	handled := make(chan runtime.Delivery, 10)
	c, err := runtime.NewConsumer(conn, mailer, []runtime.Route{
		runtime.Handle(runtime.Fact{RoutingKey: "order.placed"}, func(ctx context.Context, d runtime.Delivery, _ map[string]any) error {
			handled <- d
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		if err := c.Run(ctx); err != nil {
			t.Error(err)
		}
	})

	outboxDSN := scheduledOutbox(t)
	sg := sagaInstances(t, outboxDSN)
	console := startConsole(t, url, dir, "--interval", "200ms", "--history", "1m", "--outbox-dsn", outboxDSN, "--saga-dsn", outboxDSN)
	script := exec.Command(node, "console.spec.mjs")
	script.Dir = browserDir
	script.Env = append(os.Environ(),
		"CHROMIUM="+chromium,
		"CONSOLE_URL="+console.page+"#token="+console.token,
		"CONSUMER="+mailer.Name, "REPLAY_ID=m-replay", "DISCARD_ID=m-discard", "XSS_ID=m-xss", "POISON_COUNT=7",
		"GROUP_ID="+group, "EDIT_ID=m-keep", "EDITED_PAYLOAD="+edited,
		"OUTBOX_PENDING=1", "OUTBOX_SCHEDULED=3",
		"SAGA=checkout", "SAGA_INSTANCE="+sg.instance, "SAGA_VERSION=4", "SAGA_TIMEOUT=payment-due", "SAGA_TIMEOUT_DUE="+sg.due,
		"SAGA_OTHER="+sg.other,
	)
	if shot := os.Getenv("WARREN_CONSOLE_SCREENSHOT"); shot != "" {
		abs, err := filepath.Abs(shot)
		if err != nil {
			t.Fatal(err)
		}
		script.Env = append(script.Env, "SCREENSHOT="+abs, "SCREENSHOT_WAIT=8000")
		// A backlog that grows while the page watches, for the chart.
		wg.Go(func() {
			for range 16 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(500 * time.Millisecond):
				}
				seed.publish(m.Topology.Exchanges[0].Name, "catalogue.item.deleted", amqp.Publishing{Body: []byte(`{}`)})
			}
		})
	}
	out, err := script.CombinedOutput()
	t.Logf("browser:\n%s", out)
	if err != nil {
		t.Fatalf("the browser script failed: %v", err)
	}

	// The broker's side of what the page did: the replayed message, the
	// group retried and the edited one reach the consumer.
	got := map[string]runtime.Delivery{}
	for len(got) < 4 {
		select {
		case d := <-handled:
			got[d.MessageID] = d
		case <-time.After(30 * time.Second):
			t.Fatalf("the consumer handled only %d of the 4 messages the page sent back", len(got))
		}
	}
	for _, id := range []string{"m-replay", "m-group-1", "m-group-2", "m-keep"} {
		if _, ok := got[id]; !ok {
			t.Errorf("the consumer did not handle %s; it handled %v", id, got)
		}
	}
	if h := got["m-keep"].Headers; h[poison.HeaderEditedAt] == nil || h[poison.HeaderEditedBy] != "warren console" {
		t.Errorf("the edited message came without the edit recorded: %v", h)
	}
	kept, err := poison.List(ctx, conn, topology.Consumer{Name: mailer.Name, Queue: mailer.Queue, PoisonQueue: poison.DiscardQueue(mailer)}, poison.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || kept[0].ID != "m-discard" || kept[0].Headers[poison.HeaderDiscardReason] != "a test order, placed twice" ||
		kept[1].ID != "m-keep" || !strings.HasPrefix(kept[1].Headers[poison.HeaderDiscardReason].(string), "edited") {
		t.Errorf("order-mailer.discarded holds %+v", kept)
	}
	left, err := poison.List(ctx, conn, mailer, poison.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 {
		t.Errorf("the poison lane keeps %d messages, want 2 (m-xss, m-raw)", len(left))
	}
}

// scheduledOutbox returns the DSN of a SQLite outbox holding one fact
// due now and two scheduled for later.
func scheduledOutbox(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, ob := openSQLiteOutbox(t, path)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, w := range []*outbox.Outbox{ob, ob.In(time.Hour), ob.In(24 * time.Hour)} {
		if _, err := w.Write(ctx, tx, runtime.Fact{RoutingKey: "order.placed"}, map[string]string{"order_id": "o-9"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return "sqlite:" + path
}

// sagaSeed is what sagaInstances put in the saga instances table.
type sagaSeed struct {
	instance string // the oldest running instance of checkout, with markup in its id
	due      string // when its payment-due timeout is due, as the console's JSON says it
	other    string // the newest running instance, which the page lists first when asked
}

// sagaInstances adds the instances of saga checkout to the SQLite file of
// dsn: the oldest running one, version 4, waiting on its payment-due
// timeout scheduled in the outbox (in two hours); a newer running one;
// a completed one.
func sagaInstances(t *testing.T, dsn string) sagaSeed {
	t.Helper()
	db, ob := openSQLiteOutbox(t, strings.TrimPrefix(dsn, "sqlite:"))
	ctx := context.Background()
	guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: sqldb.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	store, err := saga.NewStore(sqldb.FromSQL(db), saga.Config{Dialect: sqldb.SQLite, Guard: guard, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Millisecond)
	seed := sagaSeed{instance: `o-7 "><img src=x onerror=window.__xss=4>`, due: due.Format(time.RFC3339Nano), other: "o-9"}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	id, err := ob.At(due).Write(ctx, tx, saga.TimeoutFact("checkout"), map[string]string{"instance": seed.instance, "timeout": "payment-due"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for _, r := range [][]any{
		{seed.instance, 4, `{"payment-due":"` + id + `"}`, nil, now - 3_600_000},
		{"o-8", 2, `{}`, nil, now - 1_800_000},
		{seed.other, 1, `{}`, nil, now - 60_000},
		{"o-6", 6, `{}`, now, now - 7_200_000},
	} {
		if _, err := tx.Exec(`INSERT INTO warren_saga_instances (saga, instance, version, state, timeouts, completed_at, created_at, updated_at) VALUES ('checkout', ?, ?, '{}', ?, ?, ?, ?)`, append(r, now)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return seed
}

// seeder puts messages on the broker the way the runtime would.
type seeder struct {
	t    *testing.T
	conn *runtime.Conn
}

func (s seeder) publish(exchange, key string, msg amqp.Publishing) {
	s.t.Helper()
	ch, err := s.conn.OpenChannel(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		s.t.Fatal(err)
	}
	msg.DeliveryMode = amqp.Persistent
	dc, err := ch.PublishWithDeferredConfirm(exchange, key, true, false, msg)
	if err != nil || !dc.Wait() {
		s.t.Fatalf("publish to %s/%s: %v", exchange, key, err)
	}
}

// poison puts a fact in c's poison queue as the runtime leaves it there.
func (s seeder) poison(c topology.Consumer, id, payload, failure string) {
	s.publish(c.DeadExchange, c.Name, amqp.Publishing{
		MessageId: id, ContentType: "application/json", Type: "order.placed",
		Body: fmt.Appendf(nil, `{"id":%q,"occurred_at":"2026-12-01T09:00:00Z","payload":%s}`, id, payload),
		Headers: amqp.Table{
			runtime.HeaderAttempts: int64(5), runtime.HeaderFailure: failure,
			runtime.HeaderFailedAt: time.Now().UTC().Format(time.RFC3339), runtime.HeaderConsumer: c.Name,
			runtime.HeaderOriginalRoutingKey: "order.placed", runtime.HeaderOriginalExchange: "catalogue.events",
			runtime.HeaderFactVersion: int64(1), "x-note": `"><img src=x onerror=window.__xss=2>`,
		},
	})
}

// The console in a real browser shows a stream consumer's place in its
// stream in its row: nothing stored before it ran, with the stream's
// every fact to read (it starts at the first), then its lag at the tail.
func TestConsoleStreamLagInTheBrowser(t *testing.T) {
	chromium, node := requireBrowser(t)
	b, port, _ := streamCase(t)
	history := b.name("history")
	console := startConsole(t, b.url, b.dir, "--read-only", "--interval", "200ms", "--stream-port", strconv.Itoa(port))
	script := exec.Command(node, "stream.spec.mjs")
	script.Dir = browserDir
	script.Env = append(os.Environ(), "CHROMIUM="+chromium, "CONSOLE_URL="+console.page,
		"CONSUMER="+history, "STREAM="+b.name("log"), "TAIL=4")
	stdin, err := script.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	script.Stdout, script.Stderr = &out, &out
	if err := script.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the page's first reading", func() bool { return strings.Contains(out.String(), "waiting for the consumer") })
	readUnder(t, b, port, history, 4)
	if _, err := io.WriteString(stdin, "consumer ran\n"); err != nil {
		t.Fatal(err)
	}
	err = script.Wait()
	t.Logf("browser:\n%s", out.String())
	if err != nil {
		t.Fatalf("the browser script failed: %v", err)
	}
}
