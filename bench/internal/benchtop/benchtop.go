// Package benchtop picks out of the benchmarks' generated topology what
// one consumer needs.
package benchtop

import "github.com/warrenbus/warren/runtime/topology"

// Only returns the part of t that belongs to one consumer: the exchanges,
// its queues and their bindings, and what every consumer shares: the delay
// levels (queues of no consumer, and the exchange-to-exchange bindings
// between levels). The two consumers of the manifest bind the same fact;
// declaring one keeps the other's queue from filling up.
func Only(t topology.Topology, consumer string) topology.Topology {
	out := topology.Topology{Exchanges: t.Exchanges, Delay: t.Delay}
	queues := map[string]bool{}
	for _, q := range t.Queues {
		if q.Consumer == consumer || q.Consumer == "" {
			out.Queues = append(out.Queues, q)
			queues[q.Name] = true
		}
	}
	for _, bd := range t.Bindings {
		if queues[bd.Queue] || bd.ToExchange != "" {
			out.Bindings = append(out.Bindings, bd)
		}
	}
	for _, c := range t.Consumers {
		if c.Name == consumer {
			out.Consumers = append(out.Consumers, c)
		}
	}
	return out
}
