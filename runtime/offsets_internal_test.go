package runtime

import (
	"context"
	"errors"
	"fmt"

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
	})
}

func (s testGroupStore) Writer(ctx context.Context, stream string) (StreamWriter, error) {
	w, err := s.Store.Writer(ctx, stream)
	if errors.Is(err, streamproto.ErrWriterRefused) {
		return nil, fmt.Errorf("%w: %w", ErrStreamRefused, err)
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
