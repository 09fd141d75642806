package streamoffset

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenbus/warren/internal/streamproto"
	"github.com/warrenbus/warren/runtime"
)

// Writer opens a writer of a stream, for a Publisher's direct writes.
func (s store) Writer(ctx context.Context, stream string) (runtime.StreamWriter, error) {
	w, err := s.Store.Writer(ctx, stream)
	if errors.Is(err, streamproto.ErrWriterRefused) {
		return nil, fmt.Errorf("%w: %w", runtime.ErrStreamRefused, err)
	}
	if errors.Is(err, streamproto.ErrOtherNodes) {
		return nil, fmt.Errorf("%w: %w", runtime.ErrStreamOnOtherNodes, err)
	}
	if err != nil {
		return nil, err
	}
	return writer{w}, nil
}

// writer is the stream client's producer as a [runtime.StreamWriter].
type writer struct{ *streamproto.Writer }

func (w writer) Write(m runtime.StreamOutgoing, done func(error)) error {
	err := w.Writer.Write(streamproto.Outgoing(m), done)
	if errors.Is(err, streamproto.ErrWriterLost) {
		return fmt.Errorf("%w: %w", runtime.ErrStreamWriterLost, err)
	}
	return err
}
