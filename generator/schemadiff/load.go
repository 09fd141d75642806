package schemadiff

import (
	"context"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// Load reads a schema directory for comparison. It needs only what the
// loader validates, not a model that builds: an old directory that a newer
// warren would reject can still be compared.
func Load(ctx context.Context, dir string) (*Dir, error) {
	s, err := load.Load(ctx, dir)
	if err != nil {
		return nil, err
	}
	return NewDir(s), nil
}

// NewDir prepares a loaded directory for comparison, matching each
// consumer's bindings with the generator's own matcher, [model.TopicMatch].
func NewDir(s *load.Schemas) *Dir {
	d := &Dir{Schemas: s}
	for _, mc := range s.Manifest.Consumers {
		c := Consumer{Name: mc.Name}
		for _, f := range s.Facts {
			for _, pattern := range mc.Bindings {
				if model.TopicMatch(pattern, f.RoutingKey) {
					c.Facts = append(c.Facts, f.RoutingKey)
					break
				}
			}
		}
		d.Consumers = append(d.Consumers, c)
	}
	return d
}
