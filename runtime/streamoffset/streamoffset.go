// Package streamoffset keeps stream consumers' offsets on RabbitMQ over the
// stream protocol (the rabbitmq_stream plugin). Importing it sets [Dial] as
// the default [runtime.OffsetDialer], which every Conn whose topology has
// stream consumers needs; generated packages with stream consumers import
// it, so their users do nothing more.
//
// It is a package of its own because the stream protocol's client brings
// OpenTelemetry and compression libraries: package runtime does not import
// it, so programs without stream consumers do not compile them.
package streamoffset

import (
	"context"
	"log/slog"

	"github.com/warrenbus/warren/internal/streamproto"
	"github.com/warrenbus/warren/runtime"
)

func init() { runtime.SetDefaultOffsetDialer(Dial) }

// Dial opens a stream-protocol connection to ep that stores and queries
// offsets; it is a [runtime.OffsetDialer], for runtime.Config.StreamOffsets.
// A connection the broker closes is opened again at the next call.
func Dial(ctx context.Context, ep runtime.StreamEndpoint) (runtime.OffsetStore, error) {
	s, err := streamproto.Open(ctx, streamproto.Endpoint(ep))
	if err != nil {
		return nil, err
	}
	return store{s}, nil
}

// LogTo sends the stream protocol client's own log lines to l, for the
// whole process (the client has one logger). Until then they go to
// slog.Default(), and the two lines a connection's close brings, which
// report nothing lost (the client's reply to its own close's answer
// written on the socket it closed, or its close request finding the
// connection closed), at debug level.
func LogTo(l *slog.Logger) { streamproto.LogTo(l) }
