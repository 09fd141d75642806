package docgen

import (
	"bytes"
	"fmt"
	"slices"
	"text/template"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/templates"
)

// catalogueTemplate is parsed once; its functions escape schema text for
// where it lands (table cell, paragraph, code span, Mermaid label).
var catalogueTemplate = template.Must(template.New("catalogue.md.tmpl").Funcs(template.FuncMap{
	"text": mdText,
	"cell": mdCell,
	"code": mdCode,
}).ParseFS(templates.FS, "catalogue.md.tmpl"))

// Catalogue renders the catalogue page of m, whose schemas s are: every
// fact with a table of its properties, every type the facts share, every
// stream with its retention and readers, every consumer with its queues
// and retry ladder (a stream consumer with the stream it reads), and a
// Mermaid diagram of the topology. Schema text is escaped for where it
// lands, so no description can break the page or smuggle HTML into it.
func Catalogue(m *model.Model, s *load.Schemas) ([]byte, error) {
	var buf bytes.Buffer
	if err := catalogueTemplate.Execute(&buf, newCatalogue(m, s)); err != nil {
		return nil, fmt.Errorf("render the catalogue: %w", err)
	}
	return buf.Bytes(), nil
}

// catalogue is what the template renders: the model reduced to what a
// reader needs, in the order the page shows it.
type catalogue struct {
	Package     string
	Description string
	Exchanges   topology.Exchanges
	Facts       []factView
	Types       []typeView // declared types other than the facts' own
	Streams     []streamView
	Consumers   []consumerView
	Diagram     string // Mermaid flowchart source, labels escaped

	RequestsExchange string
	Requests         []requestView
	Responders       []responderView

	Imports []importView // the imported directories whose facts are consumed here
}

// importView is an imported directory: where it comes from and which of
// its facts this directory consumes.
type importView struct {
	Label   string // module@version/dir, or the relative path
	Module  string // "" for a path import
	Version string
	Dir     string
	Types   string // where the Go types come from
	Facts   []string
}

type factView struct {
	RoutingKey  string
	Anchor      string
	Version     int
	Source      string
	Description string
	Deprecated  bool
	Type        typeView
	Consumers   []consumerRef // the consumers whose bindings match it
	Streams     []streamRef   // the streams that keep it
	From        string        // the import that declares it, "" for the directory's own
	// OrderingKey and OrderingEntity are the fact's x-ordering-key and
	// x-ordering-entity, Priority its x-priority; "" and 0 when absent.
	OrderingKey, OrderingEntity string
	Priority                    int
}

type consumerRef struct{ Name, Anchor string }

// typeView is a declared Go type with its schema's constraints.
type typeView struct {
	GoName      string
	Anchor      string
	Kind        string // struct, enum, union, defined type, alias
	Location    string // source#pointer
	Description string
	Deprecated  bool

	Properties []propertyView // struct
	Extra      string         // struct: Markdown type of undeclared properties' values, "" when none kept
	Closed     bool           // struct: additionalProperties false
	Values     []enumValue    // enum
	Variants   []variantView  // union
	OneOf      bool           // union: exactly one branch (else at least one)
	Base       string         // enum, defined type, alias: Markdown Go type
	Notes      string         // defined type, alias: the schema's constraints
}

type propertyView struct {
	Name        string
	Type        string // Markdown: code spans and links to types
	Required    bool
	Notes       string // constraints and default, Markdown
	Description string
	Deprecated  bool
}

type enumValue struct{ JSON, Const string }

type variantView struct{ Field, Type string }

type consumerView struct {
	Name, Anchor, Description string
	Handler                   string // the generated interface
	Bindings                  []string
	Facts                     []handledFact
	QueueType                 string
	Queue, PoisonQueue        string
	DeliveryLimit             int
	Prefetch, Concurrency     int
	MaxAttempts               int
	Ladder                    []ladderStep
	// Ordered consumers: the hash exchange, the shard queues' names as a
	// pattern and their number, and whether poison parks a key.
	Ordered       bool
	ShardExchange string
	ShardPattern  string
	Shards        int
	Park          bool
	// Batch consumers: the batch's size and wait ("" for the others).
	BatchSize int
	BatchWait string
	// Stream consumers: what they read and from where, as Markdown ("" for
	// the others).
	Reads string
}

type handledFact struct{ RoutingKey, Anchor, Method string }

type ladderStep struct {
	Attempt int    // the failed attempt
	Delay   string // how long the copy waits
	Queue   string // the delay queue
}

func newCatalogue(m *model.Model, s *load.Schemas) catalogue {
	c := catalogue{Package: m.Package, Description: m.ManifestDescription, Exchanges: m.Exchanges}
	c.Streams = newStreams(m, s)
	for _, f := range m.Facts {
		fv := factView{
			RoutingKey: f.RoutingKey, Anchor: factAnchor(f), Version: f.Version, Source: f.Source,
			Description: f.Description, Deprecated: f.Deprecated, Type: newTypeView(f.Type, s),
			OrderingKey: f.OrderingKey, OrderingEntity: f.OrderingEntity, Priority: f.Priority,
			Streams: streamsOf(c.Streams, f.RoutingKey),
		}
		for _, mc := range m.Consumers {
			if slices.ContainsFunc(mc.Facts, func(g *model.Fact) bool { return g.Latest() == f }) {
				fv.Consumers = append(fv.Consumers, consumerRef{mc.Name, consumerAnchor(mc.Name)})
			}
		}
		if f.Import != nil {
			fv.From = f.Import.Label
		}
		c.Facts = append(c.Facts, fv)
	}
	c.addImports(m)
	for _, t := range m.Types {
		if t.Fact == nil {
			c.Types = append(c.Types, newTypeView(t, s))
		}
	}
	for _, mc := range m.Consumers {
		c.Consumers = append(c.Consumers, newConsumerView(mc, m.Topology))
	}
	c.addRequests(m)
	c.Diagram = mermaidTopology(m, c.Streams)
	return c
}

func factAnchor(f *model.Fact) string { return "fact-" + f.RoutingKey }
func typeAnchor(t *model.Type) string { return "type-" + t.GoName }
func consumerAnchor(name string) string {
	return "consumer-" + name
}

func newTypeView(t *model.Type, s *load.Schemas) typeView {
	v := typeView{
		GoName: t.GoName, Anchor: typeAnchor(t), Kind: t.Kind.String(), Location: t.Location(),
		Description: t.Doc.Description, Deprecated: t.Doc.Deprecated,
	}
	schema := schemaAt(s, t.Source, t.Pointer)
	switch t.Kind {
	case model.Struct:
		for _, f := range t.Fields {
			v.Properties = append(v.Properties, newPropertyView(f, s))
		}
		if t.Extra != nil {
			v.Extra = goTypeMD(*t.Extra, t.Extra.Nullable && !t.Extra.HasNil())
		}
		v.Closed = schema != nil && schema.AdditionalProperties != nil && schema.AdditionalProperties.IsFalse()
	case model.Enum:
		v.Base = goTypeMD(t.Base, false)
		for _, e := range t.Values {
			v.Values = append(v.Values, enumValue{JSON: jsonLiteral(e.Value), Const: e.GoName})
		}
	case model.Union:
		v.OneOf = t.OneOf
		for _, b := range t.Variants {
			v.Variants = append(v.Variants, variantView{Field: b.GoName, Type: goTypeMD(b.Type, true)})
		}
	case model.Defined, model.Alias:
		v.Base = goTypeMD(t.Base, false)
		v.Notes = constraints(schema, nil)
	}
	return v
}

func newPropertyView(f *model.Field, s *load.Schemas) propertyView {
	return propertyView{
		Name:        f.JSONName,
		Type:        goTypeMD(f.Type, f.IsPointer()),
		Required:    f.Required,
		Notes:       constraints(schemaAt(s, f.Source, f.Pointer), f.Default),
		Description: f.Doc.Description,
		Deprecated:  f.Doc.Deprecated,
	}
}

func newConsumerView(mc *model.Consumer, top topology.Topology) consumerView {
	tc := mc.Topology
	work, _ := top.Queue(tc.Queue)
	v := consumerView{
		Name: mc.Name, Anchor: consumerAnchor(mc.Name), Description: mc.Description, Handler: mc.HandlerName(),
		Bindings: mc.Bindings, QueueType: string(work.Type), Queue: tc.Queue, PoisonQueue: tc.PoisonQueue,
		Prefetch: tc.Prefetch, Concurrency: tc.Concurrency, MaxAttempts: tc.MaxAttempts,
		DeliveryLimit: work.DeliveryLimit,
	}
	for _, f := range mc.Facts {
		method := f.MethodName()
		if tc.Batched() {
			// One method takes the batch; the fact is a field of it.
			method = "HandleBatch: " + mc.BatchName() + "." + f.GoName
		}
		v.Facts = append(v.Facts, handledFact{f.RoutingKey, factAnchor(f), method})
	}
	if tc.Batched() {
		v.BatchSize, v.BatchWait = tc.Batch.Size, tc.Batch.Wait.String()
	}
	if tc.Stream != "" {
		v.Reads = streamReads(tc)
	}
	if tc.Ordered() {
		first, _ := top.Queue(tc.Shards[0])
		v.Ordered, v.ShardExchange, v.Shards, v.Park = true, tc.ShardExchange, len(tc.Shards), tc.Park
		v.ShardPattern = mc.Name + ".shard.0 … " + tc.Shards[len(tc.Shards)-1]
		v.QueueType, v.DeliveryLimit = string(first.Type), first.DeliveryLimit
		for attempt := 1; attempt < tc.MaxAttempts; attempt++ {
			// In place: Queue "" reads "retried in place".
			v.Ladder = append(v.Ladder, ladderStep{Attempt: attempt, Delay: topology.FormatDelay(tc.Delay(attempt))})
		}
		return v
	}
	for attempt := 1; attempt < tc.MaxAttempts; attempt++ {
		tier, ok := tc.TierFor(attempt)
		if !ok {
			break
		}
		v.Ladder = append(v.Ladder, ladderStep{Attempt: attempt, Delay: topology.FormatDelay(tier.Delay), Queue: tier.Queue})
	}
	return v
}

// schemaAt returns the loader's typed view of the schema at
// source#pointer, nil when there is none.
func schemaAt(s *load.Schemas, source, pointer string) *load.Schema {
	doc, ok := s.Doc(source)
	if !ok {
		return nil
	}
	return doc.SchemaAt(pointer)
}

func (c *catalogue) addImports(m *model.Model) {
	for _, imp := range m.Imports {
		v := importView{Label: imp.Label, Module: imp.Module, Version: imp.Version, Dir: imp.Dir}
		v.Types = "generated in this package from the imported schemas"
		if imp.Reused() {
			v.Types = "reused from `" + imp.GoPackage + "`"
		}
		for _, f := range imp.Facts {
			v.Facts = append(v.Facts, f.RoutingKey)
		}
		c.Imports = append(c.Imports, v)
	}
}
