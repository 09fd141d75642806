package gogen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
	"github.com/warrenbus/warren/runtime/topology"
)

// genBatchConsumer writes what a batch consumer has instead of a
// handler method per fact: the batch type, holding the batch's facts by
// type, the handler interface that takes it, and the constructor.
func (e *emitter) genBatchConsumer(f *jen.File, c *model.Consumer) {
	tc := c.Topology
	batchDoc := fmt.Sprintf("%s is one batch of consumer %q: its facts by type, each in arrival order with its delivery.", c.BatchName(), c.Name)
	settles := "Each fact settles on its own: a failed one is retried along the consumer's retry ladder, a panic retries the whole batch."
	reads := queuesRead(tc)
	if tc.Ordered() {
		batchDoc = fmt.Sprintf("%s is one batch of ordered consumer %q: its facts by type, at most one per ordering key, each with its delivery.", c.BatchName(), c.Name)
		settles = "Each fact settles on its own: a failed one is retried in place, the later facts of its key waiting behind it (they reach a later batch only once it is settled), a panic retries the whole batch."
	}
	for _, l := range docComment(batchDoc) {
		f.Add(l)
	}
	f.Type().Id(c.BatchName()).StructFunc(func(g *jen.Group) {
		for _, fact := range c.Facts {
			g.Id(fact.GoName).Index().Qual(runtimePath, "Item").Types(factQual(fact, fact.Type.GoName)).Comment(fact.RoutingKey)
		}
	})
	f.Line()
	batch := tc.Batch
	for _, l := range docComment(
		fmt.Sprintf("%s handles the facts that consumer %q receives, in batches of up to %d facts, each closed at that size or %s after its first fact. %s binds it to the runtime.", c.HandlerName(), c.Name, batch.Size, batch.Wait, c.ConstructorName()),
		"HandleBatch returns an outcome per fact, by its Delivery.MessageID (runtime.Outcomes: nil done, an error failed, runtime.Permanent to poison), or one error for the whole batch; nil and nil mean every fact is done. "+settles+" Delivery is at least once; runtime.WithGuard claims the batch in the transaction the handler writes in, and the handler must leave no writes of a fact it reports failed.",
		c.Description,
		"Bindings: "+strings.Join(c.Bindings, ", "),
	) {
		f.Add(l)
	}
	f.Type().Id(c.HandlerName()).Interface(
		jen.Id("HandleBatch").Params(
			jen.Id("ctx").Qual(contextPath, "Context"),
			jen.Id("batch").Id(c.BatchName()),
		).Params(jen.Qual(runtimePath, "Outcomes"), jen.Error()),
	)
	f.Line()
	index := slices.IndexFunc(e.m.Topology.Consumers, func(tc topology.Consumer) bool { return tc.Name == c.Name })
	for _, l := range docComment(fmt.Sprintf("%s returns batch consumer %q: it reads %s and calls h with each batch, with the batch, prefetch, concurrency, retry ladder and attempt limit of %s. Start it with Run. opts adjust it, for example runtime.WithGuard or runtime.WithShutdownTimeout.", c.ConstructorName(), c.Name, reads, names.TopologyVar)) {
		f.Add(l)
	}
	routes := make([]jen.Code, len(c.Facts))
	for i, fact := range c.Facts {
		routes[i] = jen.Qual(runtimePath, "Collect").Call(
			factQual(fact, fact.VarName()),
			jen.Func().Params(jen.Id("b").Op("*").Id(c.BatchName()), jen.Id("it").Qual(runtimePath, "Item").Types(factQual(fact, fact.Type.GoName))).Block(
				jen.Id("b").Dot(fact.GoName).Op("=").Append(jen.Id("b").Dot(fact.GoName), jen.Id("it")),
			),
		)
	}
	f.Func().Id(c.ConstructorName()).Params(
		jen.Id("conn").Op("*").Qual(runtimePath, "Conn"),
		jen.Id("h").Id(c.HandlerName()),
		jen.Id("opts").Op("...").Qual(runtimePath, "ConsumerOption"),
	).Params(jen.Op("*").Qual(runtimePath, "Consumer"), jen.Error()).Block(
		jen.If(jen.Id("h").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual(errorsPath, "New").Call(jen.Lit(fmt.Sprintf("new consumer %q: nil %s", c.Name, c.HandlerName())))),
		),
		jen.Return(jen.Qual(runtimePath, "NewBatchConsumer").CallFunc(func(g *jen.Group) {
			g.Id("conn")
			g.Id(names.TopologyVar).Dot("Consumers").Index(jen.Lit(index))
			g.Index().Qual(runtimePath, "Route").Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, routes...)
			g.Id("h").Dot("HandleBatch")
			g.Id("opts").Op("...")
		})),
	)
}
