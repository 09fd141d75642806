package golden_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	mixeddrafts "github.com/warrenbus/warren/golden/mixed-drafts/want"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
)

// archiver records the IssueClosed facts it receives.
type archiver struct {
	mu     sync.Mutex
	issues []mixeddrafts.IssueClosed
}

func (a *archiver) HandleObjectFinalized(context.Context, runtime.Delivery, mixeddrafts.ObjectFinalized) error {
	return nil
}

func (a *archiver) HandleShipmentDispatched(context.Context, runtime.Delivery, mixeddrafts.ShipmentDispatched) error {
	return nil
}

func (a *archiver) HandleIssueClosed(_ context.Context, _ runtime.Delivery, fact mixeddrafts.IssueClosed) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.issues = append(a.issues, fact)
	return nil
}

func (a *archiver) received() []mixeddrafts.IssueClosed {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]mixeddrafts.IssueClosed(nil), a.issues...)
}

// A payload carrying RFC 6570 URL templates, in a field whose format
// uri-template the manifest asserts, is published, consumed and validated
// on the real broker; a payload with a broken template is refused by the
// publisher and poisoned by the consumer.
func TestURITemplateOnTheBroker(t *testing.T) {
	url := testenv.VHost(t, "warren-uri-template")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{
		URLs:     []string{url},
		Topology: &mixeddrafts.Topology,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	pub, err := mixeddrafts.NewPublisher(conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	h := &archiver{}
	c, err := mixeddrafts.NewArchiverConsumer(conn, h)
	if err != nil {
		t.Fatal(err)
	}
	runConsumer(t, c)

	template := "https://api.example.com/repos/o/r/issues{/number}"
	fact := func(issuesURL string) mixeddrafts.IssueClosed {
		return mixeddrafts.IssueClosed{
			Action:     mixeddrafts.IssueClosedActionClosed,
			Issue:      mixeddrafts.Issue{Number: 7, State: mixeddrafts.IssueStateClosed, ClosedAt: ptr("2024-06-01T12:00:00Z")},
			Repository: mixeddrafts.Repository{ID: 1, FullName: "o/r", IssuesURL: &issuesURL},
		}
	}
	if _, err := pub.PublishIssueClosed(ctx, fact(template)); err != nil {
		t.Fatalf("publish a payload with a URL template: %v", err)
	}
	if _, err := pub.PublishIssueClosed(ctx, fact("https://api.example.com/repos/o/r/issues{/number")); err == nil || !strings.Contains(err.Error(), "uri-template") {
		t.Fatalf("publish a broken template: %v, want it refused as uri-template", err)
	}
	testenv.Eventually(t, "the fact with a URL template to be handled", func() bool { return len(h.received()) == 1 })
	if got := *h.received()[0].Repository.IssuesURL; got != template {
		t.Errorf("received issues_url %q, want %q", got, template)
	}

	// Another producer, not warren, sends a broken template: the consumer
	// validates it and poisons it.
	raw, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ch, err := raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	body := `{"id":"0b9f6a4e-2f0e-4c55-9d0e-1c7e0e6d4b11","occurred_at":"2024-06-01T12:00:00Z","payload":{"action":"closed","issue":{"number":7,"state":"closed","closed_at":"2024-06-01T12:00:00Z"},"repository":{"id":1,"full_name":"o/r","issues_url":"https://x/{/number"},"assignee":null}}`
	if err := ch.PublishWithContext(ctx, "app.events", mixeddrafts.IssueClosedRoutingKey, false, false, amqp.Publishing{
		ContentType: "application/json", MessageId: "0b9f6a4e-2f0e-4c55-9d0e-1c7e0e6d4b11", Type: mixeddrafts.IssueClosedRoutingKey,
		Headers: amqp.Table{"x-fact-version": int32(1)}, Body: []byte(body),
	}); err != nil {
		t.Fatal(err)
	}
	top, _ := mixeddrafts.Topology.Consumer("archiver")
	testenv.Eventually(t, "the broken template to be poisoned", func() bool {
		f, err := conn.Figures(ctx, top)
		return err == nil && f.PoisonDepth == 1
	})
	if n := len(h.received()); n != 1 {
		t.Errorf("handler called %d times, want once (the broken template must not reach it)", n)
	}
}

func ptr[T any](v T) *T { return &v }
