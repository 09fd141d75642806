// Package model turns a loaded schema directory into what the generated Go
// package consists of: facts with their Go types, consumers with the facts
// their bindings match, and the broker topology. It knows nothing of Go
// syntax; every name an emitter needs is a field or method here, so no
// emitter works a name out again.
//
// [Build] runs named passes, each wrapping its errors with the entity it
// works on: add every fact, build the Go types (resolving $ref, merging
// allOf), name enum values and defaults, match bindings, apply consumer
// defaults and build the topology, then validate the whole model
// (identifier collisions, file-name collisions, value cycles) before
// anything is emitted.
package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/names"
	"github.com/warrenbus/warren/runtime/topology"
)

// Model is everything one generated package declares.
type Model struct {
	Package   string      // Go package name
	Facts     []*Fact     // sorted by routing key
	Types     []*Type     // every declared type, sorted by source file, then position in it
	Consumers []*Consumer // sorted by name
	// Requests are the request schemas, sorted by key; Responders the
	// manifest's responders, sorted by name.
	Requests   []*Request
	Responders []*Responder
	// Sagas are the manifest's sagas, sorted by name.
	Sagas   []*Saga
	Schemas []Schema // the schema files to embed, sorted by path
	// SchemaIDs maps each $id (or draft-04 id) URI declared in an embedded
	// file to "file" or "file#pointer", for references by URI.
	SchemaIDs map[string]string
	// AssertFormats are the formats validation checks (the manifest's
	// assertFormats); every other format is an annotation.
	AssertFormats []string

	// Topology is what the manifest's exchanges and consumers declare on the
	// broker, built by topology.Build with its defaults applied: the one
	// place the effective settings of each consumer live.
	Topology  topology.Topology
	Exchanges topology.Exchanges // the exchange names, defaults applied

	ManifestDescription string // warren.json's description

	// Imports are the imported directories, in manifest order (see
	// imports.go); their bound facts are also in Facts.
	Imports []*Import

	// Renamed lists the Go names chosen to resolve collisions (see
	// [Renamed]), in the order they were made.
	Renamed []Renamed
	// DroppedDefaults are the defaults of vendored files that their
	// schema refuses, left out of the generated code, in file order.
	DroppedDefaults []DroppedDefault
}

// Files returns the schema files that declare at least one type, sorted;
// the emitter writes one Go file per entry.
func (m *Model) Files() []string {
	var files []string
	for _, t := range m.Types {
		if len(files) == 0 || files[len(files)-1] != t.Source {
			files = append(files, t.Source)
		}
	}
	return files
}

// TypesIn returns the types declared from one schema file, in file order.
func (m *Model) TypesIn(source string) []*Type {
	var out []*Type
	for _, t := range m.Types {
		if t.Source == source {
			out = append(out, t)
		}
	}
	return out
}

// Schema is one schema file as embedded in the generated code.
type Schema struct {
	Path string // relative to the schema directory
	JSON []byte // the file's JSON, compacted
}

// Fact is one fact: a routing key and the Go type of its payload.
type Fact struct {
	RoutingKey  string
	GoName      string // the payload type's name: title, or the routing key in camel case
	Version     int    // x-version
	Source      string // schema file of the payload, relative to the schema directory
	Pointer     string // JSON pointer of the payload schema in Source ("" for the file)
	Description string
	Deprecated  bool
	Type        *Type // the payload type; Type.GoName == GoName
	// Import is the imported directory that declares the fact; nil for
	// the directory's own facts, the only ones it publishes.
	Import *Import
	// OrderingKey is the JSON pointer to the payload's ordering key ("" when
	// none), checked to reach a required scalar; OrderingEntity names what
	// it identifies ("" means the pointer does). Priority is the fact's
	// default AMQP priority (x-priority).
	OrderingKey    string
	OrderingEntity string
	// OrderingKeyPath are the fields OrderingKey goes through, from the
	// payload type to the scalar, so emitters can read the key from a Go
	// value instead of its JSON.
	OrderingKeyPath []*Field
	Priority        int

	// Older are the fact's older versions, oldest first (see
	// versions.go); Newest is set on each of them. Upcast says how the
	// previous version is read as this one (nil for the oldest), Downcast
	// how the next is written as this one, when the publisher publishes
	// this version besides a newer one. Publish, on the newest, are the
	// versions the publisher publishes.
	Older    []*Fact
	Newest   *Fact
	Upcast   *Cast
	Downcast *Cast
	Publish  []int

	decl *load.Fact
}

// Location returns the payload schema as "file" or "file#pointer": what
// payloads are validated against.
func (f *Fact) Location() string { return location(f.Source, f.Pointer) }

// VarName returns the name of the fact's runtime.Fact variable.
func (f *Fact) VarName() string { return names.FactVar(f.GoName) }

// RoutingKeyConst returns the name of the fact's routing-key constant.
func (f *Fact) RoutingKeyConst() string { return names.RoutingKeyConst(f.GoName) }

// MethodName returns the name of the handler method for this fact.
func (f *Fact) MethodName() string { return names.Method(f.GoName) }

// PublishName returns the name of the Publisher method for this fact.
func (f *Fact) PublishName() string { return names.Publish(f.GoName) }

// Consumer is one consumer of the manifest with the facts it receives.
type Consumer struct {
	Name        string   // as in warren.json; names the work queue
	GoName      string   // Name in camel case
	Description string   //
	Bindings    []string // topic patterns
	Facts       []*Fact  // the facts the bindings match, sorted by routing key
	Ordered     bool     // facts with one ordering key are handled in publish order
	Batched     bool     // the handler takes a batch of facts (manifest "batch")

	// Topology is the consumer's entry in Model.Topology: its queues, retry
	// ladder and limits, defaults applied.
	Topology *topology.Consumer
}

// HandlerName returns the name of the consumer's handler interface.
func (c *Consumer) HandlerName() string { return names.Handler(c.Name) }

// BatchName returns the name of a batch consumer's batch type.
func (c *Consumer) BatchName() string { return names.Batch(c.Name) }

// ConstructorName returns the name of the function that binds a handler of
// this consumer to the runtime.
func (c *Consumer) ConstructorName() string { return names.ConsumerConstructor(c.Name) }

// Options adjust how a model is built.
type Options struct {
	Package string // overrides the manifest's "package"
	// PackageOptional builds a model for readers that emit no Go (the
	// catalogue, the broker commands): a manifest without "package" is then
	// no error and Model.Package stays "". A name that is given is still
	// checked, so every command agrees on what a valid directory is.
	PackageOptional bool
}

// Build turns loaded schemas into a validated model. Its error is a
// load.ErrorList naming file, position and what was expected.
func Build(ctx context.Context, s *load.Schemas, opts Options) (*Model, error) {
	b := newBuilder(s)
	m := &Model{ManifestDescription: s.Manifest.Description}

	b.pass(ctx, "package", func() { m.Package = b.packageName(opts) })
	b.pass(ctx, "imports", func() { b.addImports(ctx, m) })
	b.pass(ctx, "keywords", b.checkKeywords)
	b.pass(ctx, "values", b.checkValues)
	b.pass(ctx, "facts", func() { m.Facts = b.addFacts() })
	b.pass(ctx, "types", func() { b.buildTypes(allVersions(m.Facts)) })
	b.pass(ctx, "requests", func() { b.addRequests(m) })
	b.pass(ctx, "saga states", func() { b.sagaStates(m) })
	b.pass(ctx, "names", func() { b.resolveNames(allVersions(m.Facts)) })
	b.pass(ctx, "versions", func() { b.buildCasts(m.Facts) })
	b.pass(ctx, "constants", func() { b.nameConstants() })
	b.pass(ctx, "reused facts", func() { b.addReused(m) })
	b.pass(ctx, "ordering keys", func() { b.orderingKeys(allVersions(m.Facts)) })
	b.pass(ctx, "sagas", func() { b.addSagas(m) })
	b.pass(ctx, "consumers", func() {
		m.Consumers = b.matchBindings(m.Facts)
		b.pinVersions(m.Consumers)
		b.checkStreams(m.Facts, m.Consumers)
	})
	b.pass(ctx, "ordered consumers", func() { b.checkOrdered(m.Consumers) })
	b.pass(ctx, "batch consumers", func() { b.checkBatches(m.Consumers) })
	b.pass(ctx, "topology", func() { b.buildTopology(m) })
	b.pass(ctx, "validate", func() { b.validate(m) })
	if b.err != nil {
		return nil, b.err
	}
	if b.errs.Len() > 0 {
		// Files are renamed before sorting, so errors come in the order
		// of the names the user reads.
		s.UserPaths(b.errs)
		return nil, b.errs.Err()
	}
	m.Types = b.sortedTypes()
	m.Schemas = b.embeddedSchemas()
	m.SchemaIDs = b.embeddedIDs(m.Schemas)
	m.AssertFormats = s.Manifest.AssertFormats
	m.Renamed = b.renames
	m.DroppedDefaults = b.dropped
	return m, nil
}

// packageName picks the --package flag, else the manifest's package.
func (b *builder) packageName(opts Options) string {
	name, where := opts.Package, "--package"
	if name == "" {
		name, where = b.s.Manifest.Package, "package"
	}
	if name == "" && opts.PackageOptional {
		return ""
	}
	if name == "" {
		b.errs.Add(b.s.Manifest.Doc.Errorf("", "no Go package name: set \"package\" in %s or pass --package", load.ManifestFile))
		return ""
	}
	if why := names.CheckPackage(name); why != "" {
		if where == "package" {
			b.errs.Add(b.s.Manifest.Doc.Errorf("/package", "package %s: %s", strconv.Quote(name), why))
		} else {
			b.errs.Addf("", "", "--package %s: %s", strconv.Quote(name), why)
		}
	}
	return name
}

// addFacts creates a Fact per loaded fact, named by title or routing key.
func (b *builder) addFacts() []*Fact {
	var facts []*Fact
	for _, lf := range b.localFacts() {
		f := &Fact{
			RoutingKey:  lf.RoutingKey,
			Version:     lf.Version,
			Source:      lf.Path(),
			Pointer:     lf.Schema.Pointer,
			Description: lf.Description,
			Deprecated:  lf.Deprecated,
			Import:      b.imported[lf],
			decl:        lf,
		}
		if f.Import != nil {
			f.Import.Facts = append(f.Import.Facts, f)
		}
		if lf.Title != "" {
			f.GoName = names.Type(lf.Title)
		} else {
			f.GoName = names.Type(lf.RoutingKey)
		}
		node := payloadNode(lf.Schema)
		if prev, ok := b.factByNode[node]; ok {
			b.errs.Add(lf.KeyDoc.Errorf(lf.KeyPointer, "fact %s: its payload schema %s is already the payload of fact %s; give each fact a schema of its own (an allOf of the shared one)", lf.RoutingKey, node.Location(), prev.RoutingKey))
			continue
		}
		b.factByNode[node] = f
		b.addOlder(f, lf)
		facts = append(facts, f)
	}
	slices.SortFunc(facts, func(a, b *Fact) int { return strings.Compare(a.RoutingKey, b.RoutingKey) })
	return facts
}

// buildTypes maps each fact's schema, and everything it reaches, to Go types.
func (b *builder) buildTypes(facts []*Fact) {
	for _, f := range facts {
		node := payloadNode(f.decl.Schema)
		ref := b.typeOf(node)
		if ref.Kind != Named || ref.Type.Kind == Alias {
			// An alias would put the fact's Validate method on a type
			// that is not the fact's own, or on time.Time or raw JSON.
			b.errs.Add(node.Doc.Errorf(node.Pointer, "fact %s: expected the payload schema to say what it holds (an object, a union, a scalar or an array type); a payload that is a date-time, any JSON value, or only another name for another type (such as a nullable $ref) cannot carry the fact's Validate method", f.RoutingKey))
			continue
		}
		f.Type = ref.Type
		f.Type.Fact = f
	}
}

func (b *builder) embeddedSchemas() []Schema {
	var out []Schema
	for _, doc := range b.reachableDocs() {
		var buf bytes.Buffer
		if err := json.Compact(&buf, doc.DraftSource()); err != nil {
			// Impossible: the file parsed as JSON.
			b.errs.Add(doc.Errorf("", "compact: %v", err))
			continue
		}
		out = append(out, Schema{Path: doc.Path, JSON: buf.Bytes()})
	}
	return out
}

// localFacts returns the facts whose types this package declares: the
// directory's own, then the bound facts of the imports generated here.
func (b *builder) localFacts() []*load.Fact {
	out := slices.Clone(b.s.Facts)
	for _, imp := range b.s.Imports {
		for _, f := range imp.Schemas.Facts {
			if b.imported[f] != nil {
				out = append(out, f)
			}
		}
	}
	return out
}

// payloadNode returns the schema a fact's Go type is declared at: its
// payload schema or, when that is only a $ref (a draft-04 root often is),
// the schema the $refs lead to.
func payloadNode(n *load.Schema) *load.Schema {
	seen := map[*load.Schema]bool{}
	for isPureRef(n) && n.Ref != nil && !seen[n] {
		seen[n] = true
		n = n.Ref
	}
	return n
}

// embeddedIDs keeps the URIs declared in the embedded files.
func (b *builder) embeddedIDs(embedded []Schema) map[string]string {
	out := map[string]string{}
	ids := b.s.IDs()
	for _, imp := range b.s.Imports {
		for id, loc := range imp.Schemas.IDs() {
			if prev, ok := ids[id]; ok && prev != loc {
				b.errs.Addf(loc, "", "$id %s is also declared by %s: the generated package cannot embed both", strconv.Quote(id), prev)
				continue
			}
			ids[id] = loc
		}
	}
	for id, loc := range ids {
		file, _, _ := strings.Cut(loc, "#")
		if slices.ContainsFunc(embedded, func(s Schema) bool { return s.Path == file }) {
			out[id] = loc
		}
	}
	return out
}

// reachableDocs returns the fact files and every file their $refs reach,
// sorted by path: what the generated code must embed to validate facts.
func (b *builder) reachableDocs() []*load.Document {
	reached := map[*load.Document]bool{}
	var visit func(doc *load.Document)
	visit = func(doc *load.Document) {
		if reached[doc] {
			return
		}
		reached[doc] = true
		for _, target := range b.s.Referenced(doc) {
			visit(target)
		}
	}
	for _, f := range b.localFacts() {
		for _, v := range f.Versions() {
			visit(v.Doc)
		}
	}
	for _, r := range b.s.Requests {
		visit(r.Doc)
	}
	for _, s := range b.s.Manifest.Sagas {
		if s.State != nil {
			visit(s.State.Doc)
		}
	}
	out := slices.Collect(maps.Keys(reached))
	slices.SortFunc(out, func(a, b *load.Document) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// pass runs one named pass unless the context is done. A panic is not
// caught: it is a bug, not bad input.
func (b *builder) pass(ctx context.Context, name string, fn func()) {
	if b.err != nil {
		return
	}
	if err := ctx.Err(); err != nil {
		b.err = fmt.Errorf("model: %s: %w", name, err)
		return
	}
	fn()
}
