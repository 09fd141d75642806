package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

const testToken = "0123456789abcdef0123456789abcdef"

// XSS payloads a poison message may carry; the console must show them as
// text.
const (
	scriptPayload = `<script>window.__xss=1</script>`
	attrPayload   = `"><img src=x onerror=window.__xss=2>`
)

// consoleCase is a console over a private vhost of the real broker, with
// the topology of two consumers declared.
type consoleCase struct {
	t    *testing.T
	conn *runtime.Conn
	top  topology.Topology
	srv  *Server
	http *httptest.Server
}

func newConsole(t *testing.T, mutate func(*Config)) *consoleCase {
	t.Helper()
	return newConsoleOf(t, topology.Spec{}, mutate)
}

// newConsoleOf is newConsole over spec with the two consumers added.
func newConsoleOf(t *testing.T, spec topology.Spec, mutate func(*Config)) *consoleCase {
	t.Helper()
	url := testenv.VHost(t, "console")
	spec.Consumers = []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.*"}, Backoff: []time.Duration{20 * time.Millisecond}},
		{Name: "indexer", Bindings: []string{"item.#"}, MaxAttempts: 1},
	}
	top, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	cfg := Config{
		Broker: conn, Topology: top, BrokerURL: url, Token: testToken,
		Interval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Catalogue: []byte("# catalogue\n"),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Sample(ctx)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &consoleCase{t: t, conn: conn, top: top, srv: srv, http: hs}
}

func (c *consoleCase) consumer(name string) topology.Consumer {
	tc, ok := c.top.Consumer(name)
	if !ok {
		c.t.Fatalf("no consumer %s", name)
	}
	return tc
}

// publish sends msg through exchange with key and waits for the confirm.
func (c *consoleCase) publish(exchange, key string, msg amqp.Publishing) {
	c.t.Helper()
	ch, err := c.conn.OpenChannel(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		c.t.Fatal(err)
	}
	msg.DeliveryMode = amqp.Persistent
	dc, err := ch.PublishWithDeferredConfirm(exchange, key, true, false, msg)
	if err != nil || !dc.Wait() {
		c.t.Fatalf("publish to %s/%s: %v", exchange, key, err)
	}
}

// poisonCopy puts a message in the consumer's poison queue the way the
// runtime does, with payload as the envelope's payload.
func (c *consoleCase) poisonCopy(consumer, id, key, failure, payload string) {
	tc := c.consumer(consumer)
	c.publish(tc.DeadExchange, tc.Name, amqp.Publishing{
		MessageId: id, ContentType: "application/json", Type: key,
		Body: fmt.Appendf(nil, `{"id":%q,"occurred_at":"2026-05-01T10:00:00Z","payload":%s}`, id, payload),
		Headers: amqp.Table{
			runtime.HeaderAttempts: int64(3), runtime.HeaderFailure: failure,
			runtime.HeaderFailedAt: "2026-05-01T10:00:05Z", runtime.HeaderConsumer: tc.Name,
			runtime.HeaderOriginalRoutingKey: key, runtime.HeaderOriginalExchange: topology.DefaultExchanges.Events,
			"x-note": attrPayload,
		},
	})
}

func (c *consoleCase) depth(queue string) int {
	c.t.Helper()
	ch, err := c.conn.OpenChannel(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return q.Messages
}

// do sends a request to the console and returns the status and body.
func (c *consoleCase) do(method, path string, body string, header map[string]string) (int, string) {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.http.URL+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// getJSON GETs path and decodes its JSON answer into v.
func (c *consoleCase) getJSON(path string, v any) {
	c.t.Helper()
	status, body := c.do(http.MethodGet, path, "", nil)
	if status != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		c.t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// action POSTs a replay or discard with the token and JSON content type.
func (c *consoleCase) action(path, body string) (int, actionJSON) {
	c.t.Helper()
	status, raw := c.do(http.MethodPost, path, body, map[string]string{TokenHeader: testToken, "Content-Type": "application/json"})
	var out actionJSON
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		c.t.Fatalf("POST %s: %v\n%s", path, err, raw)
	}
	return status, out
}

func amqpPublishing(body string) amqp.Publishing { return amqp.Publishing{Body: []byte(body)} }

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
