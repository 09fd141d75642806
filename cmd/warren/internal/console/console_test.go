package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/cmd/warren/internal/liveversions"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// The overview reads the figures from the broker: work waiting with no
// consumer and poison above zero make a consumer stand out, a quiet one
// does not, and without the management API the page says it cannot show
// the redelivery rate.
func TestOverviewFiguresAndAlerts(t *testing.T) {
	t.Parallel()
	c := newConsole(t, nil)
	for range 2 {
		c.publish(topology.DefaultExchanges.Events, "order.placed", amqp.Publishing{Body: []byte(`{}`)})
	}
	c.poisonCopy("indexer", "p1", "item.added", "boom", `{"sku":"a"}`)

	var o overviewJSON
	testenv.Eventually(t, "the figures of both consumers", func() bool {
		c.getJSON("/api/overview", &o)
		return len(o.Consumers) == 2 && o.Consumers[0].Work == 2 && o.Consumers[1].Poison == 1
	})
	mailer, indexer := o.Consumers[0], o.Consumers[1]
	if mailer.Consumer != "mailer" || mailer.Consumers != 0 || !slices.Equal(mailer.Alerts, []string{"work waiting and no consumer"}) {
		t.Errorf("mailer: %+v", mailer)
	}
	if indexer.Work != 0 || !slices.Equal(indexer.Alerts, []string{"poison waiting"}) {
		t.Errorf("indexer: %+v", indexer)
	}
	if len(mailer.History) == 0 || mailer.History[len(mailer.History)-1][1] != 2 {
		t.Errorf("mailer's history does not end with its work depth 2: %v", mailer.History)
	}
	if mailer.Rates != nil || len(o.Unshown) != 1 || !strings.Contains(o.Unshown[0], "redelivery rate") {
		t.Errorf("without the management API the page must say it cannot show the redelivery rate: rates %v, unshown %q", mailer.Rates, o.Unshown)
	}
	if strings.Contains(o.Broker, "guest:guest") {
		t.Errorf("the broker URL is shown with its password: %s", o.Broker)
	}
}

// A queue that is not declared is reported, not shown as zero.
func TestOverviewMissingQueues(t *testing.T) {
	t.Parallel()
	c := newConsole(t, nil)
	ch, err := c.conn.OpenChannel(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueueDelete(c.consumer("indexer").PoisonQueue, false, false, false); err != nil {
		t.Fatal(err)
	}
	var o overviewJSON
	testenv.Eventually(t, "the missing poison queue", func() bool {
		c.getJSON("/api/overview", &o)
		return len(o.Consumers[1].Missing) == 1
	})
	if o.Consumers[1].Missing[0] != "indexer.poison" || !slices.Contains(o.Consumers[1].Alerts, "queues not declared") {
		t.Errorf("indexer: %+v", o.Consumers[1])
	}
}

// Poison messages reach the page as JSON strings: a payload, a failure or
// a header that is markup arrives escaped (encoding/json writes < as
// \u003c), and decodes to the exact text the message holds.
func TestPoisonLaneIsText(t *testing.T) {
	t.Parallel()
	c := newConsole(t, nil)
	payload := `{"note":` + jsonString(scriptPayload) + `,"html":` + jsonString(attrPayload) + `}`
	c.poisonCopy("mailer", "m1", "order.placed", "failed: "+attrPayload, payload)
	c.publish(c.consumer("mailer").DeadExchange, "mailer", amqp.Publishing{MessageId: "raw", Body: []byte(scriptPayload)})

	status, raw := c.do(http.MethodGet, "/api/consumers/mailer/poison", "", nil)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, raw)
	}
	if strings.Contains(raw, "<script") || strings.Contains(raw, "<img") {
		t.Errorf("the answer holds markup unescaped:\n%s", raw)
	}
	var p poisonJSON
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 2 {
		t.Fatalf("%d messages, want 2", len(p.Messages))
	}
	m := p.Messages[0]
	if m.ID != "m1" || m.RoutingKey != "order.placed" || m.Attempts != 3 || m.FailedAt != "2026-05-01T10:00:05Z" || m.Failure != "failed: "+attrPayload {
		t.Errorf("message: %+v", m)
	}
	if !m.PayloadOK || !strings.Contains(m.Payload, "\n  \"note\": "+jsonString(scriptPayload)) {
		t.Errorf("payload is not the pretty-printed envelope payload:\n%s", m.Payload)
	}
	if !slices.Contains(m.Headers, headerJSON{Name: "x-note", Value: attrPayload}) {
		t.Errorf("headers: %v", m.Headers)
	}
	if r := p.Messages[1]; r.ID != "raw" || r.PayloadOK || r.Payload != scriptPayload {
		t.Errorf("a body that is not JSON is shown as its text: %+v", r)
	}
}

// Replay and discard change the broker only with the token, from the
// console's own origin, as JSON, on a console that is not read-only; each
// refusal leaves the poison queue as it was.
func TestActionsNeedTheTokenAndTheOrigin(t *testing.T) {
	t.Parallel()
	c := newConsole(t, nil)
	c.poisonCopy("mailer", "m1", "order.placed", "boom", `{}`)
	body := `{"ids":["m1"]}`
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", map[string]string{"Content-Type": "application/json"}, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Content-Type": "application/json", TokenHeader: strings.Repeat("x", 32)}, http.StatusUnauthorized},
		{"another site", map[string]string{"Content-Type": "application/json", TokenHeader: testToken, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"another origin", map[string]string{"Content-Type": "application/json", TokenHeader: testToken, "Origin": "http://evil.example"}, http.StatusForbidden},
		{"a form post", map[string]string{"Content-Type": "application/x-www-form-urlencoded", TokenHeader: testToken}, http.StatusUnsupportedMediaType},
	} {
		status, raw := c.do(http.MethodPost, "/api/consumers/mailer/replay", body, tc.header)
		if status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, status, raw, tc.want)
		}
	}
	if got := c.depth("mailer.poison"); got != 1 {
		t.Fatalf("after refused actions the poison queue holds %d, want 1", got)
	}
	status, out := c.action("/api/consumers/mailer/replay", body)
	if status != http.StatusOK || len(out.Done) != 1 || out.Summary != "replayed 1 message from mailer.poison to mailer" {
		t.Errorf("replay with the token: %d %+v", status, out)
	}
}

// A read-only console refuses every change, token or not.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(cfg *Config) { cfg.ReadOnly = true })
	c.poisonCopy("mailer", "m1", "order.placed", "boom", `{}`)
	status, out := c.action("/api/consumers/mailer/replay", `{"ids":["m1"]}`)
	if status != http.StatusForbidden || !strings.Contains(out.Error, "read-only") {
		t.Errorf("%d %+v", status, out)
	}
	if got := c.depth("mailer.poison"); got != 1 {
		t.Errorf("poison queue holds %d, want 1", got)
	}
}

// Replay moves the chosen messages to the work queue; discard moves them
// to <consumer>.discarded with the reason, and refuses without one; each
// answer says what it did.
func TestReplayAndDiscard(t *testing.T) {
	t.Parallel()
	c := newConsole(t, nil)
	for _, id := range []string{"m1", "m2", "m3", "m4"} {
		c.poisonCopy("mailer", id, "order.placed", "boom", `{}`)
	}
	t.Cleanup(func() {
		ch, err := c.conn.OpenChannel(t.Context())
		if err == nil {
			_, _ = ch.QueueDelete("mailer.discarded", false, false, false)
			_, _ = ch.QueueDelete(poison.HistoryQueue(topology.Consumer{Name: "mailer"}), false, false, false)
			_ = ch.Close()
		}
	})
	status, out := c.action("/api/consumers/mailer/replay", `{"ids":["m1","m3","gone"]}`)
	if status != http.StatusOK || len(out.Done) != 2 || !slices.Equal(out.Missing, []string{"gone"}) ||
		out.Summary != "replayed 2 messages from mailer.poison to mailer; 1 selected message was no longer in mailer.poison" {
		t.Errorf("replay: %d %+v", status, out)
	}
	if got := c.depth("mailer"); got != 2 {
		t.Errorf("work queue holds %d, want 2", got)
	}
	status, out = c.action("/api/consumers/mailer/discard", `{"ids":["m2"],"reason":"  "}`)
	if status != http.StatusBadRequest || !strings.Contains(out.Error, "reason") {
		t.Errorf("discard without a reason: %d %+v", status, out)
	}
	status, out = c.action("/api/consumers/mailer/discard", `{"ids":["m2"],"reason":"test order from the load test","by":"erin"}`)
	if status != http.StatusOK || out.Summary != "discarded 1 message from mailer.poison to mailer.discarded" {
		t.Errorf("discard: %d %+v", status, out)
	}
	if got := c.depth("mailer.poison"); got != 1 {
		t.Errorf("poison queue holds %d, want 1 (m4)", got)
	}
	msgs, err := poison.List(t.Context(), c.conn, topology.Consumer{Name: "mailer", Queue: "mailer", PoisonQueue: "mailer.discarded"}, poison.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].ID != "m2" || msgs[0].Headers[poison.HeaderDiscardReason] != "test order from the load test" || msgs[0].Headers[poison.HeaderDiscardedBy] != "erin" {
		t.Errorf("mailer.discarded: %+v", msgs)
	}
	status, out = c.action("/api/consumers/nobody/replay", `{"ids":["m4"]}`)
	if status != http.StatusNotFound {
		t.Errorf("unknown consumer: %d %+v", status, out)
	}
	// Both actions are in the lane's history, with who acted.
	history, err := poison.History(t.Context(), c.conn, topology.Consumer{Name: "mailer", Queue: "mailer", PoisonQueue: "mailer.poison"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range history {
		got = append(got, fmt.Sprintf("%s %s %d %s", a.By, a.Action, a.Count, a.ID))
	}
	if want := []string{"warren console retry 2 ", "erin discard 1 m2"}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
}

// With a loopback listener only the names of the loopback address are
// served, so a page whose name resolves to 127.0.0.1 cannot read it.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(cfg *Config) { cfg.AllowedHosts = []string{"127.0.0.1:1"} })
	status, _ := c.do(http.MethodGet, "/api/overview", "", nil)
	if status != http.StatusMisdirectedRequest {
		t.Errorf("Host %s: %d, want 421", strings.TrimPrefix(c.http.URL, "http://"), status)
	}
}

// The page and its assets come from the binary, with a content security
// policy that allows nothing from elsewhere and no inline script.
func TestPageIsEmbeddedAndLockedDown(t *testing.T) {
	t.Parallel()
	c := newConsole(t, nil)
	for _, path := range []string{"/", "/assets/app.js", "/assets/style.css", "/api/topology.svg"} {
		req, _ := http.NewRequest(http.MethodGet, c.http.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != http.StatusOK || !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: %d, CSP %q", path, resp.StatusCode, csp)
		}
	}
	_, page := c.do(http.MethodGet, "/", "", nil)
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Errorf("the page refers to another site:\n%s", page)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The overview carries, per consumer, the versions it reads of the facts
// with several.
func TestOverviewShowsVersionsPerConsumer(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(cfg *Config) {
		cfg.Versions = []liveversions.Reads{{Consumer: "mailer", Queues: []string{cfg.Topology.Consumers[0].Queue}, Fact: "order.placed", Schema: []int{1, 2}, Published: []int{1, 2}}}
	})
	var o overviewJSON
	testenv.Eventually(t, "the figures of both consumers", func() bool {
		c.getJSON("/api/overview", &o)
		return len(o.Consumers) == 2 && o.Consumers[0].ReadAt != nil
	})
	// Without the management API the schema's build stands for the live
	// processes: reading version 2, the mailer does not need version 1.
	if o.Consumers[0].Versions != "order.placed 1-2, published 1,2: version 1 can be retired" || o.Consumers[1].Versions != "" {
		t.Errorf("versions: mailer %q, indexer %q", o.Consumers[0].Versions, o.Consumers[1].Versions)
	}
}

// A batch consumer's figures carry its batch, for the page to show.
func TestOverviewShowsABatchConsumer(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(cfg *Config) {
		cfg.Topology.Consumers[1].Batch = topology.Batch{Size: 50, Wait: 200 * time.Millisecond}
	})
	var o overviewJSON
	testenv.Eventually(t, "the figures of both consumers", func() bool {
		c.getJSON("/api/overview", &o)
		return len(o.Consumers) == 2 && o.Consumers[0].ReadAt != nil
	})
	mailer, indexer := o.Consumers[0], o.Consumers[1]
	if mailer.Batch != nil || indexer.Batch == nil || *indexer.Batch != (batchFig{Size: 50, Wait: "200ms"}) {
		t.Errorf("batches: mailer %+v, indexer %+v; want the indexer's only", mailer.Batch, indexer.Batch)
	}
}
