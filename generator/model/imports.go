package model

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/runtime/topology"
)

// Import is an imported schema directory, another team's, whose facts this
// directory's consumers bind to. Its facts are not published here: the
// generated package declares no publisher for them, and the topology has
// the producer's exchanges but none of the producer's queues.
type Import struct {
	Label   string // "module@version/dir", or the relative path
	Module  string // the Go module; "" for a path import
	Version string // the module's version as go.mod pins it; "" for a path import or a replaced module
	Dir     string // the schema directory in Module, or the relative path of a path import
	// GoPackage is the import path of the producer's generated package
	// when the types are reused from it, "" when they are generated here.
	GoPackage string
	// GoPackageName is the package name the producer's warren.json gives
	// GoPackage ("" when it gives none).
	GoPackageName string
	Exchanges     topology.Exchanges // the producer's exchange names, defaults applied
	// Facts are the imported facts that this directory's bindings match,
	// sorted by routing key: the only ones the generated code knows.
	Facts []*Fact

	decl *load.Imported
}

// Reused reports whether the facts' Go types come from the producer's
// generated package.
func (i *Import) Reused() bool { return i.GoPackage != "" }

// OwnFacts returns the facts this directory declares (and publishes),
// without the imported ones.
func (m *Model) OwnFacts() []*Fact {
	var out []*Fact
	for _, f := range m.Facts {
		if f.Import == nil {
			out = append(out, f)
		}
	}
	return out
}

// GoPackage returns the import path of the package that declares the
// fact's type and variable: "" for this package.
func (f *Fact) GoPackage() string {
	if f.Import == nil {
		return ""
	}
	return f.Import.GoPackage
}

// addImports creates an Import per imported directory. The imported facts
// this directory's consumers bind are collected: generated locally, they
// join the facts whose types are built (b.imported); reused, the
// producer's model names them and they join the model after naming.
func (b *builder) addImports(ctx context.Context, m *Model) {
	for _, li := range b.s.Imports {
		imp := &Import{
			Label: li.Label(), Module: li.Module, Version: li.Version, Dir: li.Import.Dir,
			GoPackage: li.Import.GoPackage, GoPackageName: li.Schemas.Manifest.Package, decl: li,
		}
		if imp.Module == "" {
			imp.Dir = li.Import.Path
		}
		man := li.Schemas.Manifest.Exchanges
		imp.Exchanges = exchangesWithDefaults(topology.Exchanges{Events: man.Events, Retry: man.Retry, Dead: man.Dead})
		m.Imports = append(m.Imports, imp)
		var bound []*load.Fact
		for _, f := range li.Schemas.Facts {
			if b.bound(f.RoutingKey) {
				bound = append(bound, f)
			}
		}
		if len(bound) == 0 {
			continue
		}
		if !imp.Reused() {
			for _, f := range bound {
				b.imported[f] = imp
			}
			continue
		}
		b.reuse(ctx, imp, li, bound)
	}
}

// reuse takes the named facts of the producer's model: their Go names are
// the ones the producer's generated package declares.
func (b *builder) reuse(ctx context.Context, imp *Import, li *load.Imported, bound []*load.Fact) {
	pm, err := Build(ctx, li.Schemas, Options{PackageOptional: true})
	if err != nil {
		var list load.ErrorList
		if !errors.As(err, &list) {
			b.err = err
			return
		}
		b.errs.Add(li.Doc.Errorf(li.Import.Pointer, "import %s: the imported directory does not build (its errors follow)", li.Import))
		b.errs = append(b.errs, list...)
		return
	}
	for _, lf := range bound {
		i := slices.IndexFunc(pm.Facts, func(f *Fact) bool { return f.RoutingKey == lf.RoutingKey })
		imp.Facts = append(imp.Facts, importVersions(pm.Facts[i], imp))
	}
}

// bound reports whether a binding of this directory's consumers matches key.
func (b *builder) bound(key string) bool {
	for _, c := range b.s.Manifest.Consumers {
		for _, p := range c.Bindings {
			if TopicMatch(p, key) {
				return true
			}
		}
	}
	return false
}

// addReused adds the reused facts to the model's facts, sorted by key.
func (b *builder) addReused(m *Model) {
	for _, imp := range m.Imports {
		if imp.Reused() {
			m.Facts = append(m.Facts, imp.Facts...)
		}
	}
	slices.SortFunc(m.Facts, func(a, b *Fact) int { return strings.Compare(a.RoutingKey, b.RoutingKey) })
}

// importedExchanges returns the exchanges the topology declares: the
// manifest's, and where it names none and the directory has no facts of
// its own, those of the producer it imports facts from. Every import whose
// facts are bound must publish them on the events exchange this
// directory's consumers are bound to; a mismatch is an error naming both.
func (b *builder) importedExchanges(m *Model, ex topology.Exchanges) topology.Exchanges {
	var from []*Import // imports with bound facts
	for _, imp := range m.Imports {
		if len(imp.Facts) > 0 {
			from = append(from, imp)
		}
	}
	if len(from) == 0 {
		return ex
	}
	own := ex.Events != "" || len(m.OwnFacts()) > 0
	if !own {
		p := from[0].Exchanges
		ex.Events = p.Events
		ex.Retry = cmp.Or(ex.Retry, p.Retry)
		ex.Dead = cmp.Or(ex.Dead, p.Dead)
	}
	events := exchangesWithDefaults(ex).Events
	doc := b.s.Manifest.Doc
	for _, imp := range from {
		if imp.Exchanges.Events == events {
			continue
		}
		here := "the events exchange of this directory"
		if own && ex.Events != "" {
			here += " (" + whereIn(doc, "/exchanges/events") + ")"
		} else if !own {
			here = fmt.Sprintf("the events exchange of import %s (%s)", from[0].decl.Import, whereIn(doc, from[0].decl.Import.Pointer))
		}
		b.errs.Add(doc.Errorf(imp.decl.Import.Pointer, "import %s publishes its facts on exchange %s (its %s), but the consumers here are bound on %s, %s: one directory's consumers read one events exchange", imp.decl.Import, strconv.Quote(imp.Exchanges.Events), load.ManifestFile, strconv.Quote(events), here))
	}
	return ex
}

func exchangesWithDefaults(e topology.Exchanges) topology.Exchanges {
	d := topology.DefaultExchanges
	return topology.Exchanges{Events: cmp.Or(e.Events, d.Events), Retry: cmp.Or(e.Retry, d.Retry), Dead: cmp.Or(e.Dead, d.Dead), Requests: e.Requests}
}

func whereIn(doc *load.Document, ptr string) string {
	if line, col, ok := doc.Position(ptr); ok {
		return fmt.Sprintf("%s:%d:%d", doc.Path, line, col)
	}
	return doc.Path
}

// checkMethods reports two facts a consumer receives that would give its
// handler interface one method twice: facts of two imports can share a
// Go name.
func (b *builder) checkMethods(c *Consumer) {
	seen := map[string]*Fact{}
	for _, f := range c.Facts {
		if prev, ok := seen[f.MethodName()]; ok {
			if prev.GoPackage() == "" && f.GoPackage() == "" {
				// Both types are declared in this package under one
				// name: validate reports that, the mistake this follows
				// from.
				continue
			}
			b.errs.Add(b.s.Manifest.Doc.KeyErrorf(load.Pointer("consumers", c.Name), "consumer %s: facts %s and %s both become handler method %s; bind only one of them here, or give one a \"title\" in its directory", strconv.Quote(c.Name), prev.RoutingKey, f.RoutingKey, f.MethodName()))
			continue
		}
		seen[f.MethodName()] = f
	}
}

// importVersions copies a fact of the producer's model, with its older
// versions and the casts between them, as a fact of imp: each copy names
// the producer's package (Fact.GoPackage), so that a consumer here reads
// the producer's types of every version.
func importVersions(newest *Fact, imp *Import) *Fact {
	copies := map[*Fact]*Fact{}
	for _, v := range newest.Versions() {
		c := *v
		c.Import = imp
		copies[v] = &c
	}
	for orig, c := range copies {
		c.Older = make([]*Fact, len(orig.Older))
		for i, o := range orig.Older {
			c.Older[i] = copies[o]
		}
		if orig.Newest != nil {
			c.Newest = copies[orig.Newest]
		}
		for _, cast := range []**Cast{&c.Upcast, &c.Downcast} {
			if *cast == nil {
				continue
			}
			cc := **cast
			cc.From, cc.To = copies[cc.From], copies[cc.To]
			*cast = &cc
		}
	}
	return copies[newest]
}
