package console

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// With the broker gone, the poison lane and an action answer that the
// broker cannot be reached once BrokerWait has passed, instead of
// reading on until it comes back (the page would say "Reading…" for as
// long as the broker is down).
func TestALostBrokerIsSaidOnThePage(t *testing.T) {
	direct := testenv.VHost(t, "console-lost")
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewTCPProxy(t, u.Host)
	u.Host = proxy.Addr()
	viaProxy := u.String()
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{{Name: "mailer", Bindings: []string{"order.*"}, MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{viaProxy}, Topology: &top, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	srv, err := New(Config{Broker: conn, Topology: top, BrokerURL: viaProxy, Token: testToken, BrokerWait: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cc := &consoleCase{t: t, conn: conn, top: top, srv: srv, http: hs}

	cc.getJSON("/api/consumers/mailer/poison", &poisonJSON{})
	proxy.SetDown(true)
	testenv.Eventually(t, "the console's connection to see the broker gone", func() bool { return conn.URL() == "" })

	// The answer comes after BrokerWait; the guard only keeps a console
	// that waits for the broker from hanging the test.
	ask := func(method, path, body string) (int, string) {
		t.Helper()
		rctx, stop := context.WithTimeout(context.Background(), testenv.DefaultWait)
		defer stop()
		req, err := http.NewRequestWithContext(rctx, method, hs.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(TokenHeader, testToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s with the broker gone: no answer: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/consumers/mailer/poison", ""},
		{http.MethodGet, "/api/consumers/mailer/causes", ""},
		{http.MethodPost, "/api/consumers/mailer/replay", `{"ids":["m1"]}`},
	} {
		status, body := ask(r.method, r.path, r.body)
		var out struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil || status != http.StatusBadGateway || !strings.Contains(out.Error, "the broker cannot be reached: no connection to it for 200ms") {
			t.Errorf("%s %s with the broker gone: %d %s", r.method, r.path, status, body)
		}
		if strings.Contains(body, "guest:guest") {
			t.Errorf("%s %s: the answer shows the broker's password: %s", r.method, r.path, body)
		}
	}
}
