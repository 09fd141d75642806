package membroker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/membroker"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/internal/transport"
)

// A differential case performs AMQP operations through the transport
// interfaces and returns what a client saw. It runs once against
// RabbitMQ, in a vhost of its own, and once against the in-process
// broker announcing RabbitMQ's version; the two observations must be
// equal. An observation holds only what a client can see and rely on:
// error codes and the key phrase of their reasons, delivery fields,
// orders, confirms and returns, counts. Never durations.
type diffCase struct {
	name string
	run  func(t *testing.T, conn transport.Connection) observation
}

// observation is what a case saw, in the order it saw it.
type observation []any

func (o *observation) add(v ...any) { *o = append(*o, v...) }

// realVersion dials the test's RabbitMQ once and returns the version it
// announces; it skips (fails under CI=true) without a broker.
func realVersion(t *testing.T) string {
	t.Helper()
	c, err := amqp.Dial(testenv.AMQPURL(t))
	if err != nil {
		t.Fatalf("dial RabbitMQ: %v", err)
	}
	defer c.Close()
	v := transport.Network{Connection: c}.ServerVersion()
	if v == "" {
		t.Fatal("RabbitMQ announced no version")
	}
	return v
}

func runDifferential(t *testing.T, cases []diffCase) {
	version := realVersion(t)
	// A vhost per case, made together and deleted together when every
	// case has ended: two rabbitmqctl commands rather than two per case.
	vhosts := testenv.VHosts(t, "memdiff", len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var real, mem observation
			okReal := t.Run("rabbitmq", func(t *testing.T) {
				url := vhosts[i]
				ac, err := amqp.Dial(url)
				if err != nil {
					t.Fatalf("dial %s: %v", testenv.Redact(url), err)
				}
				conn := transport.Network{Connection: ac}
				t.Cleanup(func() { conn.Close() })
				real = c.run(t, conn)
			})
			okMem := t.Run("membroker", func(t *testing.T) {
				b := membroker.New(membroker.Options{Version: version})
				t.Cleanup(b.Close)
				conn, err := b.Dial()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.Close() })
				mem = c.run(t, conn)
			})
			t.Logf("RabbitMQ: %+v", real)
			if !okReal || !okMem {
				return
			}
			if diff := cmp.Diff(real, mem); diff != "" {
				t.Errorf("the in-process broker answers otherwise than RabbitMQ %s (-rabbitmq +membroker):\n%s", version, diff)
			}
		})
	}
}

// wait is how long a case waits for an event before it fails naming it:
// a guard against a hang, not a claim about speed.
func wait() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("WARREN_TEST_WAIT")); err == nil {
		return d
	}
	return 30 * time.Second
}

func await[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-c:
		if !ok {
			t.Fatalf("waiting for %s: the channel closed", what)
		}
		return v
	case <-time.After(wait()):
		t.Fatalf("gave up waiting for %s", what)
	}
	panic("unreachable")
}

// eventually polls cond until it holds, failing naming what it waited for.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait())
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func channel(t *testing.T, conn transport.Connection) transport.Channel {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("open channel: %v", err)
	}
	return ch
}

// openBroker returns an in-process broker announcing version ("" for the
// default) and a channel on a connection to it; the broker closes when the
// test ends.
func openBroker(t *testing.T, version string) (*membroker.Broker, transport.Channel) {
	t.Helper()
	b := membroker.New(membroker.Options{Version: version})
	t.Cleanup(b.Close)
	conn, err := b.Dial()
	if err != nil {
		t.Fatal(err)
	}
	return b, channel(t, conn)
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func declare(t *testing.T, ch transport.Channel, name string, args amqp.Table) {
	t.Helper()
	_, err := ch.QueueDeclare(name, args["x-queue-type"] == "quorum", false, false, false, args)
	must(t, "declare queue "+name, err)
}

func exchange(t *testing.T, ch transport.Channel, name, kind string, args amqp.Table) {
	t.Helper()
	must(t, "declare exchange "+name, ch.ExchangeDeclare(name, kind, false, false, false, false, args))
}

func bind(t *testing.T, ch transport.Channel, queue, key, exchange string) {
	t.Helper()
	must(t, fmt.Sprintf("bind %s to %s with %q", queue, exchange, key), ch.QueueBind(queue, key, exchange, false, nil))
}

func publish(t *testing.T, ch transport.Channel, exchange, key string, msg amqp.Publishing) {
	t.Helper()
	must(t, "publish to "+exchange+" "+key, ch.PublishWithContext(context.Background(), exchange, key, false, false, msg))
}

func body(s string) amqp.Publishing { return amqp.Publishing{Body: []byte(s)} }

// errorSeen is an error as a client tells it apart: its AMQP code, and
// whether its reason names what it is about.
type errorSeen struct {
	Code   int
	Phrase bool // the reason contains the phrase the case expects
	Text   string
}

// seenErr reduces err to its code and whether it contains phrase. A nil
// error is the zero value; an error that is no *amqp.Error is code -1.
func seenErr(err error, phrase string) errorSeen {
	if err == nil {
		return errorSeen{}
	}
	var ae *amqp.Error
	if !errors.As(err, &ae) {
		return errorSeen{Code: -1, Text: err.Error()}
	}
	return errorSeen{Code: ae.Code, Phrase: strings.Contains(ae.Reason, phrase)}
}

// deliverySeen is a delivery as a client relies on it.
type deliverySeen struct {
	Body        string
	Exchange    string
	RoutingKey  string
	Redelivered bool
	Priority    uint8
	Expiration  string
	Headers     map[string]any // the headers that matter, x-death reduced
}

// seen reduces d to what matters.
func seen(d amqp.Delivery) deliverySeen {
	return deliverySeen{
		Body: string(d.Body), Exchange: d.Exchange, RoutingKey: d.RoutingKey,
		Redelivered: d.Redelivered, Priority: d.Priority, Expiration: d.Expiration,
		Headers: headersSeen(d.Headers),
	}
}

// deathSeen is one x-death entry without its time.
type deathSeen struct {
	Count              int64
	Reason, Queue      string
	Exchange           string
	RoutingKeys        []string
	OriginalExpiration string
}

// headersSeen keeps the headers a client relies on: the application's
// (named app-*), x-death, x-first-death-*, x-last-death-* and
// x-delivery-count. The names of any other headers the broker added are
// kept, as "other".
func headersSeen(h amqp.Table) map[string]any {
	out := map[string]any{}
	var other []string
	for k, v := range h {
		switch {
		case k == "x-death":
			var ds []deathSeen
			list, _ := v.([]any)
			for _, e := range list {
				et, _ := e.(amqp.Table)
				d := deathSeen{Count: toInt(et["count"])}
				d.Reason, _ = et["reason"].(string)
				d.Queue, _ = et["queue"].(string)
				d.Exchange, _ = et["exchange"].(string)
				d.OriginalExpiration, _ = et["original-expiration"].(string)
				rks, _ := et["routing-keys"].([]any)
				for _, rk := range rks {
					s, _ := rk.(string)
					d.RoutingKeys = append(d.RoutingKeys, s)
				}
				ds = append(ds, d)
			}
			out[k] = ds
		case k == "x-delivery-count":
			out[k] = toInt(v)
		case strings.HasPrefix(k, "app-"), strings.HasPrefix(k, "x-first-death-"), strings.HasPrefix(k, "x-last-death-"):
			out[k] = fmt.Sprint(v)
		default:
			other = append(other, k)
		}
	}
	if other != nil {
		sort.Strings(other)
		out["other"] = other
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int32:
		return int64(n)
	case int:
		return int64(n)
	case int16:
		return int64(n)
	case int8:
		return int64(n)
	case uint8:
		return int64(n)
	case uint16:
		return int64(n)
	case uint32:
		return int64(n)
	}
	return -1
}

// watcher records, in the order the client heard them, a channel's
// returns, confirms and close. Its notify channels are unbuffered and
// read by one goroutine, so that the order it records is the order the
// client library delivered them in.
type watcher struct {
	mu     sync.Mutex
	events []any
	closed *amqp.Error
	done   chan struct{}
}

type returnSeen struct {
	Code       uint16
	Text       string
	Exchange   string
	RoutingKey string
	Body       string
}

type confirmSeen struct {
	Tag uint64
	Ack bool
}

type closeSeen struct {
	errorSeen
}

func watch(ch transport.Channel) *watcher {
	w := &watcher{done: make(chan struct{})}
	rets := ch.NotifyReturn(make(chan amqp.Return))
	confs := ch.NotifyPublish(make(chan amqp.Confirmation))
	// Buffered: amqp091-go hands a channel's close error to a listener
	// that is not waiting at that moment from a goroutine of its own,
	// which finds the listener closed already and drops the error; the
	// watcher, busy recording an event, would never see the close.
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	go func() {
		defer close(w.done)
		for rets != nil || confs != nil || closes != nil {
			select {
			case r, ok := <-rets:
				if !ok {
					rets = nil
					continue
				}
				w.record(returnSeen{r.ReplyCode, r.ReplyText, r.Exchange, r.RoutingKey, string(r.Body)})
			case c, ok := <-confs:
				if !ok {
					confs = nil
					continue
				}
				w.record(confirmSeen{c.DeliveryTag, c.Ack})
			case e, ok := <-closes:
				if !ok {
					closes = nil
					continue
				}
				w.mu.Lock()
				w.closed = e
				w.mu.Unlock()
				w.record(closeSeen{seenErr(e, "")})
			}
		}
	}()
	return w
}

func (w *watcher) record(v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, v)
}

// until waits until the watcher has recorded n events, and returns them.
func (w *watcher) until(t *testing.T, n int, what string) []any {
	t.Helper()
	var out []any
	eventually(t, what, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		out = append([]any(nil), w.events...)
		return len(out) >= n
	})
	return out
}

// closeErr waits for the channel to be closed by the broker and returns
// the error it was closed with.
func (w *watcher) closeErr(t *testing.T, what string) *amqp.Error {
	t.Helper()
	var e *amqp.Error
	eventually(t, what, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		e = w.closed
		return e != nil
	})
	return e
}

// getAll takes every message off queue with basic.get and acks it.
func getAll(t *testing.T, ch transport.Channel, queue string) []deliverySeen {
	t.Helper()
	var out []deliverySeen
	for {
		d, ok, err := ch.Get(queue, true)
		must(t, "get from "+queue, err)
		if !ok {
			return out
		}
		out = append(out, seen(d))
	}
}

// awaitCount waits until queue holds n ready messages.
func awaitCount(t *testing.T, ch transport.Channel, queue string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d messages in %s", n, queue), func() bool {
		q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
		must(t, "passive declare "+queue, err)
		return q.Messages == n
	})
}

// confirmed puts ch in confirm mode and returns a function that waits for
// the confirms of everything published so far, and returns them.
func confirming(t *testing.T, ch transport.Channel) func() []confirmSeen {
	t.Helper()
	must(t, "confirm mode", ch.Confirm(false))
	confs := ch.NotifyPublish(make(chan amqp.Confirmation, 100))
	var got []confirmSeen
	return func() []confirmSeen {
		t.Helper()
		for uint64(len(got))+1 < ch.GetNextPublishSeqNo() {
			c := await(t, confs, fmt.Sprintf("the confirm of publish %d", len(got)+1))
			got = append(got, confirmSeen{c.DeliveryTag, c.Ack})
		}
		return got
	}
}

// returnOrder reduces a watcher's events to what a client may rely on
// when it publishes routed and unroutable messages together: the confirms,
// by tag, and each return with whether it came before the confirm of its
// own publish (tagOf gives the tag of a returned body). A return's place
// among the confirms of other publishes is not fixed: RabbitMQ confirms a
// routed message once its queue has it, an unroutable one at once.
func returnOrder(events []any, tagOf map[string]uint64) observation {
	var o observation
	confirmed := map[uint64]bool{}
	var confs []confirmSeen
	for _, e := range events {
		switch e := e.(type) {
		case confirmSeen:
			confirmed[e.Tag] = true
			confs = append(confs, e)
		case returnSeen:
			o.add(e, "before its confirm", !confirmed[tagOf[e.Body]])
		default:
			o.add(e)
		}
	}
	sort.Slice(confs, func(i, j int) bool { return confs[i].Tag < confs[j].Tag })
	o.add(confs)
	return o
}

// untilConfirms waits until the watcher has recorded n confirms, and
// returns every event so far.
func (w *watcher) untilConfirms(t *testing.T, n int, what string) []any {
	t.Helper()
	var out []any
	eventually(t, what, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		out = append([]any(nil), w.events...)
		c := 0
		for _, e := range out {
			if _, ok := e.(confirmSeen); ok {
				c++
			}
		}
		return c >= n
	})
	return out
}
