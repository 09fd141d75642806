package lint

import (
	"context"
	"slices"
	"strconv"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// NewInput prepares the rules' input from a loaded directory and the model
// built from it. Each binding is matched against the facts with the
// generator's own matcher, [model.TopicMatch], so the linter and the
// generated code never disagree about what a binding receives.
//
// m may be nil: a binding that matches nothing, which fails the model, is
// exactly what the binding rule reports. The Go names the generator would
// change are then worked out from a model built here with a stand-in
// package name, so that a missing or invalid one hides none of them.
func NewInput(s *load.Schemas, m *model.Model) Input {
	in := Input{Schemas: s, Consumers: []Consumer{}}
	for _, mc := range s.Manifest.Consumers {
		c := Consumer{Name: mc.Name}
		for _, pattern := range mc.Bindings {
			b := Binding{Pattern: pattern}
			// Imported facts are bound here too; they are checked
			// (and published) in their own directory.
			for _, f := range append(slices.Clone(s.Facts), s.ImportedFacts()...) {
				if model.TopicMatch(pattern, f.RoutingKey) {
					b.Facts = append(b.Facts, f.RoutingKey)
				}
			}
			c.Bindings = append(c.Bindings, b)
		}
		in.Consumers = append(in.Consumers, c)
	}
	if m == nil {
		// The package name does not change what is renamed.
		m, _ = model.Build(context.Background(), s, model.Options{Package: "lint"})
	}
	if m != nil {
		in.Renamed = m.Renamed
		in.DroppedDefaults = m.DroppedDefaults
	}
	return in
}

// checkDroppedDefaults reports each default of a vendored file that its
// schema refuses: a team's file would fail the build over it, but a
// vendored one is not edited, so the generated code leaves it out.
func checkDroppedDefaults(p *pass) {
	for _, d := range p.in.DroppedDefaults {
		p.report(d.Doc, d.Pointer, "default %s does not fit the schema: %s; the file is vendored, so the generated code leaves the default out", model.JSONText(d.Value), d.Why)
	}
}

// checkRenamed reports each Go name the generator changed, so that a user
// knows which identifier a vendor's property or definition became.
func checkRenamed(p *pass) {
	for _, r := range p.in.Renamed {
		from := "it has no letter or digit to name it by"
		if r.From != "" {
			from = strconv.Quote(r.From) + " is taken"
		}
		p.report(r.Doc, r.Pointer, "the %s is named %s: %s", r.What, r.To, from)
	}
}
