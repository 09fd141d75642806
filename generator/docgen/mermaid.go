package docgen

import (
	"fmt"
	"strings"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/topology"
)

// mermaidTopology draws the topology: the events exchange routes to each
// work queue by binding, the work queue feeds its consumer, the consumer
// sends failures through the retry exchange to its delay queues (which
// return them to the work queue alone) or through the dead exchange to its
// poison queue.
func mermaidTopology(m *model.Model) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, "  "+format+"\n", args...) }
	b.WriteString("flowchart LR\n")
	line(`events{{"%s"}}`, mermaidLabel(m.Exchanges.Events))
	line(`retry{{"%s"}}`, mermaidLabel(m.Exchanges.Retry))
	line(`dead{{"%s"}}`, mermaidLabel(m.Exchanges.Dead))
	for i, c := range m.Consumers {
		tc := c.Topology
		work, cons, delay, poison := fmt.Sprintf("q%d", i), fmt.Sprintf("c%d", i), fmt.Sprintf("r%d", i), fmt.Sprintf("p%d", i)
		if tc.Ordered() {
			line(`%s[("%s")]`, work, mermaidLabel(tc.ShardExchange)+"<br>"+mermaidLabel(fmt.Sprintf("%d shards, one active consumer each", len(tc.Shards))))
		} else {
			line(`%s[("%s")]`, work, mermaidLabel(tc.Queue))
		}
		line(`%s(["%s"])`, cons, mermaidLabel(c.Name))
		line(`%s[("%s")]`, poison, mermaidLabel(tc.PoisonQueue))
		for _, pattern := range c.Bindings {
			line(`events -->|"%s"| %s`, mermaidLabel(pattern), work)
		}
		line(`%s --> %s`, work, cons)
		if tiers := tc.DistinctTiers(); len(tiers) > 0 {
			var delays []string
			for _, t := range tiers {
				delays = append(delays, topology.FormatDelay(t.Delay))
			}
			line(`%s[("%s<br>%s")]`, delay, mermaidLabel(c.Name+".retry.*"), mermaidLabel(strings.Join(delays, ", ")))
			line(`%s -.->|"retry"| retry`, cons)
			line(`retry -.-> %s`, delay)
			line(`%s -.->|"after the delay"| %s`, delay, work)
		}
		line(`%s -.->|"give up"| dead`, cons)
		for _, q := range m.Topology.Queues {
			if q.Name == tc.Queue && q.DeliveryLimit > 0 {
				line(`%s -.->|"over the delivery limit"| dead`, work)
			}
		}
		line(`dead -.-> %s`, poison)
	}
	mermaidRequests(&b, m)
	return b.String()
}
