package runtime

import (
	"context"

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
		return s, nil
	})
}
