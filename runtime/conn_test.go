package runtime

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// roundTrip publishes one fact through conn and waits for a consumer on the
// same conn to handle it.
func roundTrip(t *testing.T, b *broker, conn *Conn) {
	t.Helper()
	f := itemFact("item.added")
	got := make(chan string, 1)
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		got <- d.MessageID
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	defer stop()
	pub, _ := NewPublisher(conn, b.events())
	id := mustPublish(t, pub, f, item{SKU: "tls"})
	if h := receive(t, got); h != id {
		t.Fatalf("handled %s, want %s", h, id)
	}
}

func TestDialTLS(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "tls", Bindings: []string{"item.#"}, MaxAttempts: 1})
	serverTLS, clientTLS := selfSigned(t)
	p := newProxy(t, b.url, serverTLS)
	amqps := p.url(b.url, "amqps")

	conn := b.dial(Config{URLs: []string{amqps}, TLS: clientTLS})
	roundTrip(t, b, conn)

	// Without the CA the handshake fails, and says why.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := Dial(ctx, Config{URLs: []string{amqps}, Logger: b.logs})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Dial without trusting the broker's certificate: %v", err)
	}
}

func TestURLsAreRedactedInErrorsAndLogs(t *testing.T) {
	u, err := url.Parse(testenvURL(t))
	if err != nil {
		t.Fatal(err)
	}
	host, dead := u.Host, closedPort(t)
	for _, tc := range []struct {
		name string
		urls []string
		want string // in the error
		wait bool   // for the broker's answer to a refused login, which it gives after a pause
	}{
		{"unescaped slash", []string{"amqp://probe:Xy7/Kq9z@" + host + "/"}, "probe:xxxxx@" + host, false},
		{"unescaped ? #", []string{"amqp://probe:Xy7?Kq9z#@" + host + "/"}, "probe:xxxxx@" + host, false},
		{"bad percent escape", []string{"amqp://probe:Xy7%Kq9z@" + host + "/"}, "probe:xxxxx@" + host, false},
		{"unescaped @", []string{"amqp://guest:Xy7@Kq9z@" + host + "/"}, "guest:xxxxx@" + host, false},
		{"refused password", []string{"amqp://guest:Xy7Kq9z@" + host + "/"}, "403", true},
		{"unreachable, then refused", []string{"amqp://guest:Xy7Kq9z@" + dead + "/", "amqp://guest:Kq9zXy7@" + host + "/"}, "guest:xxxxx@" + host, true},
		{"IPv6, unreachable", []string{"amqp://guest:Xy7Kq9z@[::1]:1/"}, "guest:xxxxx@[::1]:1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The cases share nothing, and a refused login takes seconds to
			// come back: they run side by side.
			t.Parallel()
			rec := &logRecorder{}
			limit := 300 * time.Millisecond
			if tc.wait {
				limit = time.Minute
			}
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			_, err := Dial(ctx, Config{URLs: tc.urls, Logger: slog.New(rec), ReconnectMin: 20 * time.Millisecond, ReconnectMax: 50 * time.Millisecond})
			if err == nil {
				t.Fatal("Dial succeeded")
			}
			for _, secret := range []string{"Xy7", "Kq9z"} {
				if strings.Contains(err.Error(), secret) || strings.Contains(rec.text(), secret) {
					t.Fatalf("the password leaked:\nerror: %v\nlog:\n%s", err, rec.text())
				}
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// The broker answers a refused login only after a pause of seconds; ctx
// bounds Dial's handshake too, so Dial ends with ctx, not with the broker.
func TestRefusedLoginEndsWithDialsContext(t *testing.T) {
	u, err := url.Parse(testenvURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = Dial(ctx, Config{URLs: []string{"amqp://guest:Xy7Kq9z@" + u.Host + "/"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial = %v, want the context's deadline", err)
	}
	if strings.Contains(err.Error(), "Xy7Kq9z") {
		t.Fatalf("the password leaked: %v", err)
	}
}

// Dial fails over to the next address; after a network outage the Conn
// reconnects, publishes made during the outage wait and then succeed, and
// the consumer resumes by itself.
func TestOutageIsSurvived(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "outage", Bindings: []string{"item.#"}, Backoff: testLadder, Concurrency: 2})
	p := newProxy(t, b.url, nil)
	conn := b.dial(Config{URLs: []string{"amqp://guest:guest@" + closedPort(t) + "/", p.url(b.url, "amqp")}})
	f := itemFact("item.added")
	var mu sync.Mutex
	handled := map[string]bool{}
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		mu.Lock()
		handled[d.MessageID] = true
		mu.Unlock()
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	first := mustPublish(t, pub, f, item{SKU: "before"})

	p.setDown(true)
	testenv.Eventually(t, "the Conn to notice the outage", func() bool {
		conn.mu.Lock()
		defer conn.mu.Unlock()
		return conn.sess == nil
	})
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = pub.Publish(short, f, item{SKU: "impatient"})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a publish with a short deadline during the outage: %v, want the deadline", err)
	}
	var wg sync.WaitGroup
	ids := make(chan string, 20)
	var failed atomic.Int32
	for i := range 20 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			id, err := pub.Publish(ctx, f, item{SKU: "during", N: i})
			if err != nil {
				t.Errorf("publish during the outage: %v", err)
				failed.Add(1)
			}
			ids <- id
		})
	}
	time.Sleep(100 * time.Millisecond) // let the publishes start waiting
	p.setDown(false)
	wg.Wait()
	close(ids)
	want := []string{first}
	for id := range ids {
		want = append(want, id)
	}
	testenv.Eventually(t, "every fact handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range want {
			if !handled[id] {
				return false
			}
		}
		return true
	})
}

// closedPort returns an address where nothing listens.
func closedPort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// When the node a Conn is connected to goes away, it reconnects to the next
// address and carries on there.
func TestFailoverToTheNextNode(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "failover", Bindings: []string{"item.#"}, MaxAttempts: 1})
	nodeA, nodeB := newProxy(t, b.url, nil), newProxy(t, b.url, nil)
	rec := &logRecorder{}
	conn := b.dial(Config{URLs: []string{nodeA.url(b.url, "amqp"), nodeB.url(b.url, "amqp")}, Logger: slog.New(rec)})
	roundTrip(t, b, conn)
	nodeA.setDown(true)
	testenv.Eventually(t, "a connection to node B", func() bool {
		urls := rec.values("connected to broker", "url")
		return len(urls) == 2 && strings.Contains(urls[1], nodeB.ln.Addr().String())
	})
	roundTrip(t, b, conn)
}
