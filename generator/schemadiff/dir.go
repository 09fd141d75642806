package schemadiff

import (
	"slices"
	"sync"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/topology"
)

// Dir is one side of a comparison: a loaded schema directory and what its
// consumers receive, as the generator's model decided.
type Dir struct {
	Schemas   *load.Schemas // the loaded, validated directory
	Consumers []Consumer    // every consumer in the manifest

	// conj holds the schemas that stand for several schemas a value
	// must all satisfy (see conjunction), one per set, so that comparing
	// a recursive schema meets the same pair again and stops.
	conjMu sync.Mutex
	conj   map[string]*load.Schema
}

// Consumer is one consumer with the facts its bindings match.
type Consumer struct {
	Name   string
	Facts  []string         // routing keys of the facts its bindings match
	Queues []topology.Queue // its poison, work and delay queues; nil when its settings do not build
}

// Mode returns the compatibility mode of fact f: its x-compatibility, else
// the manifest's, else [DefaultMode]. A nil f asks for the manifest's.
func (d *Dir) Mode(f *load.Fact) Mode {
	if f != nil && f.Compatibility != "" {
		if m, err := ParseMode(f.Compatibility); err == nil {
			return m
		}
	}
	if d.Schemas.Manifest != nil {
		if m, err := ParseMode(d.Schemas.Manifest.Compatibility); err == nil {
			return m
		}
	}
	return DefaultMode
}

// Fact returns the fact with the given routing key, nil when there is none.
func (d *Dir) Fact(key string) *load.Fact {
	for _, f := range d.Schemas.Facts {
		if f.RoutingKey == key {
			return f
		}
	}
	return nil
}

// loc is a place inside one of a Dir's files.
type loc struct{ file, ptr string }

// asserts reports whether the side's consumers check format f: the
// manifest's assertFormats, and date-time, whose values become a
// time.Time (model.AssertedFormats); any other format is an annotation.
func (d *Dir) asserts(f string) bool {
	return slices.Contains(model.AssertedFormats(d.Schemas.Manifest), f)
}

// pos turns a location into a position on side s.
func (d *Dir) pos(s Side, at loc) Pos {
	p := Pos{Side: s, File: at.file, Pointer: at.ptr}
	doc, ok := d.Schemas.Doc(at.file)
	if at.file == load.ManifestFile && d.Schemas.Manifest != nil {
		doc, ok = d.Schemas.Manifest.Doc, true
	}
	if ok {
		p.Line, p.Col, _ = doc.Position(at.ptr)
	}
	return p
}

// appendPtr extends a JSON pointer by reference tokens.
func appendPtr(ptr string, tokens ...string) string {
	for _, t := range tokens {
		ptr = load.Append(ptr, t)
	}
	return ptr
}
