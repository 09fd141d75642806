package schemadiff

import (
	"context"
	"io/fs"
	"slices"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/topology"
)

// Load reads a schema directory for comparison. It needs only what the
// loader validates, not a model that builds: an old directory that a newer
// warren would reject can still be compared. Imports are resolved as
// load.Load does; warren diff, which resolves module imports, opens each
// side with generator.Open and prepares it with [NewDir].
func Load(ctx context.Context, dir string) (*Dir, error) {
	s, err := load.Load(ctx, dir)
	if err != nil {
		return nil, err
	}
	return NewDir(s), nil
}

// LoadFS is [Load] for a schema directory held in a file system, such as
// the tree of a git revision.
func LoadFS(ctx context.Context, fsys fs.FS) (*Dir, error) {
	s, err := load.LoadFS(ctx, fsys)
	if err != nil {
		return nil, err
	}
	return NewDir(s), nil
}

// NewDir prepares a loaded directory for comparison, matching each
// consumer's bindings with the generator's own matcher, [model.TopicMatch],
// and building each consumer's queues as the generator would.
func NewDir(s *load.Schemas) *Dir {
	d := &Dir{Schemas: s}
	ex := topology.Exchanges{Events: s.Manifest.Exchanges.Events, Retry: s.Manifest.Exchanges.Retry, Dead: s.Manifest.Exchanges.Dead}
	// A consumer binds the imported facts too.
	facts := append(slices.Clone(s.Facts), s.ImportedFacts()...)
	for _, mc := range s.Manifest.Consumers {
		c := Consumer{Name: mc.Name}
		for _, f := range facts {
			for _, pattern := range mc.Bindings {
				if model.TopicMatch(pattern, f.RoutingKey) {
					c.Facts = append(c.Facts, f.RoutingKey)
					break
				}
			}
		}
		spec := model.ConsumerSpec(mc, s.Manifest.Defaults)
		// A stream consumer's queues build only beside its stream.
		var streams []topology.StreamSpec
		for _, st := range model.StreamSpecs(s.Manifest) {
			if st.Name == mc.Stream {
				streams = append(streams, st)
			}
		}
		if top, err := topology.Build(topology.Spec{Exchanges: ex, Streams: streams, Consumers: []topology.ConsumerSpec{spec}}); err == nil {
			c.Queues = slices.DeleteFunc(top.Queues, func(q topology.Queue) bool { return q.Role == topology.RoleStream })
		}
		d.Consumers = append(d.Consumers, c)
	}
	return d
}

// queue returns the consumer's queue of the given role (the first one for
// retry), and false when its topology did not build.
func (c Consumer) queue(role topology.Role) (topology.Queue, bool) {
	i := slices.IndexFunc(c.Queues, func(q topology.Queue) bool { return q.Role == role })
	if i < 0 {
		return topology.Queue{}, false
	}
	return c.Queues[i], true
}
