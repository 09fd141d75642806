package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/warrenbus/warren/internal/streamproto"
)

// This package's tests cannot import runtime/streamoffset (it imports
// runtime): they open the same store directly.
func init() {
	SetDefaultOffsetDialer(func(ctx context.Context, ep StreamEndpoint) (OffsetStore, error) {
		s, err := streamproto.Open(ctx, streamproto.Endpoint(ep))
		if err != nil {
			return nil, err
		}
		return testGroupStore{s}, nil
	})
}

// dialWithoutRead dials the same store without its Read: a plain stream
// consumer then reads its stream over AMQP, as with an offset store of
// one's own.
func dialWithoutRead(ctx context.Context, ep StreamEndpoint) (OffsetStore, error) {
	s, err := streamproto.Open(ctx, streamproto.Endpoint(ep))
	if err != nil {
		return nil, err
	}
	return storeWithoutRead{s}, nil
}

// storeWithoutRead is testGroupStore but for Read (the embedded Store's
// Read is not a StreamReader's).
type storeWithoutRead struct{ *streamproto.Store }

func (s storeWithoutRead) Join(ctx context.Context, g ConsumerGroup) (GroupMember, error) {
	return testGroupStore(s).Join(ctx, g)
}

func (s storeWithoutRead) Writer(ctx context.Context, stream string) (StreamWriter, error) {
	return testGroupStore(s).Writer(ctx, stream)
}

// eachReadMode runs test for both ways a plain stream consumer reads its
// stream: over the stream protocol, when its offset store reads streams
// (runtime/streamoffset's does), and over AMQP, when it does not. test
// passes offsets as Config.StreamOffsets.
func eachReadMode(t *testing.T, test func(t *testing.T, offsets OffsetDialer)) {
	t.Run("stream protocol", func(t *testing.T) { test(t, nil) })
	t.Run("AMQP", func(t *testing.T) { test(t, dialWithoutRead) })
}

// testGroupStore is runtime/streamoffset's store, which this package's
// tests cannot import: the stream client as a GroupStore.
type testGroupStore struct{ *streamproto.Store }

func (s testGroupStore) Join(ctx context.Context, g ConsumerGroup) (GroupMember, error) {
	return s.Store.Join(ctx, streamproto.Group{
		SuperStream: g.SuperStream,
		Consumer:    g.Consumer,
		Activated:   func(p string) streamproto.Position { return streamproto.Position(g.Activated(p)) },
		Deactivated: g.Deactivated,
		Deliver:     func(m streamproto.Message) { g.Deliver(StreamMessage(m)) },
		Lost:        g.Lost,
		Retrying:    g.Retrying,
	})
}

func (s testGroupStore) Read(ctx context.Context, r StreamRead) (StreamReading, error) {
	rd, err := s.Store.Read(ctx, streamproto.Reading{
		Stream: r.Stream,
		Name:   r.Consumer,
		Position: func() (streamproto.Position, error) {
			p, err := r.Position()
			return streamproto.Position(p), err
		},
		Deliver:  func(m streamproto.Message) { r.Deliver(StreamMessage(m)) },
		Lost:     r.Lost,
		Retrying: r.Retrying,
	})
	if errors.Is(err, streamproto.ErrOtherNodes) {
		return nil, fmt.Errorf("%w: %w", ErrStreamOnOtherNodes, err)
	}
	if err != nil {
		return nil, err
	}
	return rd, nil
}

func (s testGroupStore) Writer(ctx context.Context, stream string) (StreamWriter, error) {
	w, err := s.Store.Writer(ctx, stream)
	if errors.Is(err, streamproto.ErrWriterRefused) {
		return nil, fmt.Errorf("%w: %w", ErrStreamRefused, err)
	}
	if errors.Is(err, streamproto.ErrOtherNodes) {
		return nil, fmt.Errorf("%w: %w", ErrStreamOnOtherNodes, err)
	}
	if err != nil {
		return nil, err
	}
	return testWriter{w}, nil
}

// testWriter is runtime/streamoffset's writer, as testGroupStore is its
// store.
type testWriter struct{ *streamproto.Writer }

func (w testWriter) Write(m StreamOutgoing, done func(error)) error {
	err := w.Writer.Write(streamproto.Outgoing(m), done)
	if errors.Is(err, streamproto.ErrWriterLost) {
		return fmt.Errorf("%w: %w", ErrStreamWriterLost, err)
	}
	return err
}
