package streamoffset

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenbus/warren/internal/streamproto"
	"github.com/warrenbus/warren/runtime"
)

// store is the stream protocol's client as a [runtime.GroupStore].
type store struct{ *streamproto.Store }

// Join joins a consumer group of a super stream.
func (s store) Join(ctx context.Context, g runtime.ConsumerGroup) (runtime.GroupMember, error) {
	return s.Store.Join(ctx, streamproto.Group{
		SuperStream: g.SuperStream,
		Consumer:    g.Consumer,
		Activated:   func(p string) streamproto.Position { return streamproto.Position(g.Activated(p)) },
		Deactivated: g.Deactivated,
		Deliver:     func(m streamproto.Message) { g.Deliver(runtime.StreamMessage(m)) },
		Lost:        g.Lost,
		Retrying:    g.Retrying,
	})
}

// Read reads a plain stream.
func (s store) Read(ctx context.Context, r runtime.StreamRead) (runtime.StreamReading, error) {
	rd, err := s.Store.Read(ctx, streamproto.Reading{
		Stream: r.Stream,
		Name:   r.Consumer,
		Position: func() (streamproto.Position, error) {
			p, err := r.Position()
			return streamproto.Position(p), err
		},
		Deliver:  func(m streamproto.Message) { r.Deliver(runtime.StreamMessage(m)) },
		Lost:     r.Lost,
		Retrying: r.Retrying,
	})
	if errors.Is(err, streamproto.ErrOtherNodes) {
		return nil, fmt.Errorf("%w: %w", runtime.ErrStreamOnOtherNodes, err)
	}
	if err != nil {
		return nil, err
	}
	return rd, nil
}
