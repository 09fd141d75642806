package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
)

// The example service, on its own vhost of the real broker, serves its
// consumer's counters at /metrics once facts flow.
func TestServesMetrics(t *testing.T) {
	url := testenv.VHost(t, "prom-example")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, url, l, 10*time.Millisecond) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	want := `warren_consumer_acked_total{consumer="example-mailer",routing_key="order.placed",service="example"}`
	testenv.Eventually(t, "/metrics to serve the consumer's acks and handler durations", func() bool {
		body := scrape(t, "http://"+l.Addr().String()+"/metrics")
		return strings.Contains(body, want) && strings.Contains(body, "warren_consumer_handler_duration_seconds_bucket")
	})
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}
