package model

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/names"
)

// Renamed is a Go name the generator chose instead of the obvious one,
// because the obvious one was already taken or empty. Schemas written by
// someone else (a vendor's) cannot be edited to avoid a collision, so
// collisions are resolved, deterministically, and `warren check` reports
// each one as a warning.
type Renamed struct {
	Doc     *load.Document
	Pointer string
	What    string // "type", "field Foo of Bar", ...
	From    string // the name it would have had ("" for none)
	To      string
}

// The rule, applied in this order (docs/GENERATED.md, "Names of generated
// identifiers"):
//   - A fact's type keeps the fact's name, and the fixed names and those of
//     the manifest's consumers, responders and sagas are taken (Topology,
//     OrderMailerHandler, NewOrderMailerConsumer). Other types are taken in the
//     order of their file path and position in the file; one whose name
//     is taken gets the name of its file in front (push.json's "User" ->
//     PushUser; skipped when the file is named like the type), then of
//     its directory (GithubUser), then of both (GithubPushUser), then the
//     first free number after it (User2).
//   - Properties of one struct, in file order: a name that is empty or
//     taken is spelled out ("+1" -> Plus1, "-1" -> Minus1), then numbered
//     (Foo, Foo2 for "foo" and "Foo").
//   - Branches of one union, in schema order: numbered (String, String2).
//   - Enum values of one type, in schema order: spelled, then numbered.

// resolveNames gives every type, field and union branch a distinct Go name.
func (b *builder) resolveNames(facts []*Fact) {
	taken := map[string]bool{names.TopologyVar: true, names.DeclareFunc: true, names.PublisherType: true, names.PublisherConstructor: true,
		names.OutboxWriterType: true, names.OutboxWriterNew: true, names.OutboxRelayNew: true}
	for _, f := range facts {
		for _, n := range []string{f.GoName, f.VarName(), f.RoutingKeyConst()} {
			taken[n] = true
		}
	}
	// The manifest's consumers, responders and sagas name what is
	// generated for them (OrderMailerHandler, NewOrderMailerConsumer):
	// a definition of a vendor's file whose name is one gives way, as it
	// does to Topology.
	for _, c := range b.s.Manifest.Consumers {
		taken[names.Handler(c.Name)], taken[names.ConsumerConstructor(c.Name)] = true, true
		if c.Batch.Batched() {
			taken[names.Batch(c.Name)] = true
		}
	}
	for _, r := range b.s.Manifest.Responders {
		taken[names.Responder(r.Name)], taken[names.ResponderConstructor(r.Name)] = true, true
	}
	for _, sg := range b.s.Manifest.Sagas {
		saga := Saga{Name: sg.Name}
		taken[saga.InterfaceName()], taken[saga.ConstructorName()] = true, true
	}
	for _, t := range b.sortedTypes() {
		if t.Fact == nil {
			b.renameType(t, taken)
		}
		b.renameFields(t)
		b.renameVariants(t)
	}
}

func (b *builder) renameType(t *Type, taken map[string]bool) {
	usable := func(n string) bool { return n != "" && !taken[n] && !names.IsReserved(n) && isExported(n) }
	name := t.GoName
	if !usable(name) {
		stem := strings.TrimSuffix(path.Base(t.Source), ".json")
		dir := path.Base(path.Dir(t.Source))
		candidates := []string{names.Type(stem) + name, names.Type(dir) + name, names.Type(dir+" "+stem) + name}
		if strings.EqualFold(names.Type(stem), name) {
			candidates = candidates[1:] // beta/owner.json's Owner: BetaOwner, not OwnerOwner
		}
		for i := 2; ; i++ {
			candidates = append(candidates, name+strconv.Itoa(i))
			if i > 10000 || usable(candidates[len(candidates)-1]) {
				break
			}
		}
		if i := slices.IndexFunc(candidates, usable); i >= 0 {
			name = candidates[i]
		}
		b.renamed(t.Source, t.Pointer, "type", t.GoName, name)
		t.GoName = name
	}
	taken[name] = true
}

func (b *builder) renameFields(t *Type) {
	taken := map[string]bool{}
	for _, m := range t.Methods() {
		taken[m] = true
	}
	if t.Extra != nil {
		taken[ExtraField] = true
	}
	for _, f := range t.Fields {
		if f.GoName != "" && !taken[f.GoName] {
			taken[f.GoName] = true
			continue
		}
		name := names.Spelled(f.JSONName)
		if name == "" || taken[name] {
			name = numbered(cmpOr(f.GoName, cmpOr(name, "Field")), in(taken))
		}
		b.renamed(f.Source, f.Pointer, fmt.Sprintf("field for property %s of %s", strconv.Quote(f.JSONName), t.GoName), f.GoName, name)
		f.GoName = name
		taken[name] = true
	}
}

func (b *builder) renameVariants(t *Type) {
	taken := map[string]bool{}
	for _, m := range t.Methods() {
		taken[m] = true
	}
	for _, v := range t.Variants {
		if taken[v.GoName] {
			name := numbered(v.GoName, in(taken))
			file, ptr, _ := strings.Cut(v.Location, "#")
			b.renamed(file, ptr, "branch of union "+t.GoName, v.GoName, name)
			v.GoName = name
		}
		taken[v.GoName] = true
	}
}

// numbered returns name followed by the first number from 2 that makes it
// free.
func numbered(name string, taken func(string) bool) string {
	for i := 2; ; i++ {
		if n := name + strconv.Itoa(i); !taken(n) {
			return n
		}
	}
}

func in(set map[string]bool) func(string) bool { return func(n string) bool { return set[n] } }

func (b *builder) renamed(file, ptr, what, from, to string) {
	doc, _ := b.s.Doc(file)
	b.renames = append(b.renames, Renamed{Doc: doc, Pointer: ptr, What: what, From: from, To: to})
}
