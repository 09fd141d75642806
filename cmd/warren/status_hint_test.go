package main

import (
	"testing"

	"github.com/warrenbus/warren/runtime/topology"
)

// When the topology is not declared, status advises warren declare, but
// not for a topology with super streams on a broker that has none: there
// declaring can only be refused, and it says why instead.
func TestDeclareHint(t *testing.T) {
	super := topology.Topology{Exchanges: []topology.Exchange{{Name: "events"}, {Name: "orders-by-id", SuperStream: true}}}
	plain := topology.Topology{Exchanges: []topology.Exchange{{Name: "events"}}}
	for _, c := range []struct {
		top           topology.Topology
		version, want string
	}{
		{super, "3.10.8", "the topology has super streams, which need RabbitMQ 3.11 or later, and the broker runs 3.10.8: warren declare refuses them"},
		{super, "4.0.5", "run warren declare ./events"},
		{super, "", "run warren declare ./events"},
		{plain, "3.10.8", "run warren declare ./events"},
	} {
		if got := declareHint(c.top, c.version, "./events"); got != c.want {
			t.Errorf("declareHint(%v, %q) = %q, want %q", c.top.Exchanges, c.version, got, c.want)
		}
	}
}
