package model

import (
	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/runtime/topology"
)

// ConsumerSpec returns the topology spec of one manifest consumer: its own
// settings over the manifest's /defaults, as [Build] gives it to
// topology.Build. Comparing two directories needs it without building
// either model.
func ConsumerSpec(c *load.Consumer, defaults load.Settings) topology.ConsumerSpec {
	return consumerSpec(c, defaults)
}
