package golden_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	additional "github.com/warrenbus/warren/golden/additional/want"
	allof "github.com/warrenbus/warren/golden/allof/want"
	arrays "github.com/warrenbus/warren/golden/arrays/want"
	consumers "github.com/warrenbus/warren/golden/consumers/want"
	defaults "github.com/warrenbus/warren/golden/defaults/want"
	docs "github.com/warrenbus/warren/golden/docs/want"
	enums "github.com/warrenbus/warren/golden/enums/want"
	factroots "github.com/warrenbus/warren/golden/fact-roots/want"
	formats "github.com/warrenbus/warren/golden/formats/want"
	mixeddrafts "github.com/warrenbus/warren/golden/mixed-drafts/want"
	names "github.com/warrenbus/warren/golden/names/want"
	nested "github.com/warrenbus/warren/golden/nested/want"
	nullable "github.com/warrenbus/warren/golden/nullable/want"
	objects "github.com/warrenbus/warren/golden/objects/want"
	recursion "github.com/warrenbus/warren/golden/recursion/want"
	refs "github.com/warrenbus/warren/golden/refs/want"
	requests "github.com/warrenbus/warren/golden/requests/want"
	unions "github.com/warrenbus/warren/golden/unions/want"
	vendorshapes "github.com/warrenbus/warren/golden/vendor-shapes/want"
	wiring "github.com/warrenbus/warren/golden/wiring/want"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/topology"
)

// topologies maps each golden case to the Topology its package declares.
var topologies = map[string]topology.Topology{
	"additional":    additional.Topology,
	"allof":         allof.Topology,
	"arrays":        arrays.Topology,
	"consumers":     consumers.Topology,
	"defaults":      defaults.Topology,
	"docs":          docs.Topology,
	"enums":         enums.Topology,
	"fact-roots":    factroots.Topology,
	"formats":       formats.Topology,
	"mixed-drafts":  mixeddrafts.Topology,
	"names":         names.Topology,
	"nested":        nested.Topology,
	"nullable":      nullable.Topology,
	"objects":       objects.Topology,
	"recursion":     recursion.Topology,
	"refs":          refs.Topology,
	"requests":      requests.Topology,
	"unions":        unions.Topology,
	"vendor-shapes": vendorshapes.Topology,
	"wiring":        wiring.Topology,
}

// TestTopologyLiteral compiles nothing new: it compares the Topology
// literal each golden package declares with the topology the model builds
// from the same schema directory (topology.Build). A field the emitter left
// out, or a duration or constant written wrongly, shows up here.
func TestTopologyLiteral(t *testing.T) {
	cases, err := filepath.Glob("*/want")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range cases {
		name := filepath.Dir(want)
		t.Run(name, func(t *testing.T) {
			compiled, ok := topologies[name]
			if !ok {
				t.Fatalf("golden case %s is missing from the topologies map of %s", name, "topology_test.go")
			}
			s, err := load.Load(context.Background(), filepath.Join(name, "events"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := model.Build(context.Background(), s, model.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(m.Topology, compiled); diff != "" {
				t.Errorf("Topology of golden/%s differs from topology.Build (-built +compiled):\n%s", name, diff)
			}
		})
	}
	if c := topologies["consumers"]; len(c.Queues) == 0 || len(c.Consumers) != 3 {
		t.Errorf("the consumers case declares %d queues and %d consumers; the comparison above needs its three consumers", len(c.Queues), len(c.Consumers))
	}
}
