package golden_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

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
				t.Fatalf("golden case %s is missing from the topologies map of %s", name, "roundtrip_test.go")
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
	if c := topologies["consumers"]; len(c.Queues) == 0 || len(c.Consumers) != 4 {
		t.Errorf("the consumers case declares %d queues and %d consumers; the comparison above needs its four consumers", len(c.Queues), len(c.Consumers))
	}
}
