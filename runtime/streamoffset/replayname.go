package streamoffset

import (
	"context"
	"fmt"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// ReplayOfInfix joins a replay's offset name and its consumer's name in the
// reference under which [Apply] marks whose replay the name is:
// NAME+ReplayOfInfix+CONSUMER. warren status reads it to tell, on a stream
// that several consumers read, which one a replay's name is for. The "~"
// cannot occur in an offset name or a consumer's, so the mark never meets
// either.
const ReplayOfInfix = "~of~"

// maxReference is the longest reference (offset name) the stream protocol
// stores an offset under.
const maxReference = 255

// ReplayOfRef is the reference under which [Apply] marks that the replay
// under name is consumer's; "" when it would be longer than the stream
// protocol takes, and then no mark is stored.
func ReplayOfRef(name, consumer string) string {
	ref := name + ReplayOfInfix + consumer
	if len(ref) > maxReference {
		return ""
	}
	return ref
}

// CheckReplayName reports whether name can be the offset name of a replay
// of consumer c of topology t: an offset name ([runtime.CheckOffsetName]),
// not c's own, and not the own name of any other consumer of t. A stream
// consumer keeps its offset under its own name, so a replay under the name
// of another consumer of the same stream would position that consumer's
// offset (it would start where the replay does, not at its start) and
// store a bound beside it; and a reader under a name claims facts in its
// guard under the name, so under any other consumer's name, one that reads
// a queue too, the two would take each other's facts for handled.
func CheckReplayName(t topology.Topology, c topology.Consumer, name string) error {
	if err := runtime.CheckOffsetName(name); err != nil {
		return err
	}
	if name == c.Name {
		return fmt.Errorf("offset name %q is the consumer's own: a replay reads under a fresh name, beside the consumer's live offset", name)
	}
	other, ok := t.Consumer(name)
	if !ok {
		return nil
	}
	why := "its guard claims facts under it, as a reader under the name would, so each would take the facts the other handled for handled already"
	if other.Stream != "" && other.Stream == c.Stream && len(other.Partitions) == 0 {
		why = fmt.Sprintf("it keeps its own offset on stream %q under it: a replay under the name would store its start and bound there, and %s would start where the replay put it, not at its own start", c.Stream, other.Name)
	}
	return fmt.Errorf("offset name %q is the own name of consumer %q: %s; choose a name of its own for the replay of %s, such as %q", name, other.Name, why, c.Name, c.Name+".rebuild")
}

// ReplayOf returns those of consumers for which [Apply] marked a replay
// under name on stream (see [ReplayOfInfix]): on a stream that several
// consumers read, which one the replay is for. A replay positioned before
// marks were stored, or a reader started under a fresh name without a
// replay, has none.
func (r *LagReader) ReplayOf(ctx context.Context, stream, name string, consumers []string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		s, err := open(ctx, r.b)
		if err != nil {
			return nil, err
		}
		r.s = s
	}
	var out []string
	for _, c := range consumers {
		ref := ReplayOfRef(name, c)
		if ref == "" {
			continue
		}
		_, found, err := r.s.QueryOffset(ctx, ref, stream)
		if err != nil {
			return nil, noStream(fmt.Errorf("query offset %q of stream %q: %w", ref, stream, err))
		}
		if found {
			out = append(out, c)
		}
	}
	return out, nil
}
