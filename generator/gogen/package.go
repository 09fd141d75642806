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

// genPackage writes the package doc and the compile-time check that the
// runtime supports this generated code.
func (e *emitter) genPackage(f *jen.File) {
	doc := fmt.Sprintf("Package %s holds the facts and consumers declared in a warren schema directory: one Go type per fact with its JSON Schema for validation, a %s with one typed method per fact, one handler interface per consumer with a constructor that binds it to the runtime, and the broker %s.", e.m.Package, names.PublisherType, names.TopologyVar)
	for _, l := range commentLines(doc) {
		f.PackageComment(commentLine(l))
	}
	if e.m.ManifestDescription != "" {
		f.PackageComment("//")
		for _, l := range commentLines(e.m.ManifestDescription) {
			f.PackageComment(commentLine(l))
		}
	}
	if e.anyTabled() {
		f.PackageComment("//")
		for _, l := range commentLines(codecFieldsDoc) {
			f.PackageComment(commentLine(l))
		}
	}
	for _, c := range docComment(fmt.Sprintf("These constants fail to compile when the warren runtime does not support version %d of the generated-code contract: upgrade the github.com/warrenbus/warren module, or regenerate with the warren version your go.mod requires.", ContractVersion)) {
		f.Add(c)
	}
	f.Const().Defs(
		jen.Id("_").Op("=").Qual(schemasetPath, "EnforceVersion").Call(jen.Lit(ContractVersion).Op("-").Qual(schemasetPath, "MinVersion")),
		jen.Id("_").Op("=").Qual(schemasetPath, "EnforceVersion").Call(jen.Qual(schemasetPath, "MaxVersion").Op("-").Lit(ContractVersion)),
	)
}

// codecFieldsDoc says once, in the package doc, what the CodecFields
// method of each struct written as a codec.Shape is for.
const codecFieldsDoc = "A struct's CodecFields method hands runtime/codec pointers to its fields, in the order of the shapeOf variable beside it, so that decoding, encoding and Validate walk the struct as data; it is not meant to be called directly."

// anyTabled reports whether a type of the package is written as a
// codec.Shape, with a CodecFields method.
func (e *emitter) anyTabled() bool {
	for _, t := range e.m.Types {
		if e.tabled(t) {
			return true
		}
	}
	return false
}

const schemasDoc = schemaSetVar + " holds the JSON Schemas the types of this package were generated from, keyed by their path in the schema directory; values are validated against them."

// genSchemas embeds every schema file the facts need, compacted, as string
// literals (jen quotes them, so no schema text can leave its string).
func (e *emitter) genSchemas(f *jen.File) {
	for _, c := range docComment(schemasDoc) {
		f.Add(c)
	}
	files := jen.Map(jen.String()).String().Values(jen.DictFunc(func(d jen.Dict) {
		for _, s := range e.m.Schemas {
			d[jen.Lit(s.Path)] = stringLit(string(s.JSON))
		}
	}))
	if len(e.m.SchemaIDs) == 0 && len(e.m.AssertFormats) == 0 {
		f.Var().Id(schemaSetVar).Op("=").Qual(schemasetPath, "New").Call(files)
		return
	}
	opts := jen.Dict{}
	if len(e.m.SchemaIDs) > 0 {
		opts[jen.Id("IDs")] = jen.Map(jen.String()).String().Values(jen.DictFunc(func(d jen.Dict) {
			for id, loc := range e.m.SchemaIDs {
				d[jen.Lit(id)] = jen.Lit(loc)
			}
		}))
	}
	if len(e.m.AssertFormats) > 0 {
		var formats []jen.Code
		for _, name := range e.m.AssertFormats {
			formats = append(formats, jen.Lit(name))
		}
		opts[jen.Id("AssertFormats")] = jen.Index().String().Values(formats...)
	}
	f.Var().Id(schemaSetVar).Op("=").Qual(schemasetPath, "NewWith").Call(files, jen.Qual(schemasetPath, "Options").Values(opts))
}

// genConsumers writes, per consumer, its handler interface and the
// constructor that binds a handler to the runtime.
func (e *emitter) genConsumers(f *jen.File) {
	for i, c := range e.m.Consumers {
		if i > 0 {
			f.Line()
		}
		if c.Batched {
			e.genBatchConsumer(f, c)
			continue
		}
		e.genConsumerInterface(f, c)
		f.Line()
		e.genConsumerConstructor(f, c)
	}
}

// handlerDoc is the doc comment's paragraphs of a consumer's handler
// interface.
func handlerDoc(c *model.Consumer) []string {
	return []string{
		fmt.Sprintf("%s handles the facts that consumer %q receives: one method per fact its bindings match. %s binds it to the runtime.", c.HandlerName(), c.Name, c.ConstructorName()),
		"A method that returns nil has handled its fact. An error marked with runtime.Permanent sends the message straight to the poison queue; any other error, or a panic, is retried along the consumer's retry ladder. Delivery is at least once, so a method may see a fact again (the same d.MessageID); runtime.WithGuard makes handling idempotent.",
		c.Description,
		"Bindings: " + strings.Join(c.Bindings, ", "),
	}
}

func (e *emitter) genConsumerInterface(f *jen.File, c *model.Consumer) {
	for _, l := range docComment(handlerDoc(c)...) {
		f.Add(l)
	}
	f.Type().Id(c.HandlerName()).InterfaceFunc(func(g *jen.Group) {
		for _, fact := range c.Facts {
			if len(fact.ManualUpcasts()) > 0 {
				g.Id(fact.UpcasterName())
				g.Line()
			}
		}
		for i, fact := range c.Facts {
			if i > 0 {
				g.Line()
			}
			for _, l := range docComment(fmt.Sprintf("%s handles each %s received.", fact.MethodName(), fact.GoName)) {
				g.Add(l)
			}
			g.Id(fact.MethodName()).Params(
				jen.Id("ctx").Qual(contextPath, "Context"),
				jen.Id("d").Qual(runtimePath, "Delivery"),
				jen.Id("fact").Add(factQual(fact, fact.Type.GoName)),
			).Error()
		}
	})
}

// genConsumerConstructor writes New<Consumer>Consumer: one runtime.Route
// per handler method, and the consumer's entry of the topology.
func (e *emitter) genConsumerConstructor(f *jen.File, c *model.Consumer) {
	for _, l := range docComment(constructorDoc(c)) {
		f.Add(l)
	}
	f.Func().Id(c.ConstructorName()).Params(
		jen.Id("conn").Op("*").Qual(runtimePath, "Conn"),
		jen.Id("h").Id(c.HandlerName()),
		jen.Id("opts").Op("...").Qual(runtimePath, "ConsumerOption"),
	).Params(jen.Op("*").Qual(runtimePath, "Consumer"), jen.Error()).Block(
		jen.If(jen.Id("h").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual(errorsPath, "New").Call(jen.Lit(nilHandlerError(c)))),
		),
		jen.Return(jen.Qual(runtimePath, "NewConsumer").CallFunc(func(g *jen.Group) {
			g.Id("conn")
			g.Id(names.TopologyVar).Dot("Consumers").Index(jen.Lit(e.topologyIndex(c)))
			g.Index().Qual(runtimePath, "Route").Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, routes(c)...)
			g.Id("opts").Op("...")
		})),
	)
}

// topologyIndex is c's index in the package's Topology.Consumers.
func (e *emitter) topologyIndex(c *model.Consumer) int {
	return slices.IndexFunc(e.m.Topology.Consumers, func(tc topology.Consumer) bool { return tc.Name == c.Name })
}

func nilHandlerError(c *model.Consumer) string {
	return fmt.Sprintf("new consumer %q: nil %s", c.Name, c.HandlerName())
}

// constructorDoc is the doc comment of a consumer's constructor.
func constructorDoc(c *model.Consumer) string {
	doc := fmt.Sprintf("%s returns consumer %q: it reads %s and calls h for each fact, with the prefetch, concurrency, retry ladder and attempt limit of %s.", c.ConstructorName(), c.Name, queuesRead(c.Topology), names.TopologyVar)
	if tc := c.Topology; tc.Stream != "" {
		doc = fmt.Sprintf("%s returns stream consumer %q: it reads %s and calls h for each fact its bindings match, skipping the stream's others, with the prefetch, concurrency, retry ladder and attempt limit of %s. Its work queue %s is bound to nothing: it receives only the consumer's own retries and deferrals.", c.ConstructorName(), c.Name, streamRead(tc), names.TopologyVar, tc.Queue)
	}
	return doc + " Start it with Run. opts adjust it, for example runtime.WithGuard or runtime.WithShutdownTimeout."
}

// factQual names a declaration of fact: in this package, or in the
// producer's generated package when the fact's types are reused from it.
func factQual(fact *model.Fact, name string) *jen.Statement {
	if pkg := fact.GoPackage(); pkg != "" {
		return jen.Qual(pkg, name)
	}
	return jen.Id(name)
}

func routes(c *model.Consumer) []jen.Code {
	out := make([]jen.Code, len(c.Facts))
	for i, fact := range c.Facts {
		if len(fact.Older) > 0 {
			out[i] = versionedRoute(fact)
			continue
		}
		out[i] = eachRoute(fact)
	}
	return out
}

// eachRoute is the route of a fact through runtime.HandleEach: a function
// that makes the fact to decode into, and one that calls its handler
// method. Both compile to a few instructions; runtime.Handle would compile
// a copy of the route's generic code for each fact type.
func eachRoute(fact *model.Fact) jen.Code {
	t := factQual(fact, fact.Type.GoName)
	return jen.Qual(runtimePath, "HandleEach").Call(
		factQual(fact, fact.VarName()),
		jen.Func().Params().Any().Add(body(jen.Return(jen.New(t.Clone())))),
		jen.Func().Params(
			jen.Id("ctx").Qual(contextPath, "Context"),
			jen.Id("d").Qual(runtimePath, "Delivery"),
			jen.Id("fact").Any(),
		).Error().Block(
			jen.Return(jen.Id("h").Dot(fact.MethodName()).Call(jen.Id("ctx"), jen.Id("d"), jen.Op("*").Id("fact").Assert(jen.Op("*").Add(t.Clone())))),
		),
	)
}

// stringLit writes s as a raw string literal when it can (JSON is easier
// to read without escaped quotes), else as a quoted one. A raw literal
// cannot hold a back quote, and Go source cannot hold invalid UTF-8, NUL or
// a byte order mark; strconv-quoting escapes all of them.
func stringLit(s string) jen.Code { return jen.Op(stringLitText(s)) }

// queuesRead says, in a constructor's doc comment, which queues a
// consumer that reads queues reads: its work queue, or an ordered
// consumer's shard queues.
func queuesRead(tc *topology.Consumer) string {
	if tc.Ordered() {
		return fmt.Sprintf("its %d shard queues", len(tc.Shards))
	}
	return "the work queue " + tc.Queue
}

// streamRead says, in a constructor's doc comment, what a stream consumer
// reads and from where: its stream, or its super stream's partitions
// shared with its other instances.
func streamRead(tc *topology.Consumer) string {
	from := fmt.Sprintf("from %s the first time, then on from the offset it stored", tc.Start.Describe())
	if len(tc.Partitions) > 0 {
		return fmt.Sprintf("super stream %s as a member of the consumer group %q, in which the broker gives each of the %d partitions to one running instance (each partition read %s),", tc.Stream, tc.Name, len(tc.Partitions), from)
	}
	return fmt.Sprintf("stream %s (%s)", tc.Stream, from)
}
