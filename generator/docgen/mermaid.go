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
// poison queue. A stream is bound from the events exchange like a queue
// and feeds its stream consumers directly; a stream consumer's work queue
// is bound to nothing and feeds it only its retries and deferrals.
func mermaidTopology(m *model.Model, streams []streamView) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, "  "+format+"\n", args...) }
	b.WriteString("flowchart LR\n")
	line(`events{{"%s"}}`, mermaidLabel(m.Exchanges.Events))
	line(`retry{{"%s"}}`, mermaidLabel(m.Exchanges.Retry))
	line(`dead{{"%s"}}`, mermaidLabel(m.Exchanges.Dead))
	streamNodes := mermaidStreams(line, m, streams)
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
		if tc.Stream != "" {
			label := startLabel(tc.Start) + ", then its offset"
			if len(tc.Partitions) > 0 {
				label = startLabel(tc.Start) + ", one active per partition"
			}
			line(`%s -->|"%s"| %s`, streamNodes[tc.Stream], mermaidLabel(label), cons)
			line(`%s -.->|"retries, deferrals"| %s`, work, cons)
		} else {
			for _, pattern := range c.Bindings {
				line(`events -->|"%s"| %s`, mermaidLabel(pattern), work)
			}
			line(`%s --> %s`, work, cons)
		}
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
