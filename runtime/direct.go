package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// A stream declared with publish "direct" (topology.Queue.Direct) takes
// the facts only it binds straight from the Publisher, over the stream
// protocol, instead of through the events exchange: the stream client
// gathers the facts written meanwhile into one frame and the broker
// confirms them together, where AMQP takes a frame and a confirm per fact
// (docs/BENCHMARKS.md, "Streams"). The fact is the same message either way:
// RabbitMQ keeps an AMQP 0-9-1 publish in a stream as an AMQP 1.0 message,
// and a direct write is that message (properties, headers as application
// properties, exchange, routing key and delivery mode as annotations, the
// type where the broker's release keeps it), so that every reader sees
// the same fact.
// What publishing through the exchange gives and a direct write does not
// need: the mandatory flag (the stream is the one destination, and a
// missing stream fails the writer's opening), and reaching other bindings
// (a key that another queue binds goes through the exchange; see
// topology.Topology.DirectStream).

// StreamWriterStore is an [OffsetStore] that also writes facts into
// streams, as runtime/streamoffset's does: a Publisher needs one to
// publish into a stream declared with publish "direct".
type StreamWriterStore interface {
	OffsetStore
	// Writer opens a writer of the named stream on the store's
	// connection. Its error matches [ErrStreamRefused] when trying again
	// cannot help.
	Writer(ctx context.Context, stream string) (StreamWriter, error)
}

// StreamWriter writes facts into one stream.
type StreamWriter interface {
	// Write sends m, and calls done once, from another goroutine, with
	// nil once the broker confirmed it, or an error when the confirm will
	// not come (the writer or its connection closed, the broker refused
	// it): whether the broker kept it is then unknown. A Write that
	// returns an error calls no done; the error matches
	// [ErrStreamWriterLost] when the writer can write no more.
	Write(m StreamOutgoing, done func(error)) error
	// Lost is closed once the writer can write no more.
	Lost() <-chan struct{}
	Close() error
}

// ErrStreamWriterLost is matched by a [StreamWriter]'s Write when the
// writer or its connection closed.
var ErrStreamWriterLost = errors.New("stream writer closed")

// StreamOutgoing is a fact written into a stream, with what AMQP 0-9-1
// would have given it through the exchange. Its fields match
// internal/streamproto's Outgoing, so that one converts to the other.
type StreamOutgoing struct {
	Body         []byte
	Exchange     string
	RoutingKey   string
	MessageID    string
	Type         string
	ContentType  string
	Timestamp    time.Time
	DeliveryMode uint8 // 2 for persistent; 0 for none
	Headers      map[string]any
	// TypeAsProperty asks for Type where RabbitMQ before 3.13 keeps an
	// AMQP 0-9-1 publish's type (the application property x-basic-type)
	// as well as where later releases keep it (an annotation).
	TypeAsProperty bool
}

// directWriters are a Publisher's writers, on a stream-protocol
// connection of its own, opened at its first direct publish.
type directWriters struct {
	// opening is held while a writer or the connection is opened, which
	// waits on the network: a publish waiting for it still heeds its ctx.
	opening chan struct{}
	mu      sync.Mutex // guards what follows, never across a wait
	store   StreamWriterStore
	by      map[string]StreamWriter
	closed  bool
	// streams caches, per routing key, the stream a fact is written into
	// directly ("" for through the exchange): the topology never changes
	// under a Conn.
	streams sync.Map
	// viaExchange holds the direct streams whose writer cannot be reached
	// (ErrStreamOnOtherNodes): their facts go through the exchange, which
	// binds them to the stream too.
	viaExchange sync.Map
}

// directStream returns the stream a fact of key published now goes to
// directly, or "" when it goes through the exchange.
func (p *Publisher) directStream(key string) string {
	top := p.conn.cfg.Topology
	if top == nil {
		return ""
	}
	if s, ok := p.direct.streams.Load(key); ok {
		return s.(string)
	}
	s, ok := top.DirectStream(p.exchange, key)
	if !ok {
		s = ""
	}
	p.direct.streams.Store(key, s)
	return s
}

// ErrStreamRefused is matched by a [StreamWriterStore]'s Writer error
// when the broker refused it for good: the stream does not exist, or the
// user may not write into it. Any other error is taken as passing (a
// stream whose leader is being elected after a node loss, a node that
// does not answer), and the writer is opened again.
var ErrStreamRefused = errors.New("the broker refused the stream writer")

// errNoWriter is returned when the Conn's offset store cannot write.
var errNoWriter = errors.New("the offset store does not write into streams; use runtime/streamoffset")

// writer returns the open writer of stream, opening the connection and
// the writer when there is none. While the broker cannot open one for a
// passing reason (the stream's leader is being elected after a node loss),
// it tries again, up to ctx's end, as a publish through the exchange
// waits for the connection.
func (p *Publisher) writer(ctx context.Context, stream string) (StreamWriter, error) {
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		w, err := p.openWriter(ctx, stream)
		if err == nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrStreamRefused) || errors.Is(err, ErrStreamOnOtherNodes) || errors.Is(err, errNoWriter) || errors.Is(err, ErrNoOffsetStore) {
			return w, err
		}
		p.conn.log.Debug("stream writer not open; trying again", "stream", stream, "err", p.conn.redact(err))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (and %w)", err, context.Cause(ctx))
		case <-time.After(wait):
		}
	}
}

// openWriter is one try of writer.
func (p *Publisher) openWriter(ctx context.Context, stream string) (StreamWriter, error) {
	d := &p.direct
	if w, ok, err := d.current(stream); ok || err != nil {
		return w, err
	}
	select {
	case d.opening <- struct{}{}:
		defer func() { <-d.opening }()
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the stream writer: %w", context.Cause(ctx))
	}
	if w, ok, err := d.current(stream); ok || err != nil {
		return w, err // opened meanwhile, or closed
	}
	d.mu.Lock()
	store := d.store
	d.mu.Unlock()
	if store == nil {
		need := fmt.Sprintf("publishing directly into stream %q", stream)
		s, err := p.conn.ownOffsets(ctx, need)
		if err != nil {
			return nil, err
		}
		ws, ok := s.(StreamWriterStore)
		if !ok {
			_ = s.Close()
			return nil, fmt.Errorf("%s: %w", need, errNoWriter)
		}
		store = ws
	}
	w, err := store.Writer(ctx, stream)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		// Closed meanwhile: what was opened for it goes too.
		go func() {
			if w != nil {
				_ = w.Close()
			}
			_ = store.Close()
		}()
		return nil, fmt.Errorf("publisher: %w", ErrClosed)
	}
	if d.store == nil {
		d.store, d.by = store, map[string]StreamWriter{}
	}
	if err != nil {
		return nil, p.conn.redact(err)
	}
	d.by[stream] = w
	return w, nil
}

// current returns the open writer of stream (ok), or ErrClosed once the
// publisher is closed; neither when stream has no writer yet.
func (d *directWriters) current(stream string) (w StreamWriter, ok bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, false, fmt.Errorf("publisher: %w", ErrClosed)
	}
	w, ok = d.by[stream]
	return w, ok, nil
}

// drop forgets w after it failed, and the connection with it: the next
// write opens both again, at the Conn's current broker.
func (p *Publisher) drop(stream string, w StreamWriter) {
	d := &p.direct
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.by[stream] != w {
		return
	}
	store, writers := d.store, d.by
	d.store, d.by = nil, nil
	go func() {
		for _, w := range writers {
			_ = w.Close()
		}
		_ = store.Close()
	}()
}

// closeDirect closes the writers and their connection; later direct
// publishes fail with ErrClosed. The closes run unlocked: a writer's
// close tells its unconfirmed writes, whose callbacks take the lock.
func (p *Publisher) closeDirect() {
	d := &p.direct
	d.mu.Lock()
	d.closed = true
	store, writers := d.store, d.by
	d.store, d.by = nil, nil
	d.mu.Unlock()
	for _, w := range writers {
		_ = w.Close()
	}
	if store != nil {
		_ = store.Close()
	}
}

// writeDirect writes msg into dst.stream without waiting for its confirm.
// A write whose confirm will not come is a channel loss: the caller
// writes it again (same id) on a new writer.
func (p *Publisher) writeDirect(ctx context.Context, msg amqp.Publishing, dst destination) (inFlight, error) {
	headers, err := streamHeaders(msg.Headers)
	if err != nil {
		return inFlight{}, err
	}
	w, err := p.writer(ctx, dst.stream)
	if err != nil {
		return inFlight{}, err
	}
	out := StreamOutgoing{
		Body: msg.Body, Exchange: p.exchange, RoutingKey: dst.key, MessageID: msg.MessageId, Type: msg.Type,
		ContentType: msg.ContentType, Timestamp: msg.Timestamp, DeliveryMode: msg.DeliveryMode, Headers: headers,
		TypeAsProperty: p.conn.typeAsProperty.Load(),
	}
	done := make(chan error, 1)
	err = w.Write(out, func(err error) {
		if err != nil {
			p.drop(dst.stream, w)
			err = fmt.Errorf("%w: stream %q: %w", errChannelLost, dst.stream, err)
		}
		done <- err
	})
	if err != nil {
		if !errors.Is(err, ErrStreamWriterLost) {
			return inFlight{}, err // the message's own: the writer is sound
		}
		p.drop(dst.stream, w)
		// Wait a moment for the writer to be known gone, so that the
		// write again lands on a new one instead of spinning.
		select {
		case <-w.Lost():
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return inFlight{}, fmt.Errorf("%w: stream %q: %w", errChannelLost, dst.stream, err)
	}
	return inFlight{direct: done}, nil
}

// keepsTypeAsProperty reports whether RabbitMQ of version keeps an AMQP
// 0-9-1 publish's type as an application property of the message in a
// stream: releases before 3.13, whose message container changed it to an
// annotation. A version that does not parse is taken as a later one.
func keepsTypeAsProperty(version string) bool {
	return topology.VersionAtLeast(version, 0, 0) && !topology.VersionAtLeast(version, 3, 13)
}

// streamHeaders returns msg's headers as a stream message's application
// properties (the same map: the client only reads it), which hold scalars
// only: a header of another kind (a table, a list, a decimal) fails the
// publish, naming it, before anything is written.
func streamHeaders(h amqp.Table) (map[string]any, error) {
	for k, v := range h {
		switch v.(type) {
		case nil, bool, string, []byte, time.Time,
			int, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64:
		default:
			return nil, fmt.Errorf("header %q: a %T cannot be written into a stream directly (strings, numbers, booleans, bytes and times can)", k, v)
		}
	}
	return h, nil
}

// streamProtocolNeed names what in t needs the stream protocol (a stream
// consumer's offsets, a direct write), for the error that says the
// broker does not answer it; "" when nothing does.
func streamProtocolNeed(t topology.Topology) string {
	if sc := t.StreamConsumers(); len(sc) > 0 {
		return fmt.Sprintf("stream consumer %q", sc[0].Name)
	}
	if ds := t.DirectStreams(); len(ds) > 0 {
		return fmt.Sprintf("publishing directly into stream %q", ds[0])
	}
	return ""
}
