package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// quote is the request of these tests, quoteReply its reply.
type quote struct {
	SKU string `json:"sku"`
	N   int    `json:"n"`
}

type quoteReply struct {
	N  int    `json:"n"`
	By string `json:"by,omitempty"`
}

// quoteRequest validates both sides as generated code does: a request
// needs a sku, a reply a non-negative n.
func quoteRequest(key string) Request {
	return Request{
		Key: key,
		Validate: func(p []byte) error {
			if !strings.Contains(string(p), `"sku":"`) || strings.Contains(string(p), `"sku":""`) {
				return errors.New("/sku: expected a non-empty string")
			}
			return nil
		},
		ValidateReply: func(p []byte) error {
			if strings.Contains(string(p), `"n":-`) {
				return errors.New("/n: expected at least 0")
			}
			return nil
		},
	}
}

// requestBroker is a test's private requests topology: one responder
// answering key, declared, and removed when the test ends.
type requestBroker struct {
	*broker
	key       string
	responder topology.Responder
}

func newRequestBroker(t testing.TB) *requestBroker {
	t.Helper()
	url := testenv.AMQPURL(t)
	key := testenv.Name("pricing") + ".quote"
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{
			Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead"),
			Requests: testenv.Name("requests"),
		},
		Responders: []topology.ResponderSpec{{Name: testenv.Name("pricing"), Requests: []string{key}, Concurrency: 8}},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{t: t, url: url, top: top, raw: raw, logs: testLogger(t)}
	t.Cleanup(b.cleanup)
	if err := declare(transport.Network{Connection: raw}, top); err != nil {
		t.Fatal(err)
	}
	return &requestBroker{broker: b, key: key, responder: top.Responders[0]}
}

func (b *requestBroker) requester(t testing.TB, conn *Conn) *Requester {
	r, err := NewRequester(conn, b.responder.Exchange)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// respond starts a responder on conn answering with fn until the test ends.
func (b *requestBroker) respond(t testing.TB, conn *Conn, req Request, fn func(ctx context.Context, d Delivery, q quote) (quoteReply, error), opts ...ConsumerOption) *Responder {
	t.Helper()
	r, err := NewResponder(conn, b.responder, []Answer{Respond(req, fn)}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("responder Run: %v", err)
		}
	})
	return r
}

func TestRequestRoundTripValidatesBothSides(t *testing.T) {
	b := newRequestBroker(t)
	conn := b.dial(Config{})
	var ids sync.Map
	req := quoteRequest(b.key)
	responder := b.respond(t, conn, req, func(_ context.Context, d Delivery, q quote) (quoteReply, error) {
		ids.Store(d.MessageID, true)
		return quoteReply{N: q.N * 2}, nil
	})
	r := b.requester(t, conn)

	rep, err := Call[quoteReply](context.Background(), r, req, quote{SKU: "a", N: 21})
	if err != nil || rep.N != 42 {
		t.Fatalf("Call = %+v, %v; want n=42", rep, err)
	}
	n := 0
	ids.Range(func(k, _ any) bool { n++; return k.(string) != "" })
	if n != 1 {
		t.Errorf("responder saw %d envelope ids, want 1", n)
	}

	// An invalid request never leaves the requester.
	_, err = Call[quoteReply](context.Background(), r, req, quote{N: 1})
	if err == nil || !strings.Contains(err.Error(), "request does not match its schema: /sku") || !IsPermanent(err) {
		t.Errorf("invalid request: err = %v, want a permanent schema error", err)
	}
	if c := responder.Counts(); c.Answered != 1 || c.Failed != 0 {
		t.Errorf("responder counts = %+v, want the one valid request answered", c)
	}

	// A responder that answers with an invalid reply: its own check makes
	// it a permanent error reply.
	_, err = Call[quoteReply](context.Background(), r, req, quote{SKU: "a", N: -1})
	var re *ReplyError
	if !errors.As(err, &re) || !re.Permanent || !strings.Contains(re.Message, "reply does not match its schema: /n") {
		t.Errorf("invalid reply: err = %v, want a permanent *ReplyError about the reply's schema", err)
	}
}

func TestRequestInvalidReplyIsAnErrorToTheCaller(t *testing.T) {
	b := newRequestBroker(t)
	conn := b.dial(Config{})
	lax := Request{Key: b.key} // a responder that does not check its replies
	b.respond(t, conn, lax, func(_ context.Context, _ Delivery, q quote) (quoteReply, error) {
		return quoteReply{N: -5}, nil
	})
	r := b.requester(t, conn)
	_, err := Call[quoteReply](context.Background(), r, quoteRequest(b.key), quote{SKU: "a"})
	if err == nil || !strings.Contains(err.Error(), "reply does not match its schema: /n") || !IsPermanent(err) || !errors.Is(err, ErrInvalidReply) {
		t.Fatalf("err = %v, want the reply's schema error, permanent", err)
	}
}

func TestRequestThousandConcurrentCallersEachGetTheirOwnReply(t *testing.T) {
	b := newRequestBroker(t)
	req := quoteRequest(b.key)
	var byInstance [2]atomic.Int64
	for i := range 2 {
		conn := b.dial(Config{})
		name := fmt.Sprint("instance-", i)
		b.respond(t, conn, req, func(_ context.Context, _ Delivery, q quote) (quoteReply, error) {
			byInstance[i].Add(1)
			return quoteReply{N: q.N * 3, By: name}, nil
		})
	}
	r := b.requester(t, b.dial(Config{}))

	const calls = 1000
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for n := range calls {
		wg.Go(func() {
			rep, err := Call[quoteReply](context.Background(), r, req, quote{SKU: "s", N: n})
			switch {
			case err != nil:
				errs <- fmt.Errorf("call %d: %w", n, err)
			case rep.N != 3*n:
				errs <- fmt.Errorf("call %d got the reply for %d", n, rep.N/3)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if a, c := byInstance[0].Load(), byInstance[1].Load(); a+c != calls || a == 0 || c == 0 {
		t.Errorf("instances answered %d and %d, want %d between them, both some", a, c, calls)
	}
	if d := r.Dropped(); d != 0 {
		t.Errorf("dropped %d replies, want 0", d)
	}
}

func TestRequestDeadlineIsNotWorkedOnAfterItPassed(t *testing.T) {
	b := newRequestBroker(t)
	metrics := &countingMetrics{counts: map[Event]int{}}
	conn := b.dial(Config{Metrics: metrics})
	req := quoteRequest(b.key)
	release := make(chan struct{})
	var started atomic.Int64
	responder := b.respond(t, conn, req, func(_ context.Context, _ Delivery, q quote) (quoteReply, error) {
		started.Add(1)
		<-release
		return quoteReply{N: q.N}, nil
	}, WithConcurrency(1), WithPrefetch(2))
	r := b.requester(t, conn)

	// The first request holds the only worker; one more waits in the
	// prefetch buffer and the rest in the queue until every caller has
	// given up.
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := Call[quoteReply](ctx, r, req, quote{SKU: "a", N: 0})
		first <- err
	}()
	testenv.Eventually(t, "the responder to start the first request", func() bool { return started.Load() == 1 })
	// The later calls wait long enough for the broker to hand one of them
	// to the responder's prefetch buffer before they expire: on a busy
	// machine a shorter deadline can pass while the request is still at
	// the head of the queue, where the broker drops it instead.
	var wg sync.WaitGroup
	for n := 1; n <= 4; n++ {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if _, err := Call[quoteReply](ctx, r, req, quote{SKU: "a", N: n}); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("call %d: err = %v, want context.DeadlineExceeded", n, err)
			}
		})
	}
	testenv.Eventually(t, "one request in the prefetch buffer and three in the queue", func() bool { return b.depth(b.responder.Queue) == 3 })
	wg.Wait()
	if err := <-first; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("first call: err = %v, want context.DeadlineExceeded", err)
	}
	close(release)

	testenv.Eventually(t, "the late reply to be dropped", func() bool { return r.Dropped() == 1 })
	metrics.mu.Lock()
	if n := metrics.counts[ReplyDropped]; n != 1 {
		t.Errorf("metrics counted %d dropped replies, want 1", n)
	}
	metrics.mu.Unlock()
	// The broker drops expired requests at the head of the queue; the one
	// prefetched before it expired reaches the responder, which does not
	// work on it.
	testenv.Eventually(t, "the prefetched request to be refused as expired", func() bool { return responder.Counts().Expired == 1 })
	testenv.Eventually(t, "the requests queue to empty", func() bool { return b.depth(b.responder.Queue) == 0 })
	if n := started.Load(); n != 1 {
		t.Errorf("handler started %d times, want 1 (the others had expired)", n)
	}
	if c := responder.Counts(); c.Answered != 1 {
		t.Errorf("responder counts = %+v, want one (late) answer", c)
	}
}

func TestRequestWithoutResponder(t *testing.T) {
	b := newRequestBroker(t)
	r := b.requester(t, b.dial(Config{}))

	// The queue exists but nobody reads it: the caller times out cleanly.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := Call[quoteReply](ctx, r, quoteRequest(b.key), quote{SKU: "a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("no responder running: err = %v, want context.DeadlineExceeded", err)
	}

	// No queue is bound to the key: the call fails at once, not at its
	// deadline (the requester's default, 30s).
	_, err := Call[quoteReply](context.Background(), r, quoteRequest(b.key+".unbound"), quote{SKU: "a"})
	if !errors.Is(err, ErrNoResponder) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no responder queue: err = %v, want ErrNoResponder", err)
	}
}

func TestRequestResponderErrorsAreTypedReplies(t *testing.T) {
	b := newRequestBroker(t)
	conn := b.dial(Config{})
	req := quoteRequest(b.key)
	responder := b.respond(t, conn, req, func(_ context.Context, _ Delivery, q quote) (quoteReply, error) {
		switch q.SKU {
		case "permanent":
			return quoteReply{}, Permanent(errors.New("sku is discontinued"))
		case "transient":
			return quoteReply{}, errors.New("price list is loading")
		case "panic":
			panic("index out of range")
		}
		return quoteReply{N: 1}, nil
	})
	r := b.requester(t, conn)
	for _, tc := range []struct {
		sku, message string
		permanent    bool
	}{
		{"permanent", "sku is discontinued", true},
		{"transient", "price list is loading", false},
		{"panic", "handler panicked: index out of range", false},
	} {
		_, err := Call[quoteReply](context.Background(), r, req, quote{SKU: tc.sku})
		var re *ReplyError
		if !errors.As(err, &re) {
			t.Errorf("%s: err = %v, want a *ReplyError", tc.sku, err)
			continue
		}
		if re.Message != tc.message || re.Permanent != tc.permanent || IsPermanent(err) != tc.permanent || re.Request != b.key {
			t.Errorf("%s: ReplyError = %+v (IsPermanent %v), want message %q permanent %v", tc.sku, re, IsPermanent(err), tc.message, tc.permanent)
		}
	}
	// The responder survived the panic and still answers.
	if rep, err := Call[quoteReply](context.Background(), r, req, quote{SKU: "ok"}); err != nil || rep.N != 1 {
		t.Errorf("after the panic: %+v, %v", rep, err)
	}
	if c := responder.Counts(); c.Failed != 3 || c.Answered != 1 {
		t.Errorf("responder counts = %+v, want 3 failed and 1 answered", c)
	}
}

func TestRequestResponderKilledMidRequestIsAnsweredOnceByAnother(t *testing.T) {
	b := newRequestBroker(t)
	req := quoteRequest(b.key)
	dying := b.dial(Config{})
	started := make(chan struct{}, 1)
	b.respond(t, dying, req, func(ctx context.Context, _ Delivery, q quote) (quoteReply, error) {
		started <- struct{}{}
		<-ctx.Done() // it never finishes: its connection goes first
		return quoteReply{N: q.N, By: "dying"}, nil
	})
	r := b.requester(t, b.dial(Config{}))

	replies := make(chan quoteReply, 2)
	go func() {
		rep, err := Call[quoteReply](context.Background(), r, req, quote{SKU: "a", N: 7})
		if err != nil {
			t.Errorf("Call: %v", err)
		}
		replies <- rep
	}()
	receive(t, started)
	other := b.dial(Config{})
	survivor := b.respond(t, other, req, func(_ context.Context, d Delivery, q quote) (quoteReply, error) {
		if !d.Redelivered {
			t.Errorf("the survivor got a first delivery, want the redelivered request")
		}
		return quoteReply{N: q.N, By: "survivor"}, nil
	})
	_ = dying.Close()

	if rep := receive(t, replies); rep.By != "survivor" || rep.N != 7 {
		t.Errorf("reply = %+v, want the survivor's answer to n=7", rep)
	}
	if c := survivor.Counts(); c.Answered != 1 {
		t.Errorf("survivor counts = %+v, want one answer", c)
	}
	if d := r.Dropped(); d != 0 {
		t.Errorf("dropped %d replies, want 0: the dying instance never answered", d)
	}
}
