package streamproto

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/message"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"
)

// Outgoing is one fact to write into a stream, with what AMQP 0-9-1 would
// have given it had it come through an exchange: RabbitMQ keeps a message
// published over AMQP 0-9-1 in a stream as this AMQP 1.0 message, and
// hands it back the same way to a reader of either protocol.
type Outgoing struct {
	Body         []byte
	Exchange     string
	RoutingKey   string
	MessageID    string
	Type         string
	ContentType  string
	Timestamp    time.Time
	DeliveryMode uint8 // 2 for persistent; 0 writes none
	Headers      map[string]any
	// TypeAsProperty writes Type as the application property
	// x-basic-type too: RabbitMQ before 3.13 keeps an AMQP 0-9-1
	// publish's type there, and gives it back to AMQP 0-9-1 readers only
	// from there. Later releases read it from the annotation, always
	// written, and would hand the property to those readers as a header.
	TypeAsProperty bool
}

// ErrWriterLost is matched by a write whose confirm will never come: the
// writer's connection or producer closed first. Whether the broker kept
// the fact is unknown; writing it again is the at-least-once answer.
var ErrWriterLost = errors.New("stream writer closed before the broker confirmed")

// ErrWriterRefused is matched by [Store.Writer]'s error when the broker
// refused the writer for good: the stream does not exist, or the user may
// not write into it.
var ErrWriterRefused = errors.New("the broker refused the stream writer")

// refusal is the broker's refusal of a writer: it matches
// [ErrWriterRefused] and the client's error, and says only why (the
// stream does not exist), since whoever handles it says that the writer
// was refused (runtime.ErrStreamRefused wraps it).
type refusal struct{ err error }

func (e refusal) Error() string {
	if errors.Is(e.err, stream.StreamDoesNotExist) {
		return "it does not exist"
	}
	return e.err.Error()
}

func (e refusal) Unwrap() []error { return []error{ErrWriterRefused, e.err} }

// writerError is the error of opening a writer of streamName: err, a
// refusal when trying again does not mend it.
func writerError(streamName string, err error) error {
	if refused(err) {
		err = refusal{err}
	}
	return fmt.Errorf("write into stream %q: %w", streamName, err)
}

// refused reports whether err is one of the stream client's refusals that
// trying again does not mend.
func refused(err error) bool {
	for _, e := range []error{stream.StreamDoesNotExist, stream.AuthenticationFailure, stream.AuthenticationFailureLoopbackError, stream.VirtualHostAccessFailure, stream.CodeAccessRefused, stream.PreconditionFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Writer writes facts into one stream with the stream protocol's
// producer: the client gathers the facts written meanwhile into one
// publish frame, and the broker confirms each.
type Writer struct {
	stream string
	p      *stream.Producer
	mu     sync.Mutex
	// pending maps each message sent to what its confirm is told to.
	pending map[message.StreamMessage]func(error)
	closed  bool
	done    chan struct{} // closed once the confirm listener has returned
}

// Writer opens a producer on streamName over the Store's connection.
func (s *Store) Writer(ctx context.Context, streamName string) (*Writer, error) {
	env, err := s.environment(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.oneNode(ctx, streamName); err != nil {
		return nil, writerError(streamName, err)
	}
	p, err := call(ctx, func() (*stream.Producer, error) {
		return env.NewProducer(streamName, stream.NewProducerOptions().SetClientProvidedName("warren-writer"))
	})
	if err != nil {
		return nil, writerError(streamName, err)
	}
	w := &Writer{stream: streamName, p: p, pending: map[message.StreamMessage]func(error){}, done: make(chan struct{})}
	go w.listen(p.NotifyPublishConfirmation())
	return w, nil
}

// listen tells each confirm to its write, and, once the client closes the
// confirmations (the producer or its connection closed), every write still
// unconfirmed that it was lost.
func (w *Writer) listen(confirms stream.ChannelPublishConfirm) {
	defer close(w.done)
	for batch := range confirms {
		for _, st := range batch {
			var err error
			if !st.IsConfirmed() {
				// Refused or timed out: the broker may or may not hold
				// it, as with a lost connection.
				err = fmt.Errorf("%w: %w", ErrWriterLost, st.GetError())
			}
			w.settle(st.GetMessage(), err)
		}
	}
	w.mu.Lock()
	w.closed = true
	lost := w.pending
	w.pending = map[message.StreamMessage]func(error){}
	w.mu.Unlock()
	for _, done := range lost {
		done(ErrWriterLost)
	}
}

func (w *Writer) settle(m message.StreamMessage, err error) {
	w.mu.Lock()
	done, ok := w.pending[m]
	delete(w.pending, m)
	w.mu.Unlock()
	if ok {
		done(err)
	}
}

// Write sends o and returns once the client has taken it; done is called
// once, from another goroutine, with nil when the broker confirmed it, or
// an error matching [ErrWriterLost]. A Write that returns an error calls
// no done.
func (w *Writer) Write(o Outgoing, done func(error)) error {
	m, err := encode(o)
	if err != nil {
		return fmt.Errorf("write into stream %q: %w", w.stream, err)
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrWriterLost
	}
	w.pending[m] = done
	w.mu.Unlock()
	if err = w.p.Send(m); err != nil {
		w.mu.Lock()
		_, still := w.pending[m]
		delete(w.pending, m)
		w.mu.Unlock()
		if !still {
			// The client reported it unconfirmed already, and done was
			// told.
			return nil
		}
		if strings.Contains(err.Error(), "closed") {
			// The client's words for a producer or queue closed under
			// it; anything else (a value it cannot encode) is the
			// message's.
			return fmt.Errorf("%w: %w", ErrWriterLost, err)
		}
		return fmt.Errorf("write into stream %q: %w", w.stream, err)
	}
	return nil
}

// Lost is closed once the writer can write no more: its producer or
// connection closed.
func (w *Writer) Lost() <-chan struct{} { return w.done }

// Close closes the producer, after the client has sent what it holds; the
// writes not confirmed by then are told they were lost.
func (w *Writer) Close() error {
	err := w.p.Close()
	if errors.Is(err, stream.AlreadyClosed) {
		err = nil
	}
	return err
}
